"""The logical sharding space: every legal way to spread one model step over N chips.

Public API (others code against this):

    Candidate                     frozen dataclass: name, degrees per kind, context form,
                                  attention kernel and its block sizes (kernels.py),
                                  .mesh_shape, .axis_names, .rules (logical -> mesh axes),
                                  .kinds, .baselines (tags), .to_dict(), Candidate.from_dict(d)
    enumerate_candidates(model, workload, n_chips) -> list[Candidate]   (deterministic order)
    baseline_shardings(model, workload, n_chips) -> dict[tag, Candidate]
    count_candidates(model, workload, n_chips) -> dict[str, int]         (by kind, for docs)
    Layout(candidate, mesh, model)  how a candidate runs on a jax Mesh: .spec(axes, shape),
                                  .constrain(x, axes), .gather(w, axes), attention cores
    make_mesh(candidate, devices) -> jax.sharding.Mesh  (devices in the given order = placement)
    function_candidates(spec, n_chips) -> list[Candidate]   (the generic path, GSPMD only)

Parallelism kinds and what each shards:

    data    CFG/batch: the batch of 2 split; weights replicated.            degree | batch
    fsdp    the batch split too, weights stored sharded (ZeRO-3) and all-gathered per layer.
            data x fsdp divides the batch (2): fsdp is "data parallel with sharded weights".
    context the token sequence split (padded to a multiple); the attention needs every key:
              allgather_kv  K/V all-gathered (MaxDiffusion's default)
              ring          K/V passed round a ring with ppermute
              ulysses       all-to-all sequence <-> heads (heads % (tensor x ulysses) == 0)
              ulysses_ring  Ulysses over axis "ulysses" x ring over axis "ring" (xDiT USP)
            weights_over_context: weights additionally stored sharded over the context axes
            (as MaxDiffusion and the official FSDP+Ulysses deployment do).
    tensor  heads (q,k,v column-, o row-parallel) and the FFN hidden dim (Megatron style).

The runtime that executes a candidate (RUNTIMES) is part of it, since the same degrees run
as another program under another runtime:
    jax           AoiZora's own (Plan.mesh / layout): the attention's heads split over tensor,
                  cross-attention on local text K/V.
    maxdiffusion  MaxDiffusion as its pyconfig resolves the rules (maxdiffusion.py): the
                  attention's heads never split over tensor (it prepends
                  [activation_self_attn_heads, None] and the cross-attention rule alike), and
                  `attention=ulysses` runs cross-attention through Ulysses too, the text K/V
                  split over the context axis.

Mesh axes appear in the order data, fsdp, context (or ring, ulysses), tensor, only those of
degree > 1 (a 1-chip candidate has the single axis data=1). The mesh's device order is the
placement and is not part of a Candidate.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

FORMS = ("none", "allgather_kv", "ring", "ulysses", "ulysses_ring")
RUNTIMES = ("jax", "maxdiffusion")
FORM_TAG = {"allgather_kv": "ag", "ring": "ring", "ulysses": "uly", "ulysses_ring": "usp"}

# Baseline tags (see baseline_shardings).
MAXDIFFUSION_DEFAULT = "maxdiffusion-default"
MAXDIFFUSION_CFG = "maxdiffusion-data2"
# MaxDiffusion's other attention forms on its CFG mesh (data 2 x context N/2), weights
# sharded over context as its logical rules do: `attention: ring`, `ulysses`, and
# `ulysses_ring` with 2 Ulysses shards innermost (its TPU7x-8 serving profile: the Ulysses
# all-to-all between the two cores of a chip, the ring across chips).
MAXDIFFUSION_RING = "maxdiffusion-data2-ring"
MAXDIFFUSION_ULYSSES = "maxdiffusion-data2-ulysses"
MAXDIFFUSION_USP = "maxdiffusion-data2-ulysses2-ring"
XDIT_USP = "xdit-usp"
WAN_OFFICIAL = "wan-fsdp-ulysses"


@dataclass(frozen=True)
class Candidate:
    name: str
    data: int = 1
    fsdp: int = 1
    context: int = 1
    form: str = "none"           # one of FORMS; "none" iff context == 1
    ulysses: int = 1             # the Ulysses part of context (context for "ulysses")
    tensor: int = 1
    weights_over_context: bool = False
    baselines: tuple[str, ...] = field(default=(), compare=False)
    # The self-attention kernel (kernels.py, chosen from the compile target): "blockwise"
    # (plain JAX; the model's q_block/kv_block, block fields 0), "splash" (TPU Pallas, with
    # its block sizes: multiples of 128 dividing the lengths one kernel call sees) or
    # "tokamax_ring" (the ring form on TPU: tokamax's ring of its splash kernel, same blocks).
    kernel: str = "blockwise"
    block_q: int = 0
    block_kv: int = 0
    block_kv_compute: int = 0
    # What bounds one call of the splash kernel at these blocks by the kernel model
    # (kernels.BOUNDS: "mxu", "vpu/eup", "hbm-dma", "step-overhead"); "" for blockwise. It
    # describes the program, it does not change it: not part of key().
    kernel_bound: str = field(default="", compare=False)
    runtime: str = "jax"         # who executes it (RUNTIMES)

    @property
    def attention_tensor(self) -> int:
        """How many ways the attention's heads are split over the tensor axis: tensor under
        AoiZora's runtime, 1 under MaxDiffusion's (its rules replicate them)."""
        return 1 if self.runtime == "maxdiffusion" else self.tensor

    @property
    def runtime_changes_program(self) -> bool:
        """Whether MaxDiffusion runs another program than AoiZora's runtime for these degrees:
        heads over tensor, or Ulysses cross-attention."""
        return self.runtime == "maxdiffusion" and (self.tensor > 1 or self.form == "ulysses")

    @property
    def ring(self) -> int:
        return self.context // self.ulysses if self.form in ("ring", "ulysses_ring") else 1

    @property
    def n_chips(self) -> int:
        return self.data * self.fsdp * self.context * self.tensor

    def context_axes(self) -> tuple[tuple[str, int], ...]:
        if self.context == 1:
            return ()
        if self.form == "ulysses_ring":
            # ring major, ulysses minor: after the Ulysses all-to-all a device holds the
            # contiguous slice of its ring rank.
            return (("ring", self.ring), ("ulysses", self.ulysses))
        return (("context", self.context),)

    def mesh_axes(self) -> tuple[tuple[str, int], ...]:
        axes = [("data", self.data), ("fsdp", self.fsdp), *self.context_axes(),
                ("tensor", self.tensor)]
        axes = tuple((n, d) for n, d in axes if d > 1)
        return axes or (("data", 1),)

    @property
    def mesh_shape(self) -> tuple[int, ...]:
        return tuple(d for _, d in self.mesh_axes())

    @property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.mesh_axes())

    @property
    def rules(self) -> dict[str, tuple[str, ...]]:
        """Logical axis -> mesh axes (see models/base.py for the logical names)."""
        present = set(self.axis_names)
        ctx = tuple(n for n, _ in self.context_axes())
        fsdp = tuple(a for a in ("fsdp",) if a in present)
        if self.weights_over_context:
            fsdp = fsdp + ctx
        tensor = ("tensor",) if "tensor" in present else ()
        return {"batch": tuple(a for a in ("data", "fsdp") if a in present), "length": ctx,
                "heads": tensor, "mlp": tensor, "fsdp": fsdp,
                "attn_heads": tensor if self.attention_tensor > 1 else (),
                "text_length": ctx if self.runtime_ulysses_cross() else ()}

    def runtime_ulysses_cross(self) -> bool:
        """Cross-attention through Ulysses, the text K/V over the context axis (MaxDiffusion's
        `attention=ulysses`)."""
        return self.runtime == "maxdiffusion" and self.form == "ulysses"

    @property
    def kinds(self) -> tuple[str, ...]:
        """The parallelism kinds used, e.g. ("data", "context:ring", "tensor")."""
        k = []
        if self.data > 1:
            k.append("data")
        if self.fsdp > 1:
            k.append("fsdp")
        if self.context > 1:
            k.append(f"context:{self.form}")
        if self.tensor > 1:
            k.append("tensor")
        return tuple(k)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["baselines"] = list(self.baselines)
        d.update(mesh_shape=list(self.mesh_shape), axis_names=list(self.axis_names),
                 rules={k: list(v) for k, v in self.rules.items()}, kinds=list(self.kinds))
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Candidate":
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        kw["baselines"] = tuple(kw.get("baselines", ()))
        return cls(**kw)

    def key(self) -> dict[str, Any]:
        """What changes the program (the name and baseline tags do not)."""
        d = dataclasses.asdict(self)
        d.pop("name"), d.pop("baselines"), d.pop("kernel_bound")
        if not self.runtime_changes_program:
            d.pop("runtime")  # the same program under both: one compile, one cache entry
        return d


def candidate_name(data, fsdp, context, form, ulysses, tensor, weights_over_context) -> str:
    parts = []
    if data > 1:
        parts.append(f"dp{data}")
    if fsdp > 1:
        parts.append(f"fsdp{fsdp}")
    if context > 1:
        if form == "ulysses_ring":
            parts.append(f"usp{ulysses}x{context // ulysses}")
        else:
            parts.append(f"{FORM_TAG[form]}{context}")
        if weights_over_context:
            parts[-1] += "w"
    if tensor > 1:
        parts.append(f"tp{tensor}")
    return "-".join(parts) or "single"


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _forms(heads_per_tensor: int, context: int) -> list[tuple[str, int]]:
    if context == 1:
        return [("none", 1)]
    forms = [("allgather_kv", 1), ("ring", 1)]
    if heads_per_tensor % context == 0:
        forms.append(("ulysses", context))
    for u in _divisors(context):
        if 1 < u < context and heads_per_tensor % u == 0:
            forms.append(("ulysses_ring", u))
    return forms


def enumerate_candidates(model, workload, n_chips: int, runtime: str = "jax"
                         ) -> list[Candidate]:
    """Every legal factorisation of n_chips into data x fsdp x context(form) x tensor, as
    `runtime` runs it.

    Legal: data x fsdp divides the batch (the CFG pairs of the call's videos: 2 for one
    video, so data <= 2; `aoizora plan --batch V` makes it 2V, data over the videos beside
    CFG); tensor divides heads, dim and ffn_dim; Ulysses degree x the attention's tensor split divides heads; the
    sequence is padded to a multiple of context (always legal; `padding()` says how much)."""
    if runtime not in RUNTIMES:
        raise ValueError(f"unknown runtime {runtime!r}: one of {', '.join(RUNTIMES)}")
    heads, dim = model.heads, model.dim
    ffn = getattr(model, "ffn_dim", dim)
    batch = workload.batch
    out = []
    for data in _divisors(math.gcd(batch, n_chips)):
        for fsdp in _divisors(math.gcd(batch // data, n_chips // data)):
            rest = n_chips // (data * fsdp)
            for tensor in _divisors(rest):
                if heads % tensor or dim % tensor or ffn % tensor:
                    continue
                context = rest // tensor
                split = 1 if runtime == "maxdiffusion" else tensor
                for form, u in _forms(heads // split, context):
                    for wc in ((False, True) if context > 1 else (False,)):
                        name = candidate_name(data, fsdp, context, form, u, tensor, wc)
                        out.append(Candidate(name, data, fsdp, context, form, u, tensor, wc,
                                             runtime=runtime))
    tags = _baseline_tags(out, heads, n_chips, batch)
    return [dataclasses.replace(c, baselines=tuple(sorted(tags.get(c.name, ()))))
            for c in out]


def _baseline_tags(cands: list[Candidate], heads: int, n: int, batch: int) -> dict[str, set]:
    """The hand-tuned deployments the paper compares against, as members of the space."""
    tags: dict[str, set] = {}
    by_name = {c.name: c for c in cands}

    def tag(name, t):
        if name in by_name:
            tags.setdefault(name, set()).add(t)

    if n > 1:
        # MaxDiffusion: context parallelism over the whole slice, weights sharded over it,
        # K/V all-gathered; its CFG recipe (v6e-8: data 2 x context 4) splits the pair first.
        tag(candidate_name(1, 1, n, "allgather_kv", 1, 1, True), MAXDIFFUSION_DEFAULT)
        if batch % 2 == 0 and n % 2 == 0 and n > 2:
            c = n // 2
            tag(candidate_name(2, 1, c, "allgather_kv", 1, 1, True), MAXDIFFUSION_CFG)
            tag(candidate_name(2, 1, c, "ring", 1, 1, True), MAXDIFFUSION_RING)
            if heads % c == 0:
                tag(candidate_name(2, 1, c, "ulysses", c, 1, True), MAXDIFFUSION_ULYSSES)
            if c > 2 and c % 2 == 0 and heads % 2 == 0:
                tag(candidate_name(2, 1, c, "ulysses_ring", 2, 1, True), MAXDIFFUSION_USP)
        # Official Wan: FSDP over all ranks + Ulysses over all ranks.
        if heads % n == 0:
            tag(candidate_name(1, 1, n, "ulysses", n, 1, True), WAN_OFFICIAL)
    # xDiT: CFG parallel first, then Ulysses x ring with the largest Ulysses degree that
    # divides the heads while a ring of >= 2 remains.
    for data in (2, 1):
        if n % data or batch % data:
            continue
        c = n // data
        us = [u for u in _divisors(c) if 1 < u < c and heads % u == 0]
        if us:
            u = max(us)
            tag(candidate_name(data, 1, c, "ulysses_ring", u, 1, False), XDIT_USP)
            break
    return tags


def baseline_shardings(model, workload, n_chips: int, runtime: str = "jax"
                       ) -> dict[str, Candidate]:
    """Baseline tag -> the candidate that implements it (absent when illegal for the slice)."""
    out = {}
    for c in enumerate_candidates(model, workload, n_chips, runtime):
        for t in c.baselines:
            out[t] = c
    return dict(sorted(out.items()))


def count_candidates(model, workload, n_chips: int) -> dict[str, int]:
    cands = enumerate_candidates(model, workload, n_chips)
    counts = {"total": len(cands)}
    for c in cands:
        for k in c.kinds or ("single",):
            counts[k] = counts.get(k, 0) + 1
    return counts


def padding(candidate: Candidate, model, workload) -> int:
    """Padded tokens the candidate adds to the sequence (0 when it divides)."""
    return (model.padded_len(workload, candidate.context, kernel=candidate.kernel)
            - model.seq_len(workload))


def layout_for(candidate: Candidate, mesh, model, *, interpret: bool = False) -> "Layout":
    """The Layout of a candidate for a model (its padding multiples under its kernel);
    interpret: run a Pallas kernel through its interpreter (CPU devices; tests)."""
    seq, shard = (model.pad_multiples(candidate.kernel) if hasattr(model, "pad_multiples")
                  else (1, 1))
    return Layout(candidate, mesh, seq, shard, interpret=interpret)


def make_mesh(candidate: Candidate, devices: Sequence):
    """A Mesh of the candidate's shape over `devices` in the given order (the placement)."""
    import numpy as np
    from jax.sharding import Mesh

    if len(devices) != candidate.n_chips:
        raise ValueError(f"candidate {candidate.name} needs {candidate.n_chips} devices, "
                         f"got {len(devices)}")
    return Mesh(np.array(list(devices), dtype=object).reshape(candidate.mesh_shape),
                candidate.axis_names)


class Layout:
    """A candidate on a concrete Mesh: logical axes -> PartitionSpecs, sharding constraints,
    and the attention core of the candidate's context form (shard_map over the mesh)."""

    def __init__(self, candidate: Candidate, mesh, seq_multiple: int = 1,
                 shard_multiple: int = 1, *, interpret: bool = False):
        from aoizora.models.base import pad_multiple

        self.candidate, self.mesh = candidate, mesh
        self.interpret = interpret  # Pallas kernels through their interpreter (CPU devices)
        self.rules = candidate.rules
        self._seq_multiple = pad_multiple(seq_multiple, shard_multiple, candidate.context)

    def seq_multiple(self) -> int:
        return self._seq_multiple

    def spec(self, axes, shape=None):
        """PartitionSpec for logical `axes`; mesh axes that do not divide a dim are dropped
        (from the minor end) so that any shape gets a legal spec."""
        from jax.sharding import PartitionSpec as P

        used: set[str] = set()
        dims = []
        for i, a in enumerate(axes):
            m = tuple(x for x in self.rules.get(a, ()) if x not in used) if a else ()
            if shape is not None:
                while m and shape[i] % math.prod(self.mesh.shape[x] for x in m):
                    m = m[:-1]
            used.update(m)
            dims.append(m if len(m) > 1 else (m[0] if m else None))
        return P(*dims)

    def sharding(self, axes, shape=None):
        from jax.sharding import NamedSharding

        return NamedSharding(self.mesh, self.spec(axes, shape))

    def constrain(self, x, axes):
        import jax

        return jax.lax.with_sharding_constraint(x, self.sharding(axes, x.shape))

    def gather(self, w, axes):
        """The weight as a layer uses it: its fsdp dims all-gathered (ZeRO-3)."""
        return self.constrain(w, tuple(None if a == "fsdp" else a for a in axes))

    # ---- attention ------------------------------------------------------------------------
    def _shard_map(self, body, q, k, v, kv_axes):
        import jax

        qs = self.spec(("batch", "length", "attn_heads", None), q.shape)
        ks = self.spec(kv_axes, k.shape)
        return jax.shard_map(body, mesh=self.mesh, in_specs=(qs, ks, ks), out_specs=qs,
                             check_vma=False)(q, k, v)

    def self_attention(self, q, k, v, *, kv_valid, q_block, kv_block):
        from functools import partial

        from aoizora.planning.kernels import SPLASH_KERNELS
        from aoizora.models import attention as A

        c = self.candidate
        blocks = dict(q_block=q_block, kv_block=kv_block)
        ctx = tuple(n for n, _ in c.context_axes())
        if c.kernel in SPLASH_KERNELS:
            return self._splash(q, k, v, kv_valid)
        if c.kernel != "blockwise":
            raise ValueError(f"{c.name}: unknown attention kernel {c.kernel!r}")
        if c.form == "none":
            body = partial(A.local, kv_valid=kv_valid, **blocks)
        elif c.form == "allgather_kv":
            body = partial(A.allgather_kv, axes=ctx, kv_valid=kv_valid, **blocks)
        elif c.form == "ring":
            body = partial(A.ring, axes=ctx, kv_valid=kv_valid, **blocks)
        elif c.form == "ulysses":
            body = partial(A.ulysses, axis=ctx[0], kv_valid=kv_valid, **blocks)
        elif c.form == "ulysses_ring":
            inner = partial(A.ring, axes=("ring",), kv_valid=kv_valid, **blocks)
            body = partial(A.ulysses, axis="ulysses", kv_valid=kv_valid, inner=inner, **blocks)
        else:
            raise ValueError(f"unknown context form {c.form!r}")
        return self._shard_map(body, q, k, v, ("batch", "length", "attn_heads", None))

    def cross_attention(self, q, k, v, *, q_block, kv_block):
        from functools import partial

        from aoizora.models import attention as A

        c = self.candidate
        if c.runtime_ulysses_cross():
            # MaxDiffusion's `attention=ulysses`: the text K/V split over context as well, an
            # all-to-all to the heads and back as in self-attention (no padded keys).
            body = partial(A.ulysses, axis=c.context_axes()[0][0], kv_valid=None,
                           q_block=q_block, kv_block=kv_block)
        else:
            body = partial(A.local, q_block=q_block, kv_block=kv_block)
        return self._shard_map(body, q, k, v, ("batch", "text_length", "attn_heads", None))

    def _splash(self, q, k, v, kv_valid):
        """The TPU Pallas splash kernel inside the candidate's context form (models/splash.py;
        TPU targets only: a Mosaic custom-call in the program); kernel "tokamax_ring":
        tokamax's ring kernel for the ring form (models/tokamax_ring.py)."""
        from functools import partial

        from aoizora.models import splash as K, tokamax_ring

        c = self.candidate
        blocks = K.Blocks(c.block_q, c.block_kv, c.block_kv_compute)
        ctx = tuple(n for n, _ in c.context_axes())
        kw = dict(kv_valid=kv_valid, blocks=blocks, interpret=self.interpret)
        if c.form == "none":
            body = partial(K.local, **kw)
        elif c.form == "allgather_kv":
            body = partial(K.allgather_kv, axes=ctx, **kw)
        elif c.form == "ring":
            ring = tokamax_ring.ring if c.kernel == tokamax_ring.KERNEL else K.ring
            body = partial(ring, axes=ctx, **kw)
        elif c.form == "ulysses":
            body = partial(K.ulysses, axis=ctx[0], **kw)
        elif c.form == "ulysses_ring":
            body = partial(K.ulysses, axis="ulysses", ring_axes=("ring",), **kw)
        else:
            raise ValueError(f"unknown context form {c.form!r}")
        return self._shard_map(body, q, k, v, ("batch", "length", "attn_heads", None))


def function_candidates(spec, n_chips: int) -> list[Candidate]:
    """Candidates for a generic FunctionSpec: data x fsdp x context x tensor with GSPMD
    propagation only (form "allgather_kv" names the context axis; the function's own code
    decides what communication the partitioner inserts). A degree is legal when every
    argument dimension carrying that logical axis divides by it."""
    import jax

    dims: dict[str, list[int]] = {}
    is_axes = lambda a: isinstance(a, tuple) and all(x is None or isinstance(x, str) for x in a)
    for arg, arg_axes in zip(spec.args, spec.arg_axes):
        for sds, axes in zip(jax.tree.leaves(arg), jax.tree.leaves(arg_axes, is_leaf=is_axes)):
            for n, a in zip(sds.shape, axes):
                if a:
                    dims.setdefault(a, []).append(n)

    def ok(degree: int, *logical: str) -> bool:
        """Some dim carries one of `logical` and every such dim divides by degree."""
        if degree == 1:
            return True
        ns = [n for a in logical for n in dims.get(a, [])]
        return bool(ns) and all(n % degree == 0 for n in ns)

    out = []
    for data in _divisors(n_chips):
        for fsdp in _divisors(n_chips // data):
            for tensor in _divisors(n_chips // (data * fsdp)):
                context = n_chips // (data * fsdp * tensor)
                if not (ok(data * fsdp, "batch") and ok(fsdp, "fsdp")
                        and ok(tensor, "heads", "mlp") and ok(context, "length")):
                    continue
                form = "allgather_kv" if context > 1 else "none"
                name = candidate_name(data, fsdp, context, form, 1, tensor, False)
                out.append(Candidate(name, data, fsdp, context, form, 1, tensor))
    return out

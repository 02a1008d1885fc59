"""What a plannable model is. Wan is the first one, not the only one.

A `ModelSpec` says, abstractly (no weights): its parameters as a pytree of
`jax.ShapeDtypeStruct`, the *logical* axes of every parameter and input dimension, and how to
apply itself under a `Layout`. A `Layout` (strategies.py builds one from a Candidate and a
Mesh) maps logical axes to mesh axes and supplies the attention core of the candidate's
context-parallel form. Logical axis names used here:

  batch   activation batch (CFG / data parallelism)     -> data, fsdp
  length  activation sequence                           -> context axes
  heads   attention heads (and q/k/v/o's head dim)      -> tensor
  mlp     FFN hidden                                    -> tensor
  fsdp    the parameter dim that is stored sharded and all-gathered before use (ZeRO-3)
  None    replicated

A `Workload` is the input size (for Wan: resolution, frames, CFG batch).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from typing import Any, Callable, Protocol, Sequence

import jax

Axes = tuple  # a tuple of logical axis names (or None), one per array dimension


class Workload(Protocol):
    name: str

    def key(self) -> dict[str, Any]:
        """Everything about the workload that changes the lowered program (for caches)."""


class Layout(Protocol):
    """How one candidate lays the program out over a mesh (see strategies.Layout)."""

    def constrain(self, x, axes: Axes): ...
    def gather(self, w, axes: Axes): ...
    def self_attention(self, q, k, v, *, kv_valid: int | None, q_block: int, kv_block: int): ...
    def cross_attention(self, q, k, v, *, q_block: int, kv_block: int): ...
    def seq_multiple(self) -> int: ...


class ModelSpec(Protocol):
    name: str

    def key(self) -> dict[str, Any]:
        """Everything about the model that changes the lowered program (for caches)."""

    def heads(self) -> int: ...
    def abstract_params(self) -> Any: ...
    def param_axes(self) -> Any: ...
    def abstract_inputs(self, workload) -> tuple: ...
    def input_axes(self, workload) -> tuple: ...
    def output_axes(self, workload) -> Axes: ...
    def seq_len(self, workload) -> int: ...
    def apply(self, params, *inputs, workload, layout: Layout): ...


class ModelConfig:
    """The ModelSpec methods every model's frozen dataclass config writes the same way, for a
    config whose module defines `init_params(cfg, key)` and `param_axes(cfg)` (wan.py,
    umt5.py, clip_image.py, wan_vae.py): its key, a changed copy, its parameters' shapes
    (traced, no weights), their logical axes and count."""

    def key(self) -> dict:
        return dataclasses.asdict(self)

    def replace(self, **kw):
        return dataclasses.replace(self, **kw)

    def _module(self):
        return sys.modules[type(self).__module__]

    def abstract_params(self):
        return jax.eval_shape(lambda: self._module().init_params(self, jax.random.key(0)))

    def param_axes(self):
        return self._module().param_axes(self)

    def param_count(self) -> int:
        return sum(math.prod(x.shape) for x in jax.tree.leaves(self.abstract_params()))


def pad_multiple(seq_multiple: int, shard_multiple: int, context: int) -> int:
    """The sequence is padded to a multiple of this: the whole sequence to `seq_multiple`,
    each of the `context` shards to `shard_multiple` (TPU tiles: 128 and 8)."""
    return math.lcm(seq_multiple, shard_multiple * context)


class LocalLayout:
    """One device, no mesh: constraints are no-ops, attention is the local blockwise core."""

    def constrain(self, x, axes):
        return x

    def gather(self, w, axes):
        return w

    def self_attention(self, q, k, v, *, kv_valid, q_block, kv_block):
        from aoizora.models import attention

        return attention.local(q, k, v, kv_valid=kv_valid, q_block=q_block, kv_block=kv_block)

    def cross_attention(self, q, k, v, *, q_block, kv_block):
        from aoizora.models import attention

        return attention.local(q, k, v, q_block=q_block, kv_block=kv_block)

    def seq_multiple(self) -> int:
        return 1


class FunctionSpec:
    """The generic path: any JAX function with abstract arguments and their logical axes.

    fn(*args) -> output; `args` is a tuple of ShapeDtypeStruct pytrees; `arg_axes` mirrors it
    with a logical-axes tuple per array; `out_axes` likewise for the output. No parameters are
    separated out: weights are ordinary arguments whose axes may say "fsdp", "heads", "mlp".
    The function's attention (if any) is whatever it computes; candidates for a FunctionSpec
    therefore use GSPMD propagation only (strategies.enumerate_function_candidates)."""

    def __init__(self, name: str, fn: Callable, args: Sequence, arg_axes: Sequence, out_axes):
        self.name, self.fn = name, fn
        self.args, self.arg_axes, self.out_axes = tuple(args), tuple(arg_axes), out_axes
        # Where the spec came from (user_model.load: the --model reference and the sha256 of
        # its file), so that editing any function of that file changes the cache key.
        self.source: dict[str, Any] | None = None

    def key(self) -> dict[str, Any]:
        shapes = jax.tree.map(lambda s: f"{s.dtype}{list(s.shape)}", self.args)
        code = getattr(self.fn, "__code__", None)
        return {"function": self.name, "args": str(shapes), "axes": str(self.arg_axes),
                "out_axes": str(self.out_axes), "source": self.source,
                "code": (code.co_filename, code.co_firstlineno, code.co_code.hex())
                if code else repr(self.fn)}

"""The TPU Pallas splash-attention kernel inside each context-parallel form.

jax.experimental.pallas.ops.tpu.splash_attention, structured as MaxDiffusion's
attention_flax.py runs it (inside `jax.shard_map`, per-device shards, mesh axes by name):

- `allgather_kv`: K/V all-gathered over the context axes, one kernel call on the local queries.
- `ulysses`: all-to-all sequence -> heads, one call on the full sequence with local heads,
  all-to-all back; with `ring_axes`, the ring below runs instead of the single call (USP).
- `ring`: K/V passed round the ring with `ppermute`; every step is one kernel call that also
  returns its logsumexp (`save_residuals=True`), and the steps are merged with an online
  softmax: o = sum_i exp(lse_i - m) o_i / sum_i exp(lse_i - m), m the running max of lse_i.
  Unrolled, so XLA can overlap a step's permute with the previous step's kernel.
- `local`: no context parallelism, one call.

Tensors are [batch, seq, heads, head_dim] at the boundary, as in attention.py; the kernel
takes [heads, seq, head_dim] per batch element (vmapped). Queries are scaled by
head_dim^-0.5 before the kernel (splash does not scale). Padded keys (global position >=
kv_valid) are masked with segment ids (padding 1, real keys and all queries 0), so the kernel
visits every block (a FullMask: no block is skipped). Lengths are multiples of 128 (the
model pads its shards); a call pads them further to multiples of its blocks (kernels.py
picks the blocks). `interpret=True` runs the kernel's Pallas interpreter
(CPU tests of the numerics); otherwise it lowers only for TPU (a Mosaic `tpu_custom_call`).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax import lax


@dataclass(frozen=True)
class Blocks:
    q: int
    kv: int
    kv_compute: int


def _kernel(heads: int, sq: int, sk: int, blocks: Blocks, residuals: bool, interpret: bool):
    from jax.experimental.pallas.ops.tpu import splash_attention as sa

    if sq % blocks.q or sk % blocks.kv or blocks.kv % blocks.kv_compute:
        raise ValueError(f"splash blocks q {blocks.q} kv {blocks.kv}/{blocks.kv_compute} do not "
                         f"tile lengths q {sq}, kv {sk}")
    mask = sa.MultiHeadMask([sa.FullMask((sq, sk)) for _ in range(heads)])
    sizes = sa.BlockSizes(block_q=blocks.q, block_kv=blocks.kv,
                          block_kv_compute=blocks.kv_compute)
    return sa.make_splash_mha(mask, head_shards=1, q_seq_shards=1, block_sizes=sizes,
                              save_residuals=residuals, interpret=interpret)


def tiling(sq: int, sk: int, blocks: Blocks) -> tuple[Blocks, int, int]:
    """The blocks a call runs with and its lengths padded to multiples of them (the rule
    kernels.py prices: kernels.clamp_blocks)."""
    from aoizora.planning.kernels import clamp_blocks, round_up

    bq, bkv, bkc = clamp_blocks(sq, sk, (blocks.q, blocks.kv, blocks.kv_compute))
    return Blocks(bq, bkv, bkc), round_up(sq, bq), round_up(sk, bkv)


def _pad_seq(x, n: int):
    return x if x.shape[2] == n else jnp.pad(x, ((0, 0), (0, 0), (0, n - x.shape[2]), (0, 0)))


def call(q, k, v, *, blocks: Blocks, kv_start=0, kv_valid: int | None = None,
         residuals: bool = False, interpret: bool = False):
    """One kernel call: q [B,H,Sq,D] (already scaled), k, v [B,H,Sk,D] -> o [B,H,Sq,D], and
    with `residuals` also lse [B,H,Sq] (float32). Keys at kv_start + i >= kv_valid are masked
    (kv_start may be traced). Lengths are padded up to multiples of the blocks (padded keys
    masked, padded query rows dropped), as MaxDiffusion pads for its flash kernel."""
    from jax.experimental.pallas.ops.tpu import splash_attention as sa

    b, h, sq, d = q.shape
    sk = k.shape[2]
    used, sq_pad, sk_pad = tiling(sq, sk, blocks)
    q, k, v = _pad_seq(q, sq_pad), _pad_seq(k, sk_pad), _pad_seq(v, sk_pad)
    kernel = _kernel(h, sq_pad, sk_pad, used, residuals, interpret)
    if kv_valid is None and sk_pad == sk:
        out = jax.vmap(kernel)(q, k, v)
    else:
        pos = jnp.arange(sk_pad)
        padding = pos >= sk
        if kv_valid is not None:
            padding = padding | (kv_start + pos >= kv_valid)
        seg = sa.SegmentIds(q=jnp.zeros((sq_pad,), jnp.int32), kv=padding.astype(jnp.int32))
        out = jax.vmap(lambda q1, k1, v1: kernel(q1, k1, v1, segment_ids=seg))(q, k, v)
    if sq_pad == sq:
        return out
    if residuals:
        o, (lse,) = out
        return o[:, :, :sq], (lse[:, :, :sq],)
    return out[:, :, :sq]


def _heads_major(x):
    return x.transpose(0, 2, 1, 3)


def _scaled(q):
    return (q * q.shape[-1] ** -0.5).astype(q.dtype)


def local(q, k, v, *, kv_valid, blocks: Blocks, interpret: bool = False):
    """One call over all keys on this device."""
    if kv_valid is not None and kv_valid >= k.shape[1]:
        kv_valid = None
    o = call(_heads_major(_scaled(q)), _heads_major(k), _heads_major(v), blocks=blocks,
             kv_valid=kv_valid, interpret=interpret)
    return _heads_major(o)


def allgather_kv(q, k, v, *, axes, kv_valid, blocks: Blocks, interpret: bool = False):
    """K/V all-gathered along the sequence over `axes`; the local queries attend to all."""
    k = lax.all_gather(k, axes, axis=1, tiled=True)
    v = lax.all_gather(v, axes, axis=1, tiled=True)
    return local(q, k, v, kv_valid=kv_valid, blocks=blocks, interpret=interpret)


def merge(state, o, lse):
    """Folds one ring step's normalised output o [B,H,Sq,D] and logsumexp lse [B,H,Sq] into
    the online-softmax state (m, l, acc) (None before the first step)."""
    o = o.astype(jnp.float32)
    if state is None:
        return lse, jnp.ones_like(lse), o
    m, l, acc = state
    m_new = jnp.maximum(m, lse)
    a, b = jnp.exp(m - m_new), jnp.exp(lse - m_new)
    return m_new, l * a + b, acc * a[..., None] + o * b[..., None]


def finish(state, dtype):
    _, l, acc = state
    return (acc / l[..., None]).astype(dtype)


def ring(q, k, v, *, axes, kv_valid, blocks: Blocks, interpret: bool = False, step=None):
    """Ring attention: K/V travel one step round the ring (`axes`) per kernel call; `step`
    replaces the kernel call (q, k, v, kv_start, kv_valid) -> (o, lse) in tests."""
    n = 1
    me = 0
    for a in axes:
        n, me = n * lax.axis_size(a), me * lax.axis_size(a) + lax.axis_index(a)
    sk = k.shape[1]
    if kv_valid is not None and kv_valid >= n * sk:
        kv_valid = None
    if step is None:
        def step(qh, kh, vh, kv_start, valid):
            o, (lse,) = call(qh, kh, vh, blocks=blocks, kv_start=kv_start, kv_valid=valid,
                             residuals=True, interpret=interpret)
            return o, lse
    perm = [(i, (i + 1) % n) for i in range(n)]
    qh, kh, vh = _heads_major(_scaled(q)), _heads_major(k), _heads_major(v)
    state = None
    for s in range(n):
        src = (me - s) % n
        state = merge(state, *step(qh, kh, vh, src * sk, kv_valid))
        if s + 1 < n:
            kh = lax.ppermute(kh, axes, perm)
            vh = lax.ppermute(vh, axes, perm)
    return _heads_major(finish(state, q.dtype))


def ulysses(q, k, v, *, axis, kv_valid, blocks: Blocks, ring_axes=(), interpret: bool = False):
    """All-to-all heads <-> sequence over `axis`, the kernel on the full (with ring_axes: the
    ring-local) sequence with this device's heads, all-to-all back."""
    def to_heads(x):
        return lax.all_to_all(x, axis, split_axis=2, concat_axis=1, tiled=True)

    q, k, v = to_heads(q), to_heads(k), to_heads(v)
    if ring_axes:
        o = ring(q, k, v, axes=ring_axes, kv_valid=kv_valid, blocks=blocks, interpret=interpret)
    else:
        o = local(q, k, v, kv_valid=kv_valid, blocks=blocks, interpret=interpret)
    return lax.all_to_all(o, axis, split_axis=1, concat_axis=2, tiled=True)


def reference_step(q, k, v, kv_start, kv_valid):
    """A pure-JAX stand-in for one residual kernel call (tests): q [B,H,Sq,D] scaled, k, v
    [B,H,Sk,D] -> (o, lse), keys at kv_start + i >= kv_valid masked."""
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k, preferred_element_type=jnp.float32)
    if kv_valid is not None:
        pos = kv_start + jnp.arange(k.shape[2])
        s = jnp.where(pos < kv_valid, s, -0.7 * jnp.finfo(jnp.float32).max)
    lse = jax.nn.logsumexp(s, axis=-1)
    p = jnp.exp(s - lse[..., None])
    return jnp.einsum("bhqk,bhkd->bhqd", p, v.astype(jnp.float32)).astype(q.dtype), lse

"""tokamax's ring-attention kernel: what MaxDiffusion runs for `attention=tokamax_ring`.

tokamax (pinned in pyproject.toml, 0.0.12) ships ring attention as
`tokamax._src.ops.experimental.tpu.splash_attention.ring_attention_kernel.make_ring_attention`:
inside `jax.shard_map`, K/V (and the kv segment ids) travel round the named ring axis with
`ppermute`, one forward call of tokamax's splash kernel per step (Pallas, a Mosaic
`tpu_custom_call` named splash_mha_fwd[_segmented]_residuals, as jax's kernel is), the steps
merged by an online softmax inside tokamax (a `lax.scan`, unrolled). MaxDiffusion's
attention_flax.py builds it as here: a FullMask over the local query and key lengths, the
SplashConfig from its flash_block_sizes with fuse_reciprocal=True and use_base2_exp=False,
vmapped over the batch.

    ring(q, k, v, *, axes, kv_valid, blocks, interpret=False) -> o

q, k, v are this device's [batch, seq, heads, head_dim] shards (as models/splash.py takes
them); `axes` is the one mesh axis of the ring. Queries are scaled by head_dim^-0.5 (the
kernel does not scale). Keys at global position >= kv_valid, and the keys a call pads to a
multiple of block_kv, are masked by segment ids (padding 1), which tokamax rotates with K/V
(none when nothing is padded); no block is skipped, so the kernel costs what jax's splash
kernel costs on the same shapes (kernels.py prices both alike). `interpret=True` runs the
Pallas interpreter (CPU tests); otherwise it lowers only for TPU. Forward only: no residuals
for a backward pass are kept. Raises ValueError for a ring over more than one mesh axis.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from aoizora.models import splash

KERNEL = "tokamax_ring"    # kernels.py's name for it, and MaxDiffusion's


def _ring_kernel(sq: int, sk: int, blocks: splash.Blocks, axis: str, interpret: bool):
    from tokamax._src.ops.experimental.tpu.splash_attention import (
        ring_attention_kernel as ring_lib,
        splash_attention_kernel as splash_lib,
        splash_attention_mask as mask_lib,
    )

    config = splash_lib.SplashConfig(
        block_q=blocks.q, block_kv=blocks.kv, block_kv_compute=blocks.kv_compute,
        fuse_reciprocal=True, use_base2_exp=False, interpret=interpret)
    return ring_lib.make_ring_attention(
        mask_lib.FullMask(_shape=(sq, sk)), config=config, is_mqa=False,
        save_residuals=False, ring_axis=axis)


def _heads_major(x, length: int):
    """[B, S, H, D] -> [B, H, length, D], the sequence zero-padded to `length`."""
    x = x.transpose(0, 2, 1, 3)
    return jnp.pad(x, ((0, 0), (0, 0), (0, length - x.shape[2]), (0, 0)))


def ring(q, k, v, *, axes, kv_valid, blocks: splash.Blocks, interpret: bool = False):
    """Ring attention over the one mesh axis in `axes` with tokamax's kernel; the lengths
    padded to the blocks (splash.tiling) and the padding masked, as models/splash.py does."""
    from tokamax._src.ops.experimental.tpu.splash_attention import base

    if len(axes) != 1:
        raise ValueError(f"tokamax's ring kernel runs on one mesh axis, got {axes}")
    (axis,) = axes
    n, me = lax.axis_size(axis), lax.axis_index(axis)
    sq, d = q.shape[1], q.shape[3]
    sk = k.shape[1]
    used, sq_pad, sk_pad = splash.tiling(sq, sk, blocks)
    qh = _heads_major((q * d ** -0.5).astype(q.dtype), sq_pad)
    kh, vh = _heads_major(k, sk_pad), _heads_major(v, sk_pad)
    if kv_valid is not None and kv_valid >= n * sk:
        kv_valid = None
    segments = None  # nothing padded: no segment ids to rotate
    if kv_valid is not None or sk_pad != sk:
        pos = jnp.arange(sk_pad)
        padding = pos >= sk
        if kv_valid is not None:
            padding = padding | (me * sk + pos >= kv_valid)
        segments = base.SegmentIds(q=jnp.zeros((sq_pad,), jnp.int32),
                                   kv=padding.astype(jnp.int32))
    kernel = _ring_kernel(sq_pad, sk_pad, used, axis, interpret)
    o = jax.vmap(kernel, in_axes=(0, 0, 0, None))(qh, kh, vh, segments)
    return o[:, :, :sq].transpose(0, 2, 1, 3)

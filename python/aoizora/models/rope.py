"""Wan's 3D rotary position embedding: the head dim's complex pairs split over time, height
and width (44/42/42 real dims at head_dim 128), theta 10000, positions on the latent grid
after patching (Wan-Video/Wan2.1 wan/modules/model.py `rope_params`, `rope_apply`).

    rope_tables(cfg, grid, padded) -> cos, sin [padded, head_dim/2] (padded rows: identity)
    apply_rope(x [B,S,H,D], cos, sin) -> x rotated pairwise (x[2i], x[2i+1])
"""

from __future__ import annotations

import math

import jax.numpy as jnp
from jax import lax


def rope_tables(cfg, grid: tuple[int, int, int], padded: int, theta: float = 10000.0):
    """cos, sin [S_padded, head_dim/2] of Wan's 3D RoPE: the head_dim/2 complex pairs split
    c - 2(c//3) / c//3 / c//3 over time / height / width (44/42/42 real dims at 128)."""
    c = cfg.head_dim // 2
    split = (c - 2 * (c // 3), c // 3, c // 3)
    dims = (cfg.head_dim - 4 * (cfg.head_dim // 6), 2 * (cfg.head_dim // 6),
            2 * (cfg.head_dim // 6))
    # Per-axis tables (a few hundred rows) broadcast over the grid, behind an optimization
    # barrier: a full [S, D/2] table from iota is otherwise constant-folded by XLA,
    # elementwise on the host, at every compile (30 s of a 55 s compile at 720p 81 frames).
    cos, sin = [], []
    for axis, (n, dim) in enumerate(zip(split, dims)):
        inv = 1.0 / theta ** (jnp.arange(0, dim, 2, dtype=jnp.float32)[:n] / dim)
        ang = jnp.arange(grid[axis], dtype=jnp.float32)[:, None] * inv[None]
        shape = [1, 1, 1, n]
        shape[axis] = grid[axis]
        ca, sa = lax.optimization_barrier((jnp.cos(ang), jnp.sin(ang)))
        cos.append(jnp.broadcast_to(ca.reshape(shape), (*grid, n)))
        sin.append(jnp.broadcast_to(sa.reshape(shape), (*grid, n)))
    s = math.prod(grid)
    pad = ((0, padded - s), (0, 0))
    return (jnp.pad(jnp.concatenate(cos, -1).reshape(s, c), pad, constant_values=1.0),
            jnp.pad(jnp.concatenate(sin, -1).reshape(s, c), pad))


def apply_rope(x, cos, sin):
    """x [B,S,H,D] rotated pairwise (x[2i], x[2i+1]) by the angles of its position."""
    b, s, h, d = x.shape
    xf = x.astype(jnp.float32).reshape(b, s, h, d // 2, 2)
    x0, x1 = xf[..., 0], xf[..., 1]
    c, sn = cos[None, :, None, :], sin[None, :, None, :]
    out = jnp.stack([x0 * c - x1 * sn, x0 * sn + x1 * c], axis=-1)
    return out.reshape(b, s, h, d).astype(x.dtype)

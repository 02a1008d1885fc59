"""The small layers Wan's modules share: a Linear's parameters and its application under a
Layout, LayerNorm and RMSNorm computed in float32 (as Wan and diffusers do).

    linear(key, n_in, n_out, dtype) -> {"w": [n_in, n_out], "b": [n_out]}
    dense(layout, p, x, w_axes, b_axes) -> x @ w + b, the weight gathered as the layout says
    layer_norm(x, eps, w=None, b=None) -> float32 (affine when w, b are given)
    rms_norm(x, w, eps) -> x's dtype
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax


def linear(key, n_in: int, n_out: int, dtype):
    w = jax.random.normal(key, (n_in, n_out), jnp.float32) * n_in ** -0.5
    return {"w": w.astype(dtype), "b": jnp.zeros((n_out,), dtype)}


def norm_affine(d: int, dtype):
    """A LayerNorm's elementwise affine: weight 1, bias 0."""
    return {"w": jnp.ones((d,), dtype), "b": jnp.zeros((d,), dtype)}


def dense(layout, p, x, w_axes, b_axes):
    w = layout.gather(p["w"], w_axes)
    y = jnp.einsum("...i,io->...o", x, w.astype(x.dtype))
    return y + p["b"].astype(x.dtype)


def layer_norm(x, eps, w=None, b=None):
    xf = x.astype(jnp.float32)
    mu = xf.mean(-1, keepdims=True)
    var = jnp.square(xf - mu).mean(-1, keepdims=True)
    y = (xf - mu) * lax.rsqrt(var + eps)
    if w is not None:
        y = y * w.astype(jnp.float32) + b.astype(jnp.float32)
    return y


def rms_norm(x, w, eps):
    xf = x.astype(jnp.float32)
    y = xf * lax.rsqrt(jnp.square(xf).mean(-1, keepdims=True) + eps)
    return (y * w.astype(jnp.float32)).astype(x.dtype)

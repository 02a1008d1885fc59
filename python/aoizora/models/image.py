"""Image conditioning of Wan 2.1 I2V (Wan-Video/Wan2.1 wan/modules/model.py `MLPProj` and
`WanI2VCrossAttention`; diffusers `WanImageEmbedding` and `add_k_proj`/`add_v_proj`).

    CLIP image tokens [B, 257, 1280] (ViT-H/14 penultimate layer)
      --LayerNorm(1280) -> Linear(1280,1280) -> GELU -> Linear(1280,d) -> LayerNorm(d)-->
    image context [B, 257, d]
    every block's cross-attention: the same queries attend the text keys and, separately
    (own softmax), the image keys k_img = RMSNorm(Linear(d,d)) and values v_img = Linear(d,d);
    the two outputs are summed before the output projection.

The image's own latents enter elsewhere: concatenated to the noise as 20 more input
channels (in_dim 36), which is only the patch embedding's input width (wan.py).
LayerNorms here are affine with eps 1e-5 (torch's default), computed in float32.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from aoizora.models.layers import dense, layer_norm, linear, norm_affine

IMAGE_NORM_EPS = 1e-5


def embedding_params(key, image_dim: int, d: int, dtype):
    k1, k2 = jax.random.split(key)
    return {"norm1": norm_affine(image_dim, dtype), "l1": linear(k1, image_dim, image_dim, dtype),
            "l2": linear(k2, image_dim, d, dtype), "norm2": norm_affine(d, dtype)}


def embedding_axes():
    return {"norm1": {"w": (None,), "b": (None,)},
            "l1": {"w": ("fsdp", None), "b": (None,)},
            "l2": {"w": ("fsdp", None), "b": (None,)},
            "norm2": {"w": (None,), "b": (None,)}}


def cross_attention_params(key, d: int, dtype):
    """The extra parameters of one block's cross-attention: image K/V with bias, RMSNorm k."""
    kk, kv = jax.random.split(key)
    return {"k_img": linear(kk, d, d, dtype), "v_img": linear(kv, d, d, dtype),
            "norm_k_img": jnp.ones((d,), dtype)}


def cross_attention_axes():
    return {"k_img": {"w": ("fsdp", "heads"), "b": ("heads",)},
            "v_img": {"w": ("fsdp", "heads"), "b": ("heads",)},
            "norm_k_img": ("heads",)}


def embed(layout, p, image, dtype):
    """CLIP image tokens [B, L, image_dim] -> image context [B, L, d] in `dtype`."""
    h = layer_norm(image, IMAGE_NORM_EPS, p["norm1"]["w"], p["norm1"]["b"]).astype(dtype)
    h = dense(layout, p["l1"], h, ("fsdp", None), (None,))
    h = dense(layout, p["l2"], jax.nn.gelu(h, approximate=False), ("fsdp", None), (None,))
    h = layer_norm(h, IMAGE_NORM_EPS, p["norm2"]["w"], p["norm2"]["b"]).astype(dtype)
    return layout.constrain(h, ("batch", None, None))

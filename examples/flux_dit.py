"""A small image DiT in the style of Flux (double-stream MMDiT blocks), planned by AoiZora as
your own model:

    aoizora plan --model examples/flux_dit.py:make_spec --topology v5e:2x4 --report r.html

`make_spec()` returns an `aoizora.models.base.FunctionSpec`: the forward function, its
abstract arguments (jax.ShapeDtypeStruct: no weights are allocated) and the *logical* axes
of every array. The planner tries every data x fsdp x context x tensor sharding the axes
allow (GSPMD propagation places the collectives), compiles the best for the slice, ranks
every placement and simulates the best pairs. Nothing here imports the planner.

The model: image latents (patchified) and text tokens each have their own weights
(projections, MLP, adaLN modulation from the timestep) but attend *jointly*: their queries,
keys and values are concatenated into one sequence, as in Flux and SD3. The blocks are
stacked on a leading layer axis and run under `lax.scan`, so the compiled program holds one
block in a loop (the report then shows per-block figures and one block's timeline).

Logical axes (models/base.py): batch (the CFG pair), length (image tokens: context
parallelism), heads and mlp (tensor parallelism), fsdp (weights stored sharded and gathered
before use), layers (the stacked blocks, never sharded), None (replicated).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from aoizora.models.base import FunctionSpec


@dataclass(frozen=True)
class FluxConfig:
    dim: int = 256            # model width
    heads: int = 8            # attention heads (head dim = dim / heads)
    mlp: int = 1024           # MLP hidden width
    layers: int = 4           # double-stream blocks
    image_tokens: int = 256   # a 16 x 16 patch grid (256 x 256 pixels, VAE 8, patch 2)
    image_channels: int = 64  # 16 latent channels x a 2 x 2 patch
    text_tokens: int = 64
    text_dim: int = 256
    time_dim: int = 256       # sinusoidal timestep embedding
    batch: int = 2            # classifier-free guidance as a batch
    dtype: str = "bfloat16"

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads


def _stream(c: FluxConfig, L: int) -> dict:
    """One stream's per-block weights (image or text), stacked over the L blocks."""
    D, H, K, M = c.dim, c.heads, c.head_dim, c.mlp
    return {"mod": (L, D, 6 * D), "q": (L, D, H, K), "k": (L, D, H, K), "v": (L, D, H, K),
            "o": (L, H, K, D), "mlp_in": (L, D, M), "mlp_out": (L, M, D)}


_STREAM_AXES = {"mod": ("layers", "fsdp", None), "q": ("layers", "fsdp", "heads", None),
                "k": ("layers", "fsdp", "heads", None), "v": ("layers", "fsdp", "heads", None),
                "o": ("layers", "heads", None, "fsdp"), "mlp_in": ("layers", "fsdp", "mlp"),
                "mlp_out": ("layers", "mlp", "fsdp")}


def param_shapes(c: FluxConfig) -> dict:
    D = c.dim
    return {"img_in": (c.image_channels, D), "txt_in": (c.text_dim, D),
            "time_in": (c.time_dim, D), "time_out": (D, D),
            "blocks": {"img": _stream(c, c.layers), "txt": _stream(c, c.layers)},
            "final_mod": (D, 2 * D), "final_out": (D, c.image_channels)}


def param_axes() -> dict:
    return {"img_in": (None, "fsdp"), "txt_in": (None, "fsdp"), "time_in": (None, "fsdp"),
            "time_out": ("fsdp", None), "blocks": {"img": _STREAM_AXES, "txt": _STREAM_AXES},
            "final_mod": ("fsdp", None), "final_out": ("fsdp", None)}


def _norm(x):
    """LayerNorm without affine parameters, in float32."""
    x32 = x.astype(jnp.float32)
    mean = x32.mean(-1, keepdims=True)
    var = ((x32 - mean) ** 2).mean(-1, keepdims=True)
    return ((x32 - mean) * jax.lax.rsqrt(var + 1e-6)).astype(x.dtype)


def _timestep(t, dim: int):
    half = dim // 2
    freqs = jnp.exp(-jnp.log(10000.0) * jnp.arange(half, dtype=jnp.float32) / half)
    angles = t.astype(jnp.float32)[:, None] * 1000.0 * freqs[None]
    return jnp.concatenate([jnp.cos(angles), jnp.sin(angles)], -1)


def _qkv(w, x):
    """(B, S, D) -> q, k, v (B, S, H, K), after adaLN."""
    return tuple(jnp.einsum("bsd,dhk->bshk", x, w[n]) for n in ("q", "k", "v"))


def _block(carry, w, *, vec):
    """One double-stream block: each stream modulated by its own adaLN, joint attention over
    [text; image], each stream's output projection and gated MLP."""
    img, txt = carry
    n_txt = txt.shape[1]
    mods = {}
    for s in ("img", "txt"):
        m = jnp.einsum("bd,de->be", vec, w[s]["mod"])[:, None, :]
        mods[s] = jnp.split(m, 6, axis=-1)  # shift, scale, gate (attention), same (MLP)
    streams = {"img": img, "txt": txt}
    qkv = {}
    for s, x in streams.items():
        sh, sc, _, _, _, _ = mods[s]
        qkv[s] = _qkv(w[s], _norm(x) * (1 + sc) + sh)
    q, k, v = (jnp.concatenate([qkv["txt"][i], qkv["img"][i]], axis=1) for i in range(3))
    att = jax.nn.dot_product_attention(q, k, v)  # (B, S_txt + S_img, H, K), bidirectional
    parts = {"txt": att[:, :n_txt], "img": att[:, n_txt:]}
    out = {}
    for s, x in streams.items():
        _, _, gate, sh2, sc2, gate2 = mods[s]
        x = x + gate * jnp.einsum("bshk,hkd->bsd", parts[s], w[s]["o"])
        h = jax.nn.gelu(jnp.einsum("bsd,dm->bsm", _norm(x) * (1 + sc2) + sh2, w[s]["mlp_in"]),
                        approximate=True)
        out[s] = x + gate2 * jnp.einsum("bsm,md->bsd", h, w[s]["mlp_out"])
    return (out["img"], out["txt"]), None


def forward(params, img, txt, t, *, time_dim: int = 256):
    """Image latents (B, N, C), text tokens (B, T, text_dim), timesteps (B,) -> the
    predicted velocity (B, N, C)."""
    vec = jax.nn.silu(_timestep(t, time_dim).astype(img.dtype) @ params["time_in"])
    vec = jax.nn.silu(vec @ params["time_out"])
    x = img @ params["img_in"]
    y = txt @ params["txt_in"]

    def step(carry, w):
        return _block(carry, w, vec=vec)

    (x, _), _ = jax.lax.scan(step, (x, y), params["blocks"])
    shift, scale = jnp.split((vec @ params["final_mod"])[:, None, :], 2, axis=-1)
    return (_norm(x) * (1 + scale) + shift) @ params["final_out"]


def make_spec(config: FluxConfig | None = None) -> FunctionSpec:
    """The FunctionSpec AoiZora plans: forward over abstract weights and inputs."""
    c = config or FluxConfig()
    dt = jnp.dtype(c.dtype)
    is_shape = lambda s: isinstance(s, tuple) and all(isinstance(n, int) for n in s)  # noqa: E731
    params = jax.tree.map(lambda s: jax.ShapeDtypeStruct(s, dt), param_shapes(c),
                          is_leaf=is_shape)
    args = (params,
            jax.ShapeDtypeStruct((c.batch, c.image_tokens, c.image_channels), dt),
            jax.ShapeDtypeStruct((c.batch, c.text_tokens, c.text_dim), dt),
            jax.ShapeDtypeStruct((c.batch,), jnp.float32))
    axes = (param_axes(), ("batch", "length", None), ("batch", None, None), ("batch",))

    def fn(params, img, txt, t):
        return forward(params, img, txt, t, time_dim=c.time_dim)

    return FunctionSpec("flux-dit-small", fn, args, axes, ("batch", "length", None))

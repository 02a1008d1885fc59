"""Wan 2.1 / 2.2 video DiT in JAX (REFERENCE.md §3; Wan-Video/Wan2.1 wan/modules/model.py,
diffusers WanTransformer3DModel).

    x [B,C,F',H',W'] --patch (1,2,2)--> tokens [B,S,d] (+ padding to the layout's multiple)
    t [B] (or [B,S] per token) --sinusoid 256--> MLP --> e [B,d] --SiLU,Linear(d,6d)--> e0
    context [B,512,4096] --Linear,GELU(tanh),Linear--> [B,512,d]
    block (x layers): LayerNorm+mod -> self-attn (RMSNorm q,k over d; 3D RoPE 44/42/42) -> gate
                      affine LayerNorm -> cross-attn (RMSNorm q,k) -> residual
                      LayerNorm+mod -> Linear(d,f) GELU(tanh) Linear(f,d) -> gate
    head: LayerNorm + mod [1,2,d] -> Linear(d, out*4) -> unpatchify -> [B,out,F',H',W']
    CFG: B = 2 (conditional, unconditional), combined as u + g (c - u) when `guidance` is set;
         B = 2V for V videos per call, MaxDiffusion's order: the V prompts, then the V
         negatives (c = out[:V], u = out[V:]), combined into [V,out,F',H',W'].

Variants by config: `in_dim` 36 (I2V: 16 noise + 4 mask + 16 image latents channels),
`image_dim` (Wan 2.1 I2V: CLIP image tokens and image K/V, models/image.py), `per_token_time`
(Wan 2.2 TI2V-5B: one timestep per token, so e [B,S,d], e0 [B,S,6,d]), `vae_stride`
(the workload's latent grid, models/video.py). Two experts (Wan 2.2 A14B) are models/experts.py.

`WanConfig` is a model (a preset, with `blocks(n)` as the N-block proxy that keeps every
shape); `Video` is a workload. Parameters are a pytree; `abstract_params()` makes it with
`jax.eval_shape` (nothing is allocated), `init_params(key)` allocates (tiny configs only).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax import lax

from aoizora.models import image
from aoizora.models.base import LocalLayout, ModelConfig, pad_multiple
from aoizora.models.layers import dense as _dense
from aoizora.models.layers import layer_norm as _layer_norm
from aoizora.models.layers import linear as _linear
from aoizora.models.layers import norm_affine
from aoizora.models.layers import rms_norm as _rms_norm
from aoizora.models.rope import apply_rope, rope_tables  # noqa: F401 (wan.rope_tables)
from aoizora.models.video import RESOLUTIONS, TINY_VIDEO, VAE_STRIDE, Video, video  # noqa: F401

WAN21_SIZES = tuple(RESOLUTIONS.items())  # (name, (height, width)): 480p 832x480, 720p 1280x720


@dataclass(frozen=True)
class WanConfig(ModelConfig):
    name: str
    dim: int
    ffn_dim: int
    heads: int
    layers: int
    in_dim: int = 16
    out_dim: int = 16
    text_dim: int = 4096
    text_len: int = 512
    freq_dim: int = 256
    patch: tuple[int, int, int] = (1, 2, 2)
    eps: float = 1e-6
    dtype: str = "bfloat16"
    q_block: int = 1024      # attention query block (flash-style)
    kv_block: int = 1024     # attention key/value block
    seq_multiple: int = 128  # the token sequence is padded to a multiple of this,
    shard_multiple: int = 8  # and each context shard to a multiple of this (splash: 128)
    scan: bool = True        # blocks under lax.scan (one while loop) or unrolled
    image_dim: int | None = None  # CLIP image token width (Wan 2.1 I2V: 1280); None: no image
    image_len: int = 257          # CLIP image tokens (ViT-H/14: 16x16 patches + class token)
    per_token_time: bool = False  # one timestep per token, t [B,S] (Wan 2.2 TI2V-5B)
    vae_stride: tuple[int, int, int] = VAE_STRIDE  # the VAE this model's latents come from
    sizes: tuple = WAN21_SIZES    # resolutions it is made for: (name, (height, width)), ...
    workloads: tuple = ()         # its default workloads: (resolution, frames), ...
    fps: int = 16                 # frame rate of its videos (metadata: 81 frames = 5 s)

    # ---- ModelSpec --------------------------------------------------------------------
    def blocks(self, n: int) -> "WanConfig":
        """The n-block proxy: every shape kept, only n transformer blocks."""
        return dataclasses.replace(self, name=f"{self.name.split('@')[0]}@{n}blocks", layers=n)

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads

    def video(self, resolution: str, frames: int, batch: int = 2) -> Video:
        """The workload `resolution` (one of this model's sizes) at `frames` frames, on this
        model's latent grid. Raises ValueError naming the sizes it has."""
        return video(resolution, frames, batch, sizes=dict(self.sizes),
                     vae_stride=self.vae_stride)

    def default_workloads(self) -> list[Video]:
        return [self.video(r, f) for r, f in self.workloads]

    def seq_len(self, workload: Video) -> int:
        f, h, w = workload.latent_shape()
        pt, ph, pw = self.patch
        return (f // pt) * (h // ph) * (w // pw)

    def pad_multiples(self, kernel: str = "blockwise") -> tuple[int, int]:
        """(whole sequence, per context shard) under an attention kernel (kernels.py): the
        splash kernel tiles shards by 128."""
        from aoizora.planning.kernels import pad_multiple_for

        return self.seq_multiple, pad_multiple_for(kernel, self.shard_multiple)

    def padded_len(self, workload: Video, context: int = 1, kernel: str = "blockwise") -> int:
        """The sequence length after padding for `context`-way sequence sharding."""
        m = pad_multiple(*self.pad_multiples(kernel), context)
        return -(-self.seq_len(workload) // m) * m




    def abstract_inputs(self, workload: Video):
        dt = jnp.dtype(self.dtype)
        f, h, w = workload.latent_shape()
        b = workload.batch
        t = (b, self.seq_len(workload)) if self.per_token_time else (b,)
        out = (jax.ShapeDtypeStruct((b, self.in_dim, f, h, w), dt),
               jax.ShapeDtypeStruct(t, jnp.float32),
               jax.ShapeDtypeStruct((b, self.text_len, self.text_dim), dt))
        if self.image_dim:
            out += (jax.ShapeDtypeStruct((b, self.image_len, self.image_dim), dt),)
        return out

    def input_axes(self, workload: Video):
        t = ("batch", "length") if self.per_token_time else ("batch",)
        out = (("batch", None, None, None, None), t, ("batch", None, None))
        return out + ((("batch", None, None),) if self.image_dim else ())

    def output_axes(self, workload: Video):
        # one guided video: [out,F',H',W'], as before batches (its programs and cache keys
        # unchanged); V > 1 guided videos keep their batch axis
        if workload.guidance is not None and workload.batch == 2:
            return (None, None, None, None)
        return ("batch", None, None, None, None)

    def output_shape(self, workload: Video) -> tuple:
        """The shape apply returns: output_axes' dims (the guided video(s) of the call)."""
        f, h, w = workload.latent_shape()
        lead = (() if len(self.output_axes(workload)) == 4
                else ((workload.batch // 2 if workload.guidance is not None
                       else workload.batch),))
        return lead + (self.out_dim, f, h, w)

    def apply(self, params, x, t, context, image_tokens=None, *, workload: Video, layout=None):
        return forward(self, params, x, t, context, image_tokens, workload=workload,
                       layout=layout)


# ---- parameters ----------------------------------------------------------------------------

def _attn(key, d, kv_in, dtype):
    kq, kk, kv, ko = jax.random.split(key, 4)
    return {"q": _linear(kq, d, d, dtype), "k": _linear(kk, kv_in, d, dtype),
            "v": _linear(kv, kv_in, d, dtype), "o": _linear(ko, d, d, dtype),
            "norm_q": jnp.ones((d,), dtype), "norm_k": jnp.ones((d,), dtype)}


def _block(key, cfg: WanConfig, dtype):
    d = cfg.dim
    k1, k2, k3, k4, k5 = jax.random.split(key, 5)
    return {
        "modulation": (jax.random.normal(k5, (1, 6, d), jnp.float32) * d ** -0.5).astype(dtype),
        "self_attn": _attn(k1, d, d, dtype),
        "norm3": norm_affine(d, dtype),
        "cross_attn": _attn(k2, d, d, dtype) | (
            image.cross_attention_params(k2, d, dtype) if cfg.image_dim else {}),
        "ffn1": _linear(k3, d, cfg.ffn_dim, dtype),
        "ffn2": _linear(k4, cfg.ffn_dim, d, dtype),
    }


def init_params(cfg: WanConfig, key):
    """Random parameters with Wan's shapes; blocks stacked on a leading layer axis."""
    dt = jnp.dtype(cfg.dtype)
    d = cfg.dim
    ks = jax.random.split(key, 10)
    patch_in = cfg.in_dim * math.prod(cfg.patch)
    blocks = jax.vmap(lambda k: _block(k, cfg, dt))(jax.random.split(ks[8], cfg.layers))
    extra = {"image_embedding": image.embedding_params(ks[9], cfg.image_dim, d, dt)} \
        if cfg.image_dim else {}
    return extra | {
        "patch_embedding": _linear(ks[0], patch_in, d, dt),
        "text_embedding": {"l1": _linear(ks[1], cfg.text_dim, d, dt),
                           "l2": _linear(ks[2], d, d, dt)},
        "time_embedding": {"l1": _linear(ks[3], cfg.freq_dim, d, dt),
                           "l2": _linear(ks[4], d, d, dt)},
        "time_projection": _linear(ks[5], d, 6 * d, dt),
        "blocks": blocks,
        "head": {"modulation": (jax.random.normal(ks[6], (1, 2, d)) * d ** -0.5).astype(dt),
                 "head": _linear(ks[7], d, cfg.out_dim * math.prod(cfg.patch), dt)},
    }


def param_axes(cfg: WanConfig):
    """Logical axes of every parameter (same tree as init_params)."""
    def lin(w_axes, b_axes):
        return {"w": w_axes, "b": b_axes}

    def attn():
        return {"q": lin(("fsdp", "heads"), ("heads",)), "k": lin(("fsdp", "heads"), ("heads",)),
                "v": lin(("fsdp", "heads"), ("heads",)), "o": lin(("heads", "fsdp"), (None,)),
                "norm_q": ("heads",), "norm_k": ("heads",)}

    cross = attn() | (image.cross_attention_axes() if cfg.image_dim else {})
    block = {"modulation": (None, None, None), "self_attn": attn(),
             "norm3": {"w": (None,), "b": (None,)}, "cross_attn": cross,
             "ffn1": lin(("fsdp", "mlp"), ("mlp",)), "ffn2": lin(("mlp", "fsdp"), (None,))}
    blocks = jax.tree.map(lambda a: ("layers",) + a, block,
                          is_leaf=lambda a: isinstance(a, tuple))
    extra = {"image_embedding": image.embedding_axes()} if cfg.image_dim else {}
    return extra | {
        "patch_embedding": lin((None, "fsdp"), (None,)),
        "text_embedding": {"l1": lin(("fsdp", None), (None,)), "l2": lin(("fsdp", None), (None,))},
        "time_embedding": {"l1": lin((None, "fsdp"), (None,)), "l2": lin(("fsdp", None), (None,))},
        "time_projection": lin(("fsdp", None), (None,)),
        "blocks": blocks,
        "head": {"modulation": (None, None, None), "head": lin(("fsdp", None), (None,))},
    }


# ---- layers ----------------------------------------------------------------------------------

def sinusoidal(dim: int, t):
    half = dim // 2
    freqs = jnp.power(10000.0, -jnp.arange(half, dtype=jnp.float32) / half)
    a = t.astype(jnp.float32)[..., None] * freqs[(None,) * t.ndim]
    return jnp.concatenate([jnp.cos(a), jnp.sin(a)], axis=-1)


# The attention's activations name their heads "attn_heads" and the text tokens
# "text_length": the runtime decides whether those are split (strategies.Candidate.rules).
ACT = ("batch", "length", "attn_heads")


def _heads(layout, cfg, x):
    b, s, _ = x.shape
    x = x.reshape(b, s, cfg.heads, cfg.head_dim)
    return layout.constrain(x, ACT + (None,))


def _self_attention(cfg, layout, p, x, rope, kv_valid):
    act = ACT
    q = layout.constrain(_dense(layout, p["q"], x, ("fsdp", "heads"), ("heads",)), act)
    k = layout.constrain(_dense(layout, p["k"], x, ("fsdp", "heads"), ("heads",)), act)
    v = layout.constrain(_dense(layout, p["v"], x, ("fsdp", "heads"), ("heads",)), act)
    q = _rms_norm(q, p["norm_q"], cfg.eps)
    k = _rms_norm(k, p["norm_k"], cfg.eps)
    cos, sin = rope
    q = apply_rope(_heads(layout, cfg, q), cos, sin)
    k = apply_rope(_heads(layout, cfg, k), cos, sin)
    v = _heads(layout, cfg, v)
    o = layout.self_attention(q, k, v, kv_valid=kv_valid, q_block=cfg.q_block,
                              kv_block=cfg.kv_block)
    o = layout.constrain(o.reshape(x.shape), act)
    return _dense(layout, p["o"], o, ("heads", "fsdp"), (None,))


def _kv(layout, pk, pv, ctx):
    """The key and value projections [B,L,d] of context tokens ctx [B,L,d]."""
    kv_act = ("batch", "text_length", "attn_heads")
    return (layout.constrain(_dense(layout, pk, ctx, ("fsdp", "heads"), ("heads",)), kv_act),
            layout.constrain(_dense(layout, pv, ctx, ("fsdp", "heads"), ("heads",)), kv_act))


def _attend(cfg, layout, q, k, v, norm_k):
    """The queries q [B,S,H,D] over projected context keys and values k, v [B,L,d]."""
    b, l, _ = k.shape
    k = _rms_norm(k, norm_k, cfg.eps).reshape(b, l, cfg.heads, cfg.head_dim)
    v = v.reshape(b, l, cfg.heads, cfg.head_dim)
    k = layout.constrain(k, ("batch", "text_length", "attn_heads", None))
    v = layout.constrain(v, ("batch", "text_length", "attn_heads", None))
    return layout.cross_attention(q, k, v, q_block=cfg.q_block, kv_block=cfg.kv_block)


def _cross_attention(cfg, layout, p, x, ctx, img=None):
    """Attention to the text tokens; with image tokens (Wan 2.1 I2V) the same queries attend
    them too, under their own softmax, and the two outputs are summed."""
    act = ACT
    q = layout.constrain(_dense(layout, p["q"], x, ("fsdp", "heads"), ("heads",)), act)
    k, v = _kv(layout, p["k"], p["v"], ctx)
    q = _heads(layout, cfg, _rms_norm(q, p["norm_q"], cfg.eps))
    o = _attend(cfg, layout, q, k, v, p["norm_k"])
    if img is not None:
        o = o + _attend(cfg, layout, q, *_kv(layout, p["k_img"], p["v_img"], img),
                        p["norm_k_img"])
    o = layout.constrain(o.reshape(x.shape), act)
    return _dense(layout, p["o"], o, ("heads", "fsdp"), (None,))


def _block_apply(cfg, layout, p, x, e0, ctx, rope, kv_valid):
    dt = x.dtype
    act = ("batch", "length", None)
    e = _modulation(p["modulation"], e0)
    h = (_layer_norm(x, cfg.eps) * (1 + e[1]) + e[0]).astype(dt)
    y = _self_attention(cfg, layout, p["self_attn"], h, rope, kv_valid)
    x = layout.constrain((x.astype(jnp.float32) + y.astype(jnp.float32) * e[2]).astype(dt), act)
    h = _layer_norm(x, cfg.eps, p["norm3"]["w"], p["norm3"]["b"]).astype(dt)
    x = layout.constrain(x + _cross_attention(cfg, layout, p["cross_attn"], h, *ctx), act)
    h = (_layer_norm(x, cfg.eps) * (1 + e[4]) + e[3]).astype(dt)
    h = _dense(layout, p["ffn1"], h, ("fsdp", "mlp"), ("mlp",))
    h = layout.constrain(jax.nn.gelu(h, approximate=True), ("batch", "length", "mlp"))
    y = _dense(layout, p["ffn2"], h, ("mlp", "fsdp"), (None,))
    x = (x.astype(jnp.float32) + y.astype(jnp.float32) * e[5]).astype(dt)
    return layout.constrain(x, act)


def _modulation(table, e0):
    """The learned table [1,n,d] plus the time projection, as n vectors to broadcast over the
    tokens: [B,1,d] each from e0 [B,n,d] (a timestep per sample), [B,S,d] from e0 [B,S,n,d]
    (a timestep per token)."""
    table = table.astype(jnp.float32)
    if e0.ndim == 3:
        e = table + e0
        return [e[:, i:i + 1] for i in range(e.shape[1])]
    e = table[None] + e0
    return [e[:, :, i] for i in range(e.shape[2])]


def _time(cfg, layout, params, t, s_pad):
    """e [B,d] and e0 [B,6,d] in float32 from timesteps t [B]; e [B,S,d] and e0 [B,S,6,d]
    from t [B,S], one per token (S = s_pad: the padded tokens get timestep 0)."""
    dt = jnp.dtype(cfg.dtype)
    constrain = lambda a: a
    if t.ndim == 2:
        t = layout.constrain(jnp.pad(t, ((0, 0), (0, s_pad - t.shape[1]))), ("batch", "length"))
        constrain = lambda a: layout.constrain(a, ("batch", "length") + (None,) * (a.ndim - 2))
    te = params["time_embedding"]
    e = sinusoidal(cfg.freq_dim, t)
    e = _dense(layout, te["l1"], e.astype(dt), (None, "fsdp"), (None,))
    e = _dense(layout, te["l2"], jax.nn.silu(e), ("fsdp", None), (None,)).astype(jnp.float32)
    e0 = _dense(layout, params["time_projection"], jax.nn.silu(e).astype(dt),
                ("fsdp", None), (None,)).astype(jnp.float32)
    return constrain(e), constrain(e0.reshape(*e.shape[:-1], 6, cfg.dim))


def forward(cfg: WanConfig, params, x, t, context, image_tokens=None, *, workload: Video,
            layout=None):
    """One denoising step: latents x [B,C,F,H,W], timesteps t [B] (or [B,S] with
    per_token_time), text context [B,L,text_dim], CLIP image tokens [B,257,image_dim] (with
    image_dim) -> the predicted noise [B,out,F,H,W] (or the CFG-combined [out,F,H,W])."""
    layout = layout or LocalLayout()
    dt = jnp.dtype(cfg.dtype)
    b, c, f, hh, ww = x.shape
    pt, ph, pw = cfg.patch
    grid = (f // pt, hh // ph, ww // pw)
    s = math.prod(grid)
    s_pad = -(-s // layout.seq_multiple()) * layout.seq_multiple()
    act = ("batch", "length", None)

    # patch embedding: [B,C,F,H,W] -> [B, S, C*pt*ph*pw] -> [B,S,d]
    xp = x.reshape(b, c, grid[0], pt, grid[1], ph, grid[2], pw)
    xp = xp.transpose(0, 2, 4, 6, 1, 3, 5, 7).reshape(b, s, c * pt * ph * pw)
    xp = jnp.pad(xp, ((0, 0), (0, s_pad - s), (0, 0)))
    xp = layout.constrain(xp, act)
    h = layout.constrain(_dense(layout, params["patch_embedding"], xp.astype(dt),
                                (None, "fsdp"), (None,)), act)

    # time: sinusoid -> MLP -> e [B,(S,)d] -> e0 [B,(S,)6,d] (float32, as Wan does)
    e, e0 = _time(cfg, layout, params, t, s_pad)

    # text
    tx = params["text_embedding"]
    ctx = _dense(layout, tx["l1"], context.astype(dt), ("fsdp", None), (None,))
    ctx = _dense(layout, tx["l2"], jax.nn.gelu(ctx, approximate=True), ("fsdp", None), (None,))
    ctx = layout.constrain(ctx, ("batch", None, None))
    img = image.embed(layout, params["image_embedding"], image_tokens, dt) \
        if cfg.image_dim else None

    cos, sin = rope_tables(cfg, grid, s_pad)
    rope = (layout.constrain(cos, ("length", None)), layout.constrain(sin, ("length", None)))
    kv_valid = s if s_pad > s else None

    if cfg.scan:
        def body(h, p):
            return _block_apply(cfg, layout, p, h, e0, (ctx, img), rope, kv_valid), None

        h, _ = lax.scan(body, h, params["blocks"])
    else:
        for i in range(cfg.layers):
            p = jax.tree.map(lambda a: a[i], params["blocks"])
            h = _block_apply(cfg, layout, p, h, e0, (ctx, img), rope, kv_valid)

    # head
    hd = params["head"]
    table = hd["modulation"].astype(jnp.float32)
    m = table + e[:, None] if e.ndim == 2 else table[None] + e[:, :, None]  # [B,(S,)2,d]
    h = _layer_norm(h, cfg.eps)
    h = (h * (1 + m[:, 1:2]) + m[:, 0:1] if e.ndim == 2 else
         h * (1 + m[:, :, 1]) + m[:, :, 0]).astype(dt)
    out = _dense(layout, hd["head"], h, ("fsdp", None), (None,))
    out = out[:, :s]
    # unpatchify: [B, F', H', W', pt, ph, pw, C] -> [B, C, F, H, W]
    out = out.reshape(b, *grid, pt, ph, pw, cfg.out_dim)
    out = out.transpose(0, 7, 1, 4, 2, 5, 3, 6).reshape(b, cfg.out_dim, f, hh, ww)
    if workload.guidance is not None and b == 2:
        cond, uncond = out[0].astype(jnp.float32), out[1].astype(jnp.float32)
        out = (uncond + workload.guidance * (cond - uncond)).astype(dt)
    elif workload.guidance is not None and b % 2 == 0:  # V videos: prompts, then negatives
        v = b // 2
        cond, uncond = out[:v].astype(jnp.float32), out[v:].astype(jnp.float32)
        out = layout.constrain((uncond + workload.guidance * (cond - uncond)).astype(dt),
                               ("batch", None, None, None, None))
    return out


def param_count(cfg: WanConfig) -> int:
    """Number of parameters, counted from abstract shapes (nothing allocated)."""
    return cfg.param_count()

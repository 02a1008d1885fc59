"""Wan 2.1 text-to-video DiT in JAX (REFERENCE.md §3; Wan-Video/Wan2.1 wan/modules/model.py).

    x [B,16,F',H',W'] --patch (1,2,2)--> tokens [B,S,d] (+ padding to the layout's multiple)
    t [B] --sinusoid 256--> MLP --> e [B,d] --SiLU,Linear(d,6d)--> e0 [B,6,d]
    context [B,512,4096] --Linear,GELU(tanh),Linear--> [B,512,d]
    block (x layers): LayerNorm+mod -> self-attn (RMSNorm q,k over d; 3D RoPE 44/42/42) -> gate
                      affine LayerNorm -> cross-attn (RMSNorm q,k) -> residual
                      LayerNorm+mod -> Linear(d,f) GELU(tanh) Linear(f,d) -> gate
    head: LayerNorm + mod [1,2,d] -> Linear(d,64) -> unpatchify -> [B,16,F',H',W']
    CFG: B = 2 (conditional, unconditional), combined as u + g (c - u) when `guidance` is set.

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

from aoizora.models.base import LocalLayout, pad_multiple

VAE_STRIDE = (4, 8, 8)
RESOLUTIONS = {"480p": (480, 832), "720p": (720, 1280)}  # (height, width) in pixels


@dataclass(frozen=True)
class Video:
    """A workload: one denoising step of a video of `frames` frames at height x width pixels.
    batch 2 = classifier-free guidance as a batch (conditional, unconditional)."""

    name: str
    height: int
    width: int
    frames: int
    batch: int = 2
    guidance: float | None = 5.0  # combine the CFG pair into one prediction (None: return both)

    def latent_shape(self) -> tuple[int, int, int]:
        f = (self.frames - 1) // VAE_STRIDE[0] + 1
        return f, self.height // VAE_STRIDE[1], self.width // VAE_STRIDE[2]

    @property
    def tokens(self) -> int:
        """Sequence length of one sample under Wan's (1, 2, 2) patch: latent frames x
        (height / 16) x (width / 16) (480p 21 frames: 6 x 30 x 52 = 9,360)."""
        f, h, w = self.latent_shape()
        return f * (h // 2) * (w // 2)

    def key(self) -> dict:
        return dataclasses.asdict(self)


def video(resolution: str, frames: int, batch: int = 2) -> Video:
    """The paper's workloads: resolution in {480p, 720p}, frames in {21, 41, 81}."""
    if resolution not in RESOLUTIONS:
        raise ValueError(f"unknown resolution {resolution!r}: use one of {sorted(RESOLUTIONS)}")
    if (frames - 1) % VAE_STRIDE[0]:
        raise ValueError(f"frames must be 4k+1 (the VAE's temporal stride), got {frames}")
    h, w = RESOLUTIONS[resolution]
    return Video(f"{resolution}-{frames}f", h, w, frames, batch)


@dataclass(frozen=True)
class WanConfig:
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
    attention: str = "blockwise"  # or "splash" (TPU Pallas kernel; TPU targets only)

    # ---- ModelSpec --------------------------------------------------------------------
    def key(self) -> dict:
        return dataclasses.asdict(self)

    def blocks(self, n: int) -> "WanConfig":
        """The n-block proxy: every shape kept, only n transformer blocks."""
        return dataclasses.replace(self, name=f"{self.name.split('@')[0]}@{n}blocks", layers=n)

    def replace(self, **kw) -> "WanConfig":
        return dataclasses.replace(self, **kw)

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads

    def seq_len(self, workload: Video) -> int:
        f, h, w = workload.latent_shape()
        pt, ph, pw = self.patch
        return (f // pt) * (h // ph) * (w // pw)

    def pad_multiples(self) -> tuple[int, int]:
        """(whole sequence, per context shard); the splash kernel tiles shards by 128."""
        shard = math.lcm(self.shard_multiple, 128) if self.attention == "splash" else \
            self.shard_multiple
        return self.seq_multiple, shard

    def padded_len(self, workload: Video, context: int = 1) -> int:
        """The sequence length after padding for `context`-way sequence sharding."""
        m = pad_multiple(*self.pad_multiples(), context)
        return -(-self.seq_len(workload) // m) * m

    def abstract_params(self):
        return jax.eval_shape(lambda: init_params(self, jax.random.key(0)))

    def param_axes(self):
        return param_axes(self)

    def param_count(self) -> int:
        return sum(math.prod(x.shape) for x in jax.tree.leaves(self.abstract_params()))

    def abstract_inputs(self, workload: Video):
        dt = jnp.dtype(self.dtype)
        f, h, w = workload.latent_shape()
        b = workload.batch
        return (jax.ShapeDtypeStruct((b, self.in_dim, f, h, w), dt),
                jax.ShapeDtypeStruct((b,), jnp.float32),
                jax.ShapeDtypeStruct((b, self.text_len, self.text_dim), dt))

    def input_axes(self, workload: Video):
        return (("batch", None, None, None, None), ("batch",), ("batch", None, None))

    def output_axes(self, workload: Video):
        if workload.guidance is not None:
            return (None, None, None, None)
        return ("batch", None, None, None, None)

    def apply(self, params, x, t, context, *, workload: Video, layout=None):
        return forward(self, params, x, t, context, workload=workload, layout=layout)


PRESETS = {
    "wan2.1-t2v-1.3b": WanConfig("wan2.1-t2v-1.3b", dim=1536, ffn_dim=8960, heads=12, layers=30),
    "wan2.1-t2v-14b": WanConfig("wan2.1-t2v-14b", dim=5120, ffn_dim=13824, heads=40, layers=40),
    # Tests: every structural feature (RoPE 3-way split, 8 heads, text, CFG), fp32, tiny blocks
    # so the blockwise attention really loops.
    "wan-tiny": WanConfig("wan-tiny", dim=128, ffn_dim=256, heads=8, layers=2, text_dim=32,
                          text_len=16, freq_dim=32, dtype="float32", q_block=8, kv_block=8,
                          seq_multiple=1, shard_multiple=1),
}

# A tiny workload for the tiny model: 3 latent frames of 6x8 -> 3 x 3 x 4 = 36 tokens (not a
# multiple of 8, so 8-way context parallelism exercises the padding).
TINY_VIDEO = Video("tiny-9f", height=48, width=64, frames=9)


# ---- parameters ----------------------------------------------------------------------------

def _linear(key, n_in, n_out, dtype):
    w = jax.random.normal(key, (n_in, n_out), jnp.float32) * n_in ** -0.5
    return {"w": w.astype(dtype), "b": jnp.zeros((n_out,), dtype)}


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
        "norm3": {"w": jnp.ones((d,), dtype), "b": jnp.zeros((d,), dtype)},
        "cross_attn": _attn(k2, d, d, dtype),
        "ffn1": _linear(k3, d, cfg.ffn_dim, dtype),
        "ffn2": _linear(k4, cfg.ffn_dim, d, dtype),
    }


def init_params(cfg: WanConfig, key):
    """Random parameters with Wan's shapes; blocks stacked on a leading layer axis."""
    dt = jnp.dtype(cfg.dtype)
    d = cfg.dim
    ks = jax.random.split(key, 9)
    patch_in = cfg.in_dim * math.prod(cfg.patch)
    blocks = jax.vmap(lambda k: _block(k, cfg, dt))(jax.random.split(ks[8], cfg.layers))
    return {
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

    block = {"modulation": (None, None, None), "self_attn": attn(),
             "norm3": {"w": (None,), "b": (None,)}, "cross_attn": attn(),
             "ffn1": lin(("fsdp", "mlp"), ("mlp",)), "ffn2": lin(("mlp", "fsdp"), (None,))}
    blocks = jax.tree.map(lambda a: ("layers",) + a, block,
                          is_leaf=lambda a: isinstance(a, tuple))
    return {
        "patch_embedding": lin((None, "fsdp"), (None,)),
        "text_embedding": {"l1": lin(("fsdp", None), (None,)), "l2": lin(("fsdp", None), (None,))},
        "time_embedding": {"l1": lin((None, "fsdp"), (None,)), "l2": lin(("fsdp", None), (None,))},
        "time_projection": lin(("fsdp", None), (None,)),
        "blocks": blocks,
        "head": {"modulation": (None, None, None), "head": lin(("fsdp", None), (None,))},
    }


# ---- layers ----------------------------------------------------------------------------------

def _dense(layout, p, x, w_axes, b_axes):
    w = layout.gather(p["w"], w_axes)
    y = jnp.einsum("...i,io->...o", x, w.astype(x.dtype))
    return y + p["b"].astype(x.dtype)


def _layer_norm(x, eps, w=None, b=None):
    xf = x.astype(jnp.float32)
    mu = xf.mean(-1, keepdims=True)
    var = jnp.square(xf - mu).mean(-1, keepdims=True)
    y = (xf - mu) * lax.rsqrt(var + eps)
    if w is not None:
        y = y * w.astype(jnp.float32) + b.astype(jnp.float32)
    return y


def _rms_norm(x, w, eps):
    xf = x.astype(jnp.float32)
    y = xf * lax.rsqrt(jnp.square(xf).mean(-1, keepdims=True) + eps)
    return (y * w.astype(jnp.float32)).astype(x.dtype)


def sinusoidal(dim: int, t):
    half = dim // 2
    freqs = jnp.power(10000.0, -jnp.arange(half, dtype=jnp.float32) / half)
    a = t.astype(jnp.float32)[:, None] * freqs[None]
    return jnp.concatenate([jnp.cos(a), jnp.sin(a)], axis=1)


def rope_tables(cfg: WanConfig, grid: tuple[int, int, int], padded: int, theta: float = 10000.0):
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


def _heads(layout, cfg, x):
    b, s, _ = x.shape
    x = x.reshape(b, s, cfg.heads, cfg.head_dim)
    return layout.constrain(x, ("batch", "length", "heads", None))


def _self_attention(cfg, layout, p, x, rope, kv_valid):
    act = ("batch", "length", "heads")
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


def _cross_attention(cfg, layout, p, x, ctx):
    act = ("batch", "length", "heads")
    q = layout.constrain(_dense(layout, p["q"], x, ("fsdp", "heads"), ("heads",)), act)
    kv_act = ("batch", None, "heads")
    k = layout.constrain(_dense(layout, p["k"], ctx, ("fsdp", "heads"), ("heads",)), kv_act)
    v = layout.constrain(_dense(layout, p["v"], ctx, ("fsdp", "heads"), ("heads",)), kv_act)
    q = _heads(layout, cfg, _rms_norm(q, p["norm_q"], cfg.eps))
    b, l, _ = ctx.shape
    k = _rms_norm(k, p["norm_k"], cfg.eps).reshape(b, l, cfg.heads, cfg.head_dim)
    v = v.reshape(b, l, cfg.heads, cfg.head_dim)
    k = layout.constrain(k, ("batch", None, "heads", None))
    v = layout.constrain(v, ("batch", None, "heads", None))
    o = layout.cross_attention(q, k, v, q_block=cfg.q_block, kv_block=cfg.kv_block)
    o = layout.constrain(o.reshape(x.shape), act)
    return _dense(layout, p["o"], o, ("heads", "fsdp"), (None,))


def _block_apply(cfg, layout, p, x, e0, ctx, rope, kv_valid):
    dt = x.dtype
    act = ("batch", "length", None)
    e = p["modulation"].astype(jnp.float32) + e0  # [B,6,d]
    e = [e[:, i:i + 1] for i in range(6)]
    h = (_layer_norm(x, cfg.eps) * (1 + e[1]) + e[0]).astype(dt)
    y = _self_attention(cfg, layout, p["self_attn"], h, rope, kv_valid)
    x = layout.constrain((x.astype(jnp.float32) + y.astype(jnp.float32) * e[2]).astype(dt), act)
    h = _layer_norm(x, cfg.eps, p["norm3"]["w"], p["norm3"]["b"]).astype(dt)
    x = layout.constrain(x + _cross_attention(cfg, layout, p["cross_attn"], h, ctx), act)
    h = (_layer_norm(x, cfg.eps) * (1 + e[4]) + e[3]).astype(dt)
    h = _dense(layout, p["ffn1"], h, ("fsdp", "mlp"), ("mlp",))
    h = layout.constrain(jax.nn.gelu(h, approximate=True), ("batch", "length", "mlp"))
    y = _dense(layout, p["ffn2"], h, ("mlp", "fsdp"), (None,))
    x = (x.astype(jnp.float32) + y.astype(jnp.float32) * e[5]).astype(dt)
    return layout.constrain(x, act)


def forward(cfg: WanConfig, params, x, t, context, *, workload: Video, layout=None):
    """One denoising step: latents x [B,C,F,H,W], timesteps t [B], text context [B,L,text_dim]
    -> the predicted noise [B,C,F,H,W] (or the CFG-combined [C,F,H,W])."""
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

    # time: sinusoid -> MLP -> e [B,d] -> e0 [B,6,d] (float32, as Wan does)
    te = params["time_embedding"]
    e = sinusoidal(cfg.freq_dim, t)
    e = _dense(layout, te["l1"], e.astype(dt), (None, "fsdp"), (None,))
    e = _dense(layout, te["l2"], jax.nn.silu(e), ("fsdp", None), (None,)).astype(jnp.float32)
    e0 = _dense(layout, params["time_projection"], jax.nn.silu(e).astype(dt),
                ("fsdp", None), (None,)).astype(jnp.float32).reshape(b, 6, cfg.dim)

    # text
    tx = params["text_embedding"]
    ctx = _dense(layout, tx["l1"], context.astype(dt), ("fsdp", None), (None,))
    ctx = _dense(layout, tx["l2"], jax.nn.gelu(ctx, approximate=True), ("fsdp", None), (None,))
    ctx = layout.constrain(ctx, ("batch", None, None))

    cos, sin = rope_tables(cfg, grid, s_pad)
    rope = (layout.constrain(cos, ("length", None)), layout.constrain(sin, ("length", None)))
    kv_valid = s if s_pad > s else None

    if cfg.scan:
        def body(h, p):
            return _block_apply(cfg, layout, p, h, e0, ctx, rope, kv_valid), None

        h, _ = lax.scan(body, h, params["blocks"])
    else:
        for i in range(cfg.layers):
            p = jax.tree.map(lambda a: a[i], params["blocks"])
            h = _block_apply(cfg, layout, p, h, e0, ctx, rope, kv_valid)

    # head
    hd = params["head"]
    m = hd["modulation"].astype(jnp.float32) + e[:, None]
    h = (_layer_norm(h, cfg.eps) * (1 + m[:, 1:2]) + m[:, 0:1]).astype(dt)
    out = _dense(layout, hd["head"], h, ("fsdp", None), (None,))
    out = out[:, :s]
    # unpatchify: [B, F', H', W', pt, ph, pw, C] -> [B, C, F, H, W]
    out = out.reshape(b, *grid, pt, ph, pw, cfg.out_dim)
    out = out.transpose(0, 7, 1, 4, 2, 5, 3, 6).reshape(b, cfg.out_dim, f, hh, ww)
    if workload.guidance is not None and b == 2:
        cond, uncond = out[0].astype(jnp.float32), out[1].astype(jnp.float32)
        out = (uncond + workload.guidance * (cond - uncond)).astype(dt)
    return out


def param_count(cfg: WanConfig) -> int:
    """Number of parameters, counted from abstract shapes (nothing allocated)."""
    return cfg.param_count()

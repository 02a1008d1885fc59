"""Wan's text encoder, the UMT5-XXL encoder, in JAX (transformers UMT5EncoderModel;
Wan-Video/Wan2.1 wan/modules/t5.py `umt5_xxl(encoder_only=True)`).

    token_ids [B,L] int, mask [B,L] (1 = token, 0 = padding) -> hidden states [B,L,d]
    embedding [vocab,d] -> layers x (RMSNorm -> self-attention -> residual,
                                     RMSNorm -> gated-GELU FFN -> residual) -> RMSNorm

T5 v1.1 conventions, as UMT5 has them: RMSNorm without mean subtraction or bias (eps 1e-6,
float32); attention without bias and *without* the 1/sqrt(head_dim) scaling, plus a learned
relative position bias in *every* layer (UMT5; T5 shares layer 0's): relative positions
k - q binned into `buckets` (half per direction, exact below buckets/4, logarithmic up to
`max_distance`), a [buckets, heads] table per layer; padded keys masked (their score set to
float32's minimum, as Wan's masked_fill); FFN wo(gelu_tanh(wi_0 x) * wi_1 x), no bias.
`encode` returns every position as transformers does; Wan's pipeline keeps the first
sum(mask) tokens and pads with zeros (`text_context`).

`UMT5Config` is the model; `abstract_params()` makes its parameter pytree with
`jax.eval_shape` (nothing allocated), `init_params(key)` allocates (tiny configs only).
Layers are stacked on a leading axis and run under `lax.scan`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax import lax

from aoizora.models.base import LocalLayout, ModelConfig
from aoizora.models.layers import rms_norm


@dataclass(frozen=True)
class UMT5Config(ModelConfig):
    name: str
    d_model: int = 4096      # hidden width
    layers: int = 24         # encoder layers
    heads: int = 64
    d_kv: int = 64           # head dim (heads x d_kv = 4096 = the attention width)
    d_ff: int = 10240        # gated FFN hidden width
    vocab: int = 256384      # the embedding's rows (Wan's umt5-xxl, transformers' config)
    buckets: int = 32        # relative_attention_num_buckets
    max_distance: int = 128  # relative_attention_max_distance
    eps: float = 1e-6        # RMSNorm epsilon
    text_len: int = 512      # tokens per prompt (Wan's text_len; shorter prompts are padded)
    dtype: str = "bfloat16"  # parameters and matmuls; norms and softmax in float32



    @property
    def inner_dim(self) -> int:
        return self.heads * self.d_kv




    def abstract_inputs(self, batch: int = 2):
        """token ids and mask for `batch` prompts (CFG: the prompt and the negative one)."""
        return (jax.ShapeDtypeStruct((batch, self.text_len), jnp.int32),
                jax.ShapeDtypeStruct((batch, self.text_len), jnp.int32))

    def encode(self, params, token_ids, mask, *, layout=None):
        return encode(self, params, token_ids, mask, layout=layout)


UMT5_XXL = UMT5Config("umt5-xxl")
UMT5_TINY = UMT5Config("umt5-tiny", d_model=64, layers=2, heads=4, d_kv=16, d_ff=96,
                       vocab=256, buckets=8, max_distance=20, text_len=24, dtype="float32")


# ---- parameters ----------------------------------------------------------------------------

def _normal(key, shape, std, dtype):
    return (jax.random.normal(key, shape, jnp.float32) * std).astype(dtype)


def _layer(key, cfg: UMT5Config, dt):
    d, inner, f = cfg.d_model, cfg.inner_dim, cfg.d_ff
    ks = jax.random.split(key, 8)
    return {"norm_attn": jnp.ones((d,), dt),
            "q": _normal(ks[0], (d, inner), (d * cfg.d_kv) ** -0.5, dt),
            "k": _normal(ks[1], (d, inner), d ** -0.5, dt),
            "v": _normal(ks[2], (d, inner), d ** -0.5, dt),
            "o": _normal(ks[3], (inner, d), inner ** -0.5, dt),
            "rel_bias": _normal(ks[4], (cfg.buckets, cfg.heads), d ** -0.5, dt),
            "norm_ffn": jnp.ones((d,), dt),
            "wi_0": _normal(ks[5], (d, f), d ** -0.5, dt),
            "wi_1": _normal(ks[6], (d, f), d ** -0.5, dt),
            "wo": _normal(ks[7], (f, d), f ** -0.5, dt)}


def init_params(cfg: UMT5Config, key):
    """Random parameters with UMT5's shapes (transformers' init scales); layers stacked on a
    leading axis. Matrices are [in, out] (transformers' Linear weights transposed)."""
    dt = jnp.dtype(cfg.dtype)
    k_emb, k_layers = jax.random.split(key)
    return {"embedding": _normal(k_emb, (cfg.vocab, cfg.d_model), 1.0, dt),
            "layers": jax.vmap(lambda k: _layer(k, cfg, dt))(jax.random.split(k_layers,
                                                                             cfg.layers)),
            "final_norm": jnp.ones((cfg.d_model,), dt)}


def param_axes(cfg: UMT5Config):
    """Logical axes of every parameter (same tree as init_params). The embedding is sharded
    along d and looked up shard by shard, never gathered whole."""
    layer = {"norm_attn": (None,), "q": ("fsdp", "heads"), "k": ("fsdp", "heads"),
             "v": ("fsdp", "heads"), "o": ("heads", "fsdp"), "rel_bias": (None, "heads"),
             "norm_ffn": (None,), "wi_0": ("fsdp", "mlp"), "wi_1": ("fsdp", "mlp"),
             "wo": ("mlp", "fsdp")}
    return {"embedding": (None, "fsdp"),
            "layers": {k: ("layers",) + a for k, a in layer.items()},
            "final_norm": (None,)}


# ---- the encoder ---------------------------------------------------------------------------

def relative_buckets(cfg: UMT5Config, q_len: int, k_len: int):
    """Bucket [q_len, k_len] of the relative position k - q (bidirectional), computed in
    float32 in transformers' order of operations so that boundary cases round alike."""
    rel = jnp.arange(k_len)[None, :] - jnp.arange(q_len)[:, None]
    half = cfg.buckets // 2
    out = jnp.where(rel > 0, half, 0)
    rel = jnp.abs(rel)
    exact = half // 2
    ratio = jnp.log(jnp.maximum(rel, 1).astype(jnp.float32) / exact)
    ratio = ratio / jnp.float32(math.log(cfg.max_distance / exact)) * (half - exact)
    large = jnp.minimum(exact + ratio.astype(jnp.int32), half - 1)
    return out + jnp.where(rel < exact, rel, large)


def _matmul(layout, x, w, w_axes):
    return jnp.einsum("...i,io->...o", x, layout.gather(w, w_axes).astype(x.dtype))


def _attention(cfg, layout, p, x, buckets, key_ok):
    b, s, _ = x.shape
    act = ("batch", "length", "heads", None)

    def heads(name):
        y = _matmul(layout, x, p[name], ("fsdp", "heads"))
        return layout.constrain(y.reshape(b, s, cfg.heads, cfg.d_kv), act)

    q, k, v = heads("q"), heads("k"), heads("v")
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32)
    bias = jnp.take(p["rel_bias"].astype(jnp.float32), buckets, axis=0)  # [q, k, heads]
    scores = scores + bias.transpose(2, 0, 1)[None]
    scores = jnp.where(key_ok[:, None, None, :], scores, jnp.finfo(jnp.float32).min)
    probs = jax.nn.softmax(scores, axis=-1).astype(v.dtype)
    o = jnp.einsum("bhqk,bkhd->bqhd", probs, v, preferred_element_type=jnp.float32)
    o = layout.constrain(o.astype(x.dtype), act).reshape(b, s, cfg.inner_dim)
    return _matmul(layout, o, p["o"], ("heads", "fsdp"))


def _ffn(cfg, layout, p, x):
    gate = jax.nn.gelu(_matmul(layout, x, p["wi_0"], ("fsdp", "mlp")), approximate=True)
    h = gate * _matmul(layout, x, p["wi_1"], ("fsdp", "mlp"))
    h = layout.constrain(h, ("batch", "length", "mlp"))
    return _matmul(layout, h, p["wo"], ("mlp", "fsdp"))


def encode(cfg: UMT5Config, params, token_ids, mask, *, layout=None):
    """Hidden states [B,L,d_model] (the config dtype) of token_ids [B,L] under mask [B,L]
    (nonzero = a real token; padded keys are masked, padded queries still computed)."""
    layout = layout or LocalLayout()
    dt = jnp.dtype(cfg.dtype)
    act = ("batch", "length", None)
    x = jnp.take(params["embedding"], token_ids, axis=0).astype(dt)
    x = layout.constrain(x, act)
    s = token_ids.shape[1]
    buckets = relative_buckets(cfg, s, s)
    key_ok = mask != 0

    def body(x, p):
        h = rms_norm(x, p["norm_attn"], cfg.eps)
        x = layout.constrain(x + _attention(cfg, layout, p, h, buckets, key_ok), act)
        h = rms_norm(x, p["norm_ffn"], cfg.eps)
        return layout.constrain(x + _ffn(cfg, layout, p, h), act), None

    x, _ = lax.scan(body, x, params["layers"])
    return rms_norm(x, params["final_norm"], cfg.eps)


def text_context(cfg: UMT5Config, params, token_ids, mask, *, layout=None):
    """What Wan's transformer receives: `encode` with the padded positions set to zero (Wan
    and diffusers keep the first sum(mask) tokens, then pad with zeros to text_len)."""
    h = encode(cfg, params, token_ids, mask, layout=layout)
    return jnp.where((mask != 0)[..., None], h, jnp.zeros((), h.dtype))

"""Wan 2.1 I2V's image encoder, the CLIP ViT-H/14 visual tower, in JAX (transformers
CLIPVisionModel; Wan-Video/Wan2.1 wan/modules/clip.py `clip_xlm_roberta_vit_h_14`, the
visual part of open-clip xlm-roberta-large-vit-huge-14).

    pixels [B,3,224,224] (CLIPImageProcessor's: resized, centre-cropped, normalised)
    --Conv2d 14x14 stride 14, no bias--> 16 x 16 patches, class token in front, + positions
    --pre-LN--> hidden_states[0] --layers x (LN -> attention -> residual,
                                             LN -> fc1 -> GELU -> fc2 -> residual)-->
    hidden_states[i] after layer i                                          [B,257,1280]

What Wan takes (`image_context`): hidden_states[-2], the output of layer 31 of 32, with no
post-LN (diffusers WanImageToVideoPipeline.encode_image: `hidden_states[-2]`; Wan's
`visual(..., use_31_block=True)` runs `transformer[:-1]`). The post-LN and the last layer
are in the checkpoint (and in `init_params`, so the count equals transformers') but Wan
never runs them. Attention is 16 heads of 80 over all 257 tokens, with bias, scaled by
80^-0.5; LayerNorms are affine, eps 1e-5, in float32.

The real config (`CLIP_VIT_H14`): diffusers' scripts/convert_wan_to_diffusers.py builds the
I2V pipelines' image encoder from laion/CLIP-ViT-H-14-laion2B-s32B-b79K; Wan's clip.py gives
its visual tower: image 224, patch 14, width 1280, 32 layers, 16 heads, MLP ratio 4 (5120),
activation 'gelu' (nn.GELU: exact erf, not CLIP's quick_gelu), pre_norm True (so the patch
conv has no bias), eps 1e-5. The Hub config.json itself was not read (no download here).

Image to video in the other presets (diffusers 0.42 pipelines/wan/pipeline_wan_i2v.py;
scripts/convert_wan_to_diffusers.py): only Wan 2.1 I2V has an image encoder. Wan 2.2 I2V
A14B is a WanImageToVideoPipeline with no image_encoder (its transformers have no image_dim,
so encode_image is skipped) that VAE-encodes the image followed by num_frames - 1 zero
frames with the Wan 2.1 VAE, as Wan 2.1 I2V does. TI2V-5B (expand_timesteps) encodes the
image alone, one frame, with the Wan 2.2 VAE, and puts its latent in place of latent frame 0
(wan_vae.encode does both VAEs).

`CLIPVisionConfig` is the model; `abstract_params()` makes its parameter pytree with
`jax.eval_shape` (nothing allocated), `init_params(key)` allocates (tiny configs only).
Layers are stacked on a leading axis and run under `lax.scan`.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax import lax

from aoizora.models.base import LocalLayout, ModelConfig
from aoizora.models.layers import dense, layer_norm, linear, norm_affine

# transformers' ACT2FN names for the two activations CLIP towers use.
ACTIVATIONS = {"gelu": lambda x: jax.nn.gelu(x, approximate=False),
               "quick_gelu": lambda x: x * jax.nn.sigmoid(1.702 * x)}


@dataclass(frozen=True)
class CLIPVisionConfig(ModelConfig):
    name: str
    width: int = 1280        # hidden_size
    layers: int = 32         # num_hidden_layers (Wan runs all but the last)
    heads: int = 16          # num_attention_heads (head dim 80)
    mlp: int = 5120          # intermediate_size
    image_size: int = 224    # pixels per side
    patch: int = 14          # patch_size: 224 / 14 = 16 patches per side
    act: str = "gelu"        # hidden_act: "gelu" (ViT-H/14) or "quick_gelu" (OpenAI CLIP)
    eps: float = 1e-5        # layer_norm_eps
    hidden_index: int = -2   # the hidden state Wan takes (transformers' hidden_states index)
    dtype: str = "bfloat16"  # parameters and matmuls; norms and softmax in float32



    @property
    def tokens(self) -> int:
        """Patches plus the class token: 257 for ViT-H/14 at 224 px."""
        return (self.image_size // self.patch) ** 2 + 1

    @property
    def head_dim(self) -> int:
        return self.width // self.heads




    def abstract_inputs(self, batch: int = 1):
        """Pixels of `batch` images (Wan: 1, the first frame)."""
        s = self.image_size
        return (jax.ShapeDtypeStruct((batch, 3, s, s), jnp.dtype(self.dtype)),)

    def image_context(self, params, pixels, *, layout=None):
        return image_context(self, params, pixels, layout=layout)


CLIP_VIT_H14 = CLIPVisionConfig("clip-vit-h-14")
CLIP_TINY = CLIPVisionConfig("clip-tiny", width=64, layers=3, heads=4, mlp=96, image_size=20,
                             patch=4, dtype="float32")


# ---- parameters ----------------------------------------------------------------------------

def _layer(key, cfg: CLIPVisionConfig, dt):
    d, f = cfg.width, cfg.mlp
    ks = jax.random.split(key, 6)
    return {"norm1": norm_affine(d, dt), "q": linear(ks[0], d, d, dt),
            "k": linear(ks[1], d, d, dt), "v": linear(ks[2], d, d, dt),
            "o": linear(ks[3], d, d, dt), "norm2": norm_affine(d, dt),
            "fc1": linear(ks[4], d, f, dt), "fc2": linear(ks[5], f, d, dt)}


def init_params(cfg: CLIPVisionConfig, key):
    """Random parameters with CLIPVisionModel's shapes, layers stacked on a leading axis.
    Matrices are [in, out]; the patch kernel is [patch, patch, 3, width] (HWIO)."""
    dt = jnp.dtype(cfg.dtype)
    d, p = cfg.width, cfg.patch
    k_patch, k_cls, k_pos, k_layers = jax.random.split(key, 4)
    patch = jax.random.normal(k_patch, (p, p, 3, d), jnp.float32) * (3 * p * p) ** -0.5
    return {"patch_embedding": patch.astype(dt),
            "class_embedding": (jax.random.normal(k_cls, (d,)) * d ** -0.5).astype(dt),
            "position_embedding": (jax.random.normal(k_pos, (cfg.tokens, d)) * 0.02).astype(dt),
            "pre_norm": norm_affine(d, dt),
            "layers": jax.vmap(lambda k: _layer(k, cfg, dt))(jax.random.split(k_layers,
                                                                             cfg.layers)),
            "post_norm": norm_affine(d, dt)}


def param_axes(cfg: CLIPVisionConfig):
    """Logical axes of every parameter (same tree as init_params): Megatron's split of the
    attention (heads) and MLP (mlp), the other matrix dim stored sharded (fsdp)."""
    norm = {"w": (None,), "b": (None,)}
    col = lambda out: {"w": ("fsdp", out), "b": (out,)}
    row = lambda inp: {"w": (inp, "fsdp"), "b": (None,)}
    layer = {"norm1": norm, "q": col("heads"), "k": col("heads"), "v": col("heads"),
             "o": row("heads"), "norm2": norm, "fc1": col("mlp"), "fc2": row("mlp")}
    return {"patch_embedding": (None, None, None, "fsdp"), "class_embedding": (None,),
            "position_embedding": (None, None), "pre_norm": norm,
            "layers": jax.tree.map(lambda a: ("layers",) + a, layer,
                                   is_leaf=lambda a: isinstance(a, tuple)),
            "post_norm": norm}


# ---- the encoder ---------------------------------------------------------------------------

ACT_AXES = ("batch", "length", None)


def embed(cfg: CLIPVisionConfig, layout, params, pixels):
    """hidden_states[0]: patch embeddings after the class token, plus positions, pre-LN."""
    dt = jnp.dtype(cfg.dtype)
    x = pixels.astype(dt).transpose(0, 2, 3, 1)  # NHWC
    w = layout.gather(params["patch_embedding"], (None, None, None, "fsdp")).astype(dt)
    x = lax.conv_general_dilated(x, w, (cfg.patch, cfg.patch), "VALID",
                                 dimension_numbers=("NHWC", "HWIO", "NHWC"))
    b = x.shape[0]
    x = x.reshape(b, -1, cfg.width)  # row-major patches, as torch's flatten(2)
    cls = jnp.broadcast_to(params["class_embedding"].astype(dt), (b, 1, cfg.width))
    x = jnp.concatenate([cls, x], axis=1) + params["position_embedding"].astype(dt)
    n = params["pre_norm"]
    return layout.constrain(layer_norm(x, cfg.eps, n["w"], n["b"]).astype(dt), ACT_AXES)


def _attention(cfg, layout, p, x):
    b, s, _ = x.shape
    act = ("batch", "length", "heads", None)

    def heads(name):
        y = dense(layout, p[name], x, ("fsdp", "heads"), ("heads",))
        return layout.constrain(y.reshape(b, s, cfg.heads, cfg.head_dim), act)

    q, k, v = heads("q"), heads("k"), heads("v")
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32)
    probs = jax.nn.softmax(scores * cfg.head_dim ** -0.5, axis=-1).astype(v.dtype)
    o = jnp.einsum("bhqk,bkhd->bqhd", probs, v, preferred_element_type=jnp.float32)
    o = layout.constrain(o.astype(x.dtype), act).reshape(b, s, cfg.width)
    return dense(layout, p["o"], o, ("heads", "fsdp"), (None,))


def _mlp(cfg, layout, p, x):
    h = ACTIVATIONS[cfg.act](dense(layout, p["fc1"], x, ("fsdp", "mlp"), ("mlp",)))
    h = layout.constrain(h, ("batch", "length", "mlp"))
    return dense(layout, p["fc2"], h, ("mlp", "fsdp"), (None,))


def layers_run(cfg: CLIPVisionConfig, index: int) -> int:
    """How many layers give transformers' hidden_states[index] (0: the embeddings; -1 or
    `layers`: the last layer's output). Raises IndexError outside [-layers - 1, layers]."""
    if not -cfg.layers - 1 <= index <= cfg.layers:
        raise IndexError(f"hidden state {index} of a {cfg.layers}-layer encoder")
    return index % (cfg.layers + 1)


def hidden_state(cfg: CLIPVisionConfig, params, pixels, index: int, *, layout=None):
    """transformers' CLIPVisionModel hidden_states[index] [B,tokens,width] of pixels
    [B,3,image_size,image_size]; only the layers it needs are run."""
    layout = layout or LocalLayout()
    dt = jnp.dtype(cfg.dtype)
    x = embed(cfg, layout, params, pixels)
    n = layers_run(cfg, index)

    def body(x, p):
        h = layer_norm(x, cfg.eps, p["norm1"]["w"], p["norm1"]["b"]).astype(dt)
        x = layout.constrain(x + _attention(cfg, layout, p, h), ACT_AXES)
        h = layer_norm(x, cfg.eps, p["norm2"]["w"], p["norm2"]["b"]).astype(dt)
        return layout.constrain(x + _mlp(cfg, layout, p, h), ACT_AXES), None

    if n:
        x, _ = lax.scan(body, x, jax.tree.map(lambda a: a[:n], params["layers"]))
    return x


def image_context(cfg: CLIPVisionConfig, params, pixels, *, layout=None):
    """What Wan 2.1 I2V's transformer receives as image tokens: hidden_states[hidden_index]
    (ViT-H/14: [B,257,1280], layer 31's output, no post-LN)."""
    return hidden_state(cfg, params, pixels, cfg.hidden_index, layout=layout)

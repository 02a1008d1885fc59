"""Wan's causal 3D VAE decoder in JAX (diffusers AutoencoderKLWan; Wan-Video/Wan2.1
wan/modules/vae.py, Wan2.2 wan/modules/vae2_2.py): Wan 2.1's (stride (4, 8, 8), 16 latent
channels) and Wan 2.2 TI2V-5B's (stride (4, 16, 16), 48 channels, residual up blocks and a
2 x 2 patch).

    latents [B,z,T,h,w] (as the transformer makes them) --x std + mean--> post_quant_conv
    --> conv_in --> mid (res, attention, res) --> up blocks --> RMS norm, SiLU, conv_out
    --> (2.2: unpatchify 2 x 2) --> clamp [-1, 1] --> video [B,3,1+4(T-1),8h,8w] (2.2: 16h, 16w)

    up block: (num_res_blocks + 1) residual blocks (RMS norm, SiLU, causal conv 3^3, twice;
              a 1^3 conv shortcut where the width changes), then an upsampler: nearest x2 in
              height and width + Conv2d 3x3 per frame; temporal ones first a causal (3,1,1)
              conv to 2C channels that become two frames. 2.2's blocks add a shortcut that
              duplicates channels into the upsampled grid (DupUp3D).

Every convolution is causal in time: zero padding of 2 frames in front, none behind. The
whole clip is decoded at once; diffusers decodes latent frame by frame with a cache of the
last two input frames of every convolution, which is the same function: the first latent
frame skips every temporal upsampler (one frame out, not two) and the temporal convolution
then runs causally over the frames after it (tests/python/test_wan_vae.py checks the two
against each other at several frame counts). Norms are diffusers' WanRMS_norm:
x / max(|x|_2, 1e-12) * sqrt(C) * gamma over the channels, in float32. The attention is one
head over each frame's pixels, scaled by C^-0.5.

`encode` is the encoder (image to video conditioning), whole clip likewise: Wan 2.1's
(Wan 2.1 I2V and Wan 2.2 I2V A14B encode the image and 80 zero frames) and Wan 2.2's
(TI2V-5B encodes the image alone): 2 x 2 patchify, residual down levels whose AvgDown3D
shortcut averages each 2 x 2 (x 2 frames) block's channels.

Activations are channels-last [B,T,H,W,C] inside, on logical axes ("batch", "frames",
"height", "width", None); parameters are a pytree named as diffusers' modules (lists for its
ModuleLists), kernels [kt,kh,kw,in,out] (Conv2d: [kh,kw,in,out]; 1x1: [in,out]).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax import lax

from aoizora.models.base import LocalLayout, ModelConfig

VIDEO_AXES = ("batch", "frames", "height", "width", None)

WAN21_LATENTS_MEAN = (-0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508,
                      0.4134, -0.0715, 0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921)
WAN21_LATENTS_STD = (2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743,
                     3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.9160)
WAN22_LATENTS_MEAN = (
    -0.2289, -0.0052, -0.1323, -0.2339, -0.2799, 0.0174, 0.1838, 0.1557, -0.1382, 0.0542,
    0.2813, 0.0891, 0.1570, -0.0098, 0.0375, -0.1825, -0.2246, -0.1207, -0.0698, 0.5109,
    0.2665, -0.2108, -0.2158, 0.2502, -0.2055, -0.0322, 0.1109, 0.1567, -0.0729, 0.0899,
    -0.2799, -0.1230, -0.0313, -0.1649, 0.0117, 0.0723, -0.2839, -0.2083, -0.0520, 0.3748,
    0.0152, 0.1957, 0.1433, -0.2944, 0.3573, -0.0548, -0.1681, -0.0667)
WAN22_LATENTS_STD = (
    0.4765, 1.0364, 0.4514, 1.1677, 0.5313, 0.4990, 0.4818, 0.5013, 0.8158, 1.0344,
    0.5894, 1.0901, 0.6885, 0.6165, 0.8454, 0.4978, 0.5759, 0.3523, 0.7135, 0.6804,
    0.5833, 1.4146, 0.8986, 0.5659, 0.7069, 0.5338, 0.4889, 0.4917, 0.4069, 0.4999,
    0.6866, 0.4093, 0.5709, 0.6065, 0.6415, 0.4944, 0.5726, 1.2042, 0.5458, 1.6887,
    0.3971, 1.0600, 0.3943, 0.5537, 0.5444, 0.4089, 0.7468, 0.7744)


@dataclass(frozen=True)
class WanVAEConfig(ModelConfig):
    """diffusers' AutoencoderKLWan config, decoder side (its field names, spelling fixed)."""
    name: str
    z_dim: int = 16                  # latent channels
    base_dim: int = 96               # the encoder's width (and the decoder's, unless set)
    decoder_base_dim: int | None = None
    dim_mult: tuple = (1, 2, 4, 4)
    num_res_blocks: int = 2
    temporal_downsample: tuple = (False, True, True)  # the decoder upsamples reversed
    is_residual: bool = False        # Wan 2.2: residual up blocks, no halving between blocks
    out_channels: int = 3            # conv_out's channels (2.2: 12 = 3 x the 2 x 2 patch)
    patch_size: int | None = None    # 2.2: 2 (unpatchified after the decoder)
    latents_mean: tuple = WAN21_LATENTS_MEAN
    latents_std: tuple = WAN21_LATENTS_STD
    dtype: str = "bfloat16"          # parameters and convolutions; norms in float32



    @property
    def stride(self) -> tuple[int, int, int]:
        """(time, height, width) compression: Wan 2.1 (4, 8, 8), Wan 2.2 TI2V-5B (4, 16, 16)."""
        s = 2 ** (len(self.dim_mult) - 1) * (self.patch_size or 1)
        return 2 ** sum(self.temporal_downsample), s, s

    def video_shape(self, latent_shape) -> tuple[int, int, int]:
        """(frames, height, width) decoded from latents (T, h, w): 1 + 4 (T - 1) frames."""
        t, h, w = latent_shape
        st, sh, sw = self.stride
        return 1 + st * (t - 1), sh * h, sw * w


    def param_axes(self):
        """Every parameter replicated (the 2.1 decoder is 73 M parameters)."""
        return jax.tree.map(lambda a: (None,) * a.ndim, self.abstract_params())


    def abstract_inputs(self, latent_shape, batch: int = 1):
        return (jax.ShapeDtypeStruct((batch, self.z_dim, *latent_shape), jnp.dtype(self.dtype)),)

    def decode(self, params, latents, *, layout=None):
        return decode(self, params, latents, layout=layout)


WAN21_VAE = WanVAEConfig("wan2.1-vae")
WAN22_VAE = WanVAEConfig("wan2.2-vae", z_dim=48, base_dim=160, decoder_base_dim=256,
                         is_residual=True, out_channels=12, patch_size=2,
                         latents_mean=WAN22_LATENTS_MEAN, latents_std=WAN22_LATENTS_STD)
WAN21_VAE_TINY = WanVAEConfig("wan2.1-vae-tiny", z_dim=4, base_dim=4, dtype="float32",
                              latents_mean=(0.1, -0.2, 0.3, 0.0),
                              latents_std=(1.5, 0.5, 2.0, 1.0))
WAN22_VAE_TINY = WAN22_VAE.replace(name="wan2.2-vae-tiny", z_dim=6, base_dim=4,
                                   decoder_base_dim=8, dtype="float32",
                                   latents_mean=WAN21_VAE_TINY.latents_mean + (0.2, -0.1),
                                   latents_std=WAN21_VAE_TINY.latents_std + (0.7, 1.2))


# ---- structure and parameters --------------------------------------------------------------

def up_blocks(cfg: WanVAEConfig):
    """(in, out, upsample mode or None, temporal) of each up block, as diffusers builds them."""
    base = cfg.decoder_base_dim or cfg.base_dim
    dims = [base * m for m in (cfg.dim_mult[-1],) + tuple(cfg.dim_mult[::-1])]
    temporal_up = tuple(cfg.temporal_downsample[::-1])
    out = []
    for i, (d_in, d_out) in enumerate(zip(dims[:-1], dims[1:])):
        if i > 0 and not cfg.is_residual:
            d_in //= 2
        up = i != len(cfg.dim_mult) - 1
        mode = ("upsample3d" if temporal_up[i] else "upsample2d") if up else None
        out.append((d_in, d_out, mode, up and temporal_up[i]))
    return dims, out


def _conv(key, kernel, c_in, c_out, dt):
    fan_in = c_in * math.prod(kernel)
    w = jax.random.normal(key, (*kernel, c_in, c_out), jnp.float32) * fan_in ** -0.5
    return {"w": w.astype(dt), "b": jnp.zeros((c_out,), dt)}


def _dense(key, c_in, c_out, dt):
    w = jax.random.normal(key, (c_in, c_out), jnp.float32) * c_in ** -0.5
    return {"w": w.astype(dt), "b": jnp.zeros((c_out,), dt)}


def _resnet(key, c_in, c_out, dt):
    k1, k2, k3 = jax.random.split(key, 3)
    p = {"norm1": {"gamma": jnp.ones((c_in,), dt)}, "conv1": _conv(k1, (3, 3, 3), c_in, c_out, dt),
         "norm2": {"gamma": jnp.ones((c_out,), dt)}, "conv2": _conv(k2, (3, 3, 3), c_out, c_out, dt)}
    if c_in != c_out:
        p["conv_shortcut"] = _conv(k3, (1, 1, 1), c_in, c_out, dt)
    return p


def _attention(key, c, dt):
    k1, k2 = jax.random.split(key)
    return {"norm": {"gamma": jnp.ones((c,), dt)}, "to_qkv": _dense(k1, c, 3 * c, dt),
            "proj": _dense(k2, c, c, dt)}


def _upsampler(key, c, c_out, mode, dt):
    k1, k2 = jax.random.split(key)
    p = {"resample": _conv(k1, (3, 3), c, c_out, dt)}
    if mode == "upsample3d":
        p["time_conv"] = _conv(k2, (3, 1, 1), c, 2 * c, dt)
    return p


def init_params(cfg: WanVAEConfig, key):
    """Random parameters with the decoder's shapes (post_quant_conv and decoder)."""
    dt = jnp.dtype(cfg.dtype)
    dims, blocks = up_blocks(cfg)
    ks = iter(jax.random.split(key, 8 + 8 * len(blocks)))
    mid = {"resnets": [_resnet(next(ks), dims[0], dims[0], dt) for _ in range(2)],
           "attentions": [_attention(next(ks), dims[0], dt)]}
    ups = []
    for d_in, d_out, mode, _ in blocks:
        b = {"resnets": [_resnet(next(ks), d_in if j == 0 else d_out, d_out, dt)
                         for j in range(cfg.num_res_blocks + 1)]}
        if mode and cfg.is_residual:
            b["upsampler"] = _upsampler(next(ks), d_out, d_out, mode, dt)
        elif mode:
            b["upsamplers"] = [_upsampler(next(ks), d_out, d_out // 2, mode, dt)]
        ups.append(b)
    return {"post_quant_conv": _conv(next(ks), (1, 1, 1), cfg.z_dim, cfg.z_dim, dt),
            "decoder": {"conv_in": _conv(next(ks), (3, 3, 3), cfg.z_dim, dims[0], dt),
                        "mid_block": mid, "up_blocks": ups,
                        "norm_out": {"gamma": jnp.ones((blocks[-1][1],), dt)},
                        "conv_out": _conv(next(ks), (3, 3, 3), blocks[-1][1],
                                          cfg.out_channels, dt)}}


# ---- layers --------------------------------------------------------------------------------

def causal_conv(p, x):
    """Conv3d over x [B,T,H,W,C] with kernel p["w"] [kt,kh,kw,I,O] (or [kh,kw,I,O]: per
    frame): kt-1 zero frames in front, none behind; 'same' zero padding in height, width."""
    w = p["w"] if p["w"].ndim == 5 else p["w"][None]
    kt, kh, kw = w.shape[:3]
    pad = [(kt - 1, 0), (kh // 2, kh // 2), (kw // 2, kw // 2)]
    y = lax.conv_general_dilated(x, w.astype(x.dtype), (1, 1, 1), pad,
                                 dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))
    return y + p["b"].astype(x.dtype)


def rms_norm(x, gamma):
    """diffusers' WanRMS_norm over the channels (last axis), in float32."""
    xf = x.astype(jnp.float32)
    n = jnp.sqrt(jnp.sum(jnp.square(xf), axis=-1, keepdims=True))
    y = xf / jnp.maximum(n, 1e-12) * math.sqrt(x.shape[-1]) * gamma.astype(jnp.float32)
    return y.astype(x.dtype)


def residual_block(p, x):
    h = causal_conv(p["conv_shortcut"], x) if "conv_shortcut" in p else x
    x = causal_conv(p["conv1"], jax.nn.silu(rms_norm(x, p["norm1"]["gamma"])))
    x = causal_conv(p["conv2"], jax.nn.silu(rms_norm(x, p["norm2"]["gamma"])))
    return x + h


def attention_block(p, x):
    """One head over each frame's H x W pixels, plus the input."""
    b, t, h, w, c = x.shape
    y = rms_norm(x, p["norm"]["gamma"])
    qkv = jnp.einsum("...i,io->...o", y, p["to_qkv"]["w"].astype(x.dtype))
    qkv = qkv + p["to_qkv"]["b"].astype(x.dtype)
    q, k, v = jnp.split(qkv.reshape(b * t, h * w, 3 * c), 3, axis=-1)
    s = jnp.einsum("nqc,nkc->nqk", q, k, preferred_element_type=jnp.float32) * c ** -0.5
    o = jnp.einsum("nqk,nkc->nqc", jax.nn.softmax(s, axis=-1).astype(v.dtype), v)
    o = jnp.einsum("...i,io->...o", o, p["proj"]["w"].astype(x.dtype))
    return x + (o + p["proj"]["b"].astype(x.dtype)).reshape(b, t, h, w, c)


def temporal_upsample(p, x):
    """Frame 0 as it is; frames 1.. through the causal (3,1,1) conv to 2C channels, each
    frame becoming two (channels [0, C) then [C, 2C)): T frames -> 1 + 2 (T - 1)."""
    b, t, h, w, c = x.shape
    if t == 1:
        return x
    y = causal_conv(p, x[:, 1:]).reshape(b, t - 1, h, w, 2, c)
    y = y.transpose(0, 1, 4, 2, 3, 5).reshape(b, 2 * (t - 1), h, w, c)
    return jnp.concatenate([x[:, :1], y], axis=1)


def upsample(p, x):
    if "time_conv" in p:
        x = temporal_upsample(p["time_conv"], x)
    x = jnp.repeat(jnp.repeat(x, 2, axis=2), 2, axis=3)  # nearest-exact x2
    return causal_conv(p["resample"], x)


def dup_up(x, c_out, factor_t):
    """Wan 2.2's shortcut (diffusers DupUp3D): channels repeated, then spread over factor_t
    frames and 2 x 2 pixels; the first factor_t - 1 frames dropped (the causal first frame)."""
    b, t, h, w, c_in = x.shape
    x = jnp.repeat(x, c_out * factor_t * 4 // c_in, axis=-1)
    x = x.reshape(b, t, h, w, c_out, factor_t, 2, 2).transpose(0, 1, 5, 2, 6, 3, 7, 4)
    return x.reshape(b, t * factor_t, 2 * h, 2 * w, c_out)[:, factor_t - 1:]


def unpatchify(x, patch: int):
    """[B,T,H,W,C*p*p] (diffusers' channel order c, p_w, p_h) -> [B,T,H*p,W*p,C]."""
    b, t, h, w, cp = x.shape
    x = x.reshape(b, t, h, w, cp // patch ** 2, patch, patch)  # c, pw, ph
    return x.transpose(0, 1, 2, 6, 3, 5, 4).reshape(b, t, h * patch, w * patch, -1)


# ---- the decoder ---------------------------------------------------------------------------

def decode(cfg: WanVAEConfig, params, latents, *, layout=None):
    """Video [B,3,frames,H,W] in [-1, 1] (the config dtype) from normalised latents
    [B,z,T,h,w], the transformer's output: latents x std + mean, then the decoder."""
    layout = layout or LocalLayout()
    dt = jnp.dtype(cfg.dtype)
    mean = jnp.asarray(cfg.latents_mean, jnp.float32)
    inv_std = 1.0 / jnp.asarray(cfg.latents_std, jnp.float32)
    x = latents.astype(jnp.float32).transpose(0, 2, 3, 4, 1)
    x = (x / inv_std + mean).astype(dt)  # diffusers' WanPipeline: latents / (1/std) + mean
    constrain = lambda a: layout.constrain(a, VIDEO_AXES)
    x = causal_conv(params["post_quant_conv"], constrain(x))
    d = params["decoder"]
    x = constrain(causal_conv(d["conv_in"], x))
    mid = d["mid_block"]
    x = residual_block(mid["resnets"][0], x)
    x = residual_block(mid["resnets"][1], attention_block(mid["attentions"][0], x))
    for (d_in, d_out, mode, temporal), p in zip(up_blocks(cfg)[1], d["up_blocks"]):
        shortcut = x
        for r in p["resnets"]:
            x = constrain(residual_block(r, x))
        if mode:
            x = upsample(p["upsampler"] if cfg.is_residual else p["upsamplers"][0], x)
        if mode and cfg.is_residual:
            x = x + dup_up(shortcut, d_out, 2 if temporal else 1)
        x = constrain(x)
    x = jax.nn.silu(rms_norm(x, d["norm_out"]["gamma"]))
    x = causal_conv(d["conv_out"], x)
    if cfg.patch_size:
        x = unpatchify(x, cfg.patch_size)
    return jnp.clip(x, -1.0, 1.0).transpose(0, 4, 1, 2, 3)


# ---- the encoder (image to video conditioning) ---------------------------------------------

def down_blocks(cfg: WanVAEConfig):
    """Wan 2.1's encoder as diffusers' flat list: ("res", in, out) and ("down", dim, temporal)
    entries. Wan 2.2's levels are `residual_down_blocks`."""
    if cfg.is_residual:
        raise ValueError(f"{cfg.name} has residual down blocks: use residual_down_blocks")
    dims = [cfg.base_dim * m for m in (1,) + tuple(cfg.dim_mult)]
    out = []
    for i, (d_in, d_out) in enumerate(zip(dims[:-1], dims[1:])):
        for j in range(cfg.num_res_blocks):
            out.append(("res", d_in if j == 0 else d_out, d_out))
        if i != len(cfg.dim_mult) - 1:
            out.append(("down", d_out, cfg.temporal_downsample[i]))
    return dims, out


def residual_down_blocks(cfg: WanVAEConfig):
    """Wan 2.2's encoder levels (diffusers' WanResidualDownBlock): (in, out, downsamples,
    temporal) each; every level but the last halves height and width."""
    dims = [cfg.base_dim * m for m in (1,) + tuple(cfg.dim_mult)]
    last = len(cfg.dim_mult) - 1
    return dims, [(d_in, d_out, i != last, i != last and cfg.temporal_downsample[i])
                  for i, (d_in, d_out) in enumerate(zip(dims[:-1], dims[1:]))]


def _downsampler(key, c, temporal, dt):
    k1, k2 = jax.random.split(key)
    p = {"resample": _conv(k1, (3, 3), c, c, dt)}
    if temporal:
        p["time_conv"] = _conv(k2, (3, 1, 1), c, c, dt)
    return p


def _encoder_levels(cfg: WanVAEConfig, ks, dt):
    if cfg.is_residual:
        return [{"resnets": [_resnet(next(ks), d_in if j == 0 else d_out, d_out, dt)
                             for j in range(cfg.num_res_blocks)],
                 **({"downsampler": _downsampler(next(ks), d_out, temporal, dt)}
                    if down else {})}
                for d_in, d_out, down, temporal in residual_down_blocks(cfg)[1]]
    return [_resnet(next(ks), a, b, dt) if kind == "res" else _downsampler(next(ks), a, b, dt)
            for kind, a, b in down_blocks(cfg)[1]]


def init_encoder_params(cfg: WanVAEConfig, key):
    """Random parameters with the encoder's shapes (encoder and quant_conv). Its input is
    3 channels, or 3 x patch^2 after Wan 2.2's patchify."""
    dt = jnp.dtype(cfg.dtype)
    dims = [cfg.base_dim * m for m in (1,) + tuple(cfg.dim_mult)]
    ks = iter(jax.random.split(key, 8 + 4 * cfg.num_res_blocks * len(cfg.dim_mult)))
    d = dims[-1]
    c_in = 3 * (cfg.patch_size or 1) ** 2
    return {"encoder": {"conv_in": _conv(next(ks), (3, 3, 3), c_in, dims[0], dt),
                        "down_blocks": _encoder_levels(cfg, ks, dt),
                        "mid_block": {"resnets": [_resnet(next(ks), d, d, dt) for _ in range(2)],
                                      "attentions": [_attention(next(ks), d, dt)]},
                        "norm_out": {"gamma": jnp.ones((d,), dt)},
                        "conv_out": _conv(next(ks), (3, 3, 3), d, 2 * cfg.z_dim, dt)},
            "quant_conv": _conv(next(ks), (1, 1, 1), 2 * cfg.z_dim, 2 * cfg.z_dim, dt)}


def abstract_encoder_params(cfg: WanVAEConfig):
    return jax.eval_shape(lambda: init_encoder_params(cfg, jax.random.key(0)))


def downsample(p, x):
    """Zero pad right and bottom by 1, Conv2d 3x3 stride 2 per frame; temporal ones then
    keep frame 0 and run the (3,1,1) conv with stride 2, unpadded, over the whole clip:
    T = 1 + 2k frames -> 1 + k (diffusers' cache of one frame gives the same)."""
    x = jnp.pad(x, ((0, 0), (0, 0), (0, 1), (0, 1), (0, 0)))
    w = p["resample"]["w"][None].astype(x.dtype)
    x = lax.conv_general_dilated(x, w, (1, 2, 2), "VALID",
                                 dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))
    x = x + p["resample"]["b"].astype(x.dtype)
    if "time_conv" in p and x.shape[1] > 1:
        tc = p["time_conv"]
        y = lax.conv_general_dilated(x, tc["w"].astype(x.dtype), (2, 1, 1), "VALID",
                                     dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))
        x = jnp.concatenate([x[:, :1], y + tc["b"].astype(x.dtype)], axis=1)
    return x


def patchify(x, patch: int):
    """[B,T,H,W,C] -> [B,T,H/p,W/p,C*p*p], channels in diffusers' order (c, p_w, p_h)."""
    b, t, h, w, c = x.shape
    x = x.reshape(b, t, h // patch, patch, w // patch, patch, c)
    return x.transpose(0, 1, 2, 4, 6, 5, 3).reshape(b, t, h // patch, w // patch, -1)


def avg_down(x, c_out, factor_t, factor_s):
    """Wan 2.2's shortcut (diffusers AvgDown3D): zero frames in front up to a multiple of
    factor_t, each factor_t x factor_s x factor_s block's channels laid side by side
    (c, t, h, w order) and averaged in groups down to c_out. On a clip of 1 + 2k frames
    the one zero frame in front is what diffusers' chunks (1 frame, then 4) pad too."""
    b, t, h, w, c = x.shape
    x = jnp.pad(x, ((0, 0), (-t % factor_t, 0), (0, 0), (0, 0), (0, 0)))
    t, fs = x.shape[1] // factor_t, factor_s
    x = x.reshape(b, t, factor_t, h // fs, fs, w // fs, fs, c)
    x = x.transpose(0, 1, 3, 5, 7, 2, 4, 6).reshape(b, t, h // fs, w // fs, c_out, -1)
    return x.astype(jnp.float32).mean(-1).astype(x.dtype)


def residual_down_block(p, x, c_out, down, temporal):
    """Wan 2.2's encoder level: residual blocks and a downsampler, plus avg_down of the
    level's input."""
    shortcut = avg_down(x, c_out, 2 if temporal else 1, 2 if down else 1)
    for r in p["resnets"]:
        x = residual_block(r, x)
    if down:
        x = downsample(p["downsampler"], x)
    return x + shortcut


def _encoder_trunk(cfg: WanVAEConfig, e, x, constrain):
    """conv_in and the down levels: Wan 2.1's flat list or Wan 2.2's residual levels."""
    x = constrain(causal_conv(e["conv_in"], x))
    if cfg.is_residual:
        for (_, d_out, down, temporal), p in zip(residual_down_blocks(cfg)[1],
                                                 e["down_blocks"]):
            x = constrain(residual_down_block(p, x, d_out, down, temporal))
        return x
    for p in e["down_blocks"]:
        x = constrain(residual_block(p, x) if "conv1" in p else downsample(p, x))
    return x


def encode(cfg: WanVAEConfig, params, video, *, layout=None):
    """Normalised latents [B,z,1+(T-1)/4,H/s,W/s] (s = 8; Wan 2.2: 16) from video
    [B,3,T,H,W] in [-1, 1], T = 1 + 4k: the mean of the posterior, then (mu - mean) / std as
    the pipeline does. Wan 2.2 first patchifies 2 x 2 pixels into 12 channels."""
    layout = layout or LocalLayout()
    if (video.shape[2] - 1) % cfg.stride[0]:
        raise ValueError(f"{video.shape[2]} frames: the encoder takes 1 + "
                         f"{cfg.stride[0]}k frames")
    constrain = lambda a: layout.constrain(a, VIDEO_AXES)
    e = params["encoder"]
    x = constrain(video.astype(jnp.dtype(cfg.dtype)).transpose(0, 2, 3, 4, 1))
    if cfg.patch_size:
        x = patchify(x, cfg.patch_size)
    x = _encoder_trunk(cfg, e, x, constrain)
    mid = e["mid_block"]
    x = residual_block(mid["resnets"][0], x)
    x = residual_block(mid["resnets"][1], attention_block(mid["attentions"][0], x))
    x = causal_conv(e["conv_out"], jax.nn.silu(rms_norm(x, e["norm_out"]["gamma"])))
    mu = causal_conv(params["quant_conv"], x)[..., :cfg.z_dim].astype(jnp.float32)
    mean = jnp.asarray(cfg.latents_mean, jnp.float32)
    inv_std = 1.0 / jnp.asarray(cfg.latents_std, jnp.float32)
    return ((mu - mean) * inv_std).transpose(0, 4, 1, 2, 3).astype(video.dtype)

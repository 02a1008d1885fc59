"""The stages around the transformer loop as plannable models: the text encoder (UMT5, the
prompt and the negative prompt), the VAE decode of one video's latents and, for image to
video, the image encoder (CLIP) and the VAE encode of the conditioning clip, each under one
named sharding.

A stage spec has the ModelSpec interface of models/base.py, so jobs.Job, batch.run_jobs (worker
processes, the on-disk cache) and optimized_hlo (the analysis compile) take it as they take a
Wan preset. Its sharding is a strategies.Candidate (the mesh: degrees and axis names) plus a
*rename*: the model's logical axis -> the candidate's logical axis (batch -> data/fsdp,
length -> context, heads/mlp -> tensor, fsdp -> fsdp) or None (replicated). So a VAE split
along width is the candidate `context n` with width renamed to length, and a mesh axis no
logical axis is renamed to holds copies (MaxDiffusion's "redundant" axis).

    text_encoder_options(n) / vae_options(n) -> list[StageOption]   (every sharding offered)
    image_encoder_options(n) / vae_encode_options(n)                  (image to video)
    StageOption.spec(cfg) -> TextEncoderStage | VaeDecodeStage | ImageEncoderStage
                             | VaeEncodeStage                         (STAGES, by stage name)
    encoder_for(model) / vae_for(model)                              (the stage configs)
    image_stages_for(model) -> [(stage, cfg), ...]   the conditioning stages of image to video

Picklable and frozen; key() holds the config, the stage and its rename, so two shardings on
the same mesh (VAE height vs width) are two cache entries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax

from aoizora.models import clip_image, umt5, wan_vae
from aoizora.planning.strategies import Candidate

# The candidate's own logical axes (strategies.Candidate.rules).
_TARGETS = ("batch", "length", "heads", "mlp", "fsdp")


@dataclass(frozen=True)
class Renamed:
    """A strategies.Layout seen through a rename: the model's logical axes in, the
    candidate's out (None: replicated)."""

    layout: object
    rename: tuple  # ((model axis, candidate axis or None), ...)

    def axes(self, axes):
        table = dict(self.rename)
        return tuple(table.get(a) if a else None for a in axes)

    def constrain(self, x, axes):
        return self.layout.constrain(x, self.axes(axes))

    def gather(self, w, axes):
        return self.layout.gather(w, self.axes(axes))


def _rename_tree(tree, rename: tuple):
    import jax

    is_axes = lambda a: isinstance(a, tuple) and all(x is None or isinstance(x, str) for x in a)
    table = dict(rename)
    return jax.tree.map(lambda a: tuple(table.get(x) if x else None for x in a), tree,
                        is_leaf=is_axes)


@dataclass(frozen=True)
class _Stage:
    """What every stage shares: its config (cfg: the stage's model config), its rename, its
    name and cache key, its parameters, and its output axes through the rename (each stage
    names its own model_output_axes and `stage`)."""

    cfg: object
    rename: tuple

    @property
    def name(self) -> str:
        return self.cfg.name

    def key(self) -> dict:
        return {"stage": self.stage, "cfg": self.cfg.key(), "rename": list(self.rename)}

    def abstract_params(self):
        return self.cfg.abstract_params()

    def output_axes(self, workload):
        return Renamed(None, self.rename).axes(self.model_output_axes())


@dataclass(frozen=True)
class _Encoder(_Stage):
    """A transformer encoder over `batch` inputs (UMT5, CLIP): its weights take the rename."""

    batch: int = 1

    def key(self) -> dict:
        return {**super().key(), "batch": self.batch}

    def param_axes(self):
        return _rename_tree(self.cfg.param_axes(), self.rename)

    def abstract_inputs(self, workload):
        return self.cfg.abstract_inputs(self.batch)


@dataclass(frozen=True)
class TextEncoderStage(_Encoder):
    """UMT5 (cfg: umt5.UMT5Config) over `batch` prompts of cfg.text_len tokens -> Wan's text
    context [B,L,d] (umt5.text_context: the padded positions zeroed)."""

    batch: int = 2
    stage: str = "text_encoder"

    def input_axes(self, workload):
        a = Renamed(None, self.rename).axes(("batch", "length"))
        return (a, a)

    @staticmethod
    def model_output_axes():
        return ("batch", "length", None)

    def output_shape(self, workload) -> tuple:
        return (self.batch, self.cfg.text_len, self.cfg.d_model)

    def apply(self, params, ids, mask, *, workload, layout):
        return umt5.text_context(self.cfg, params, ids, mask,
                                 layout=Renamed(layout, self.rename))


@dataclass(frozen=True)
class VaeDecodeStage(_Stage):
    """The VAE decode (cfg: wan_vae.WanVAEConfig) of one video's latents [1,z,T,h,w] (the
    workload's latent grid)."""

    stage: str = "vae_decode"

    def param_axes(self):
        return self.cfg.param_axes()  # replicated: 73 M parameters (2.2: 555 M)

    def abstract_inputs(self, workload):
        return self.cfg.abstract_inputs(workload.latent_shape(), batch=1)

    def input_axes(self, workload):
        # latents [B,z,T,h,w]; VIDEO_AXES is channels-last [B,T,H,W,C]
        b, t, h, w, _ = wan_vae.VIDEO_AXES
        return (Renamed(None, self.rename).axes((b, None, t, h, w)),)

    @staticmethod
    def model_input_axes():
        b, t, h, w, _ = wan_vae.VIDEO_AXES
        return (b, None, t, h, w)

    def output_axes(self, workload):
        # the video [B,3,F,H,W]: F = 1 + 4 (T - 1) frames divides by no even degree, so a
        # frame split ends gathered in time; height and width stay split (x 8 or x 16)
        b, _, h, w, _ = wan_vae.VIDEO_AXES
        return Renamed(None, self.rename).axes((b, None, None, h, w))

    def apply(self, params, latents, *, workload, layout):
        return wan_vae.decode(self.cfg, params, latents, layout=Renamed(layout, self.rename))


@dataclass(frozen=True)
class StageOption:
    """One sharding of a stage: the mesh (a Candidate over all n devices) and the rename.
    `divides`: (model axis, degree) pairs whose dimension must divide by the degree for the
    option to mean what its name says (else it is skipped, not silently replicated)."""

    stage: str
    candidate: Candidate
    rename: tuple
    divides: tuple = ()
    source: str = ""       # where this sharding comes from (MaxDiffusion's, ...)

    @property
    def name(self) -> str:
        return self.candidate.name

    def spec(self, cfg):
        """The stage under this sharding; cfg is the stage's config (encoder_for, vae_for,
        or a config image_stages_for gives)."""
        return STAGES[self.stage](cfg, self.rename)


def _cand(name: str, data=1, fsdp=1, context=1, tensor=1) -> Candidate:
    return Candidate(name, data=data, fsdp=fsdp, context=context,
                     form="allgather_kv" if context > 1 else "none", tensor=tensor)


def text_encoder_options(n: int) -> list[StageOption]:
    """Shardings of the text encoder on n devices (batch 2: the prompt, the negative)."""
    te = "text_encoder"
    out = [StageOption(te, _cand("te-replicated", data=n), (),
                       source="every device encodes both prompts (one device's work)")]
    if n % 2 == 0:
        h = n // 2
        out.append(StageOption(te, _cand("te-data2", data=2, context=h) if h > 1
                               else _cand("te-data2", data=2), (("batch", "batch"),),
                               source="data parallel over the 2 prompts, copies beside"))
        if h > 1:
            out.append(StageOption(
                te, _cand(f"te-data2-tensor{h}", data=2, tensor=h),
                (("batch", "batch"), ("heads", "heads"), ("mlp", "mlp")),
                source="prompts over data, heads and FFN over tensor (Megatron)"))
            # The prompts ride the mesh's context axis here: Candidate.rules would put the
            # batch over data and fsdp together (4 ways for 2 prompts).
            out.append(StageOption(
                te, _cand(f"te-data2-fsdp{h}", fsdp=h, context=2),
                (("batch", "length"), ("fsdp", "fsdp")),
                source="prompts over 2, weights sharded over fsdp and gathered per layer"))
    if n > 1:
        out.append(StageOption(te, _cand(f"te-tensor{n}", tensor=n),
                               (("heads", "heads"), ("mlp", "mlp")),
                               source="heads and FFN over every device"))
    return out


def vae_options(n: int) -> list[StageOption]:
    """Shardings of the VAE decode on n devices: replicated, one spatial or temporal dim over
    all n (MaxDiffusion's is width: its VAE mesh ('redundant', 'vae_spatial') with
    vae_spatial -1 = every device and activations P('redundant', None, None, 'vae_spatial',
    None) on [B,T,H,W,C]), and height x width over 2 x n/2."""
    v = "vae_decode"
    out = [StageOption(v, _cand("vae-replicated", data=n), (),
                       source="every device decodes the whole video (one device's work)")]
    if n == 1:
        return out
    for dim in ("width", "height", "frames"):
        out.append(StageOption(
            v, _cand(f"vae-{dim}{n}", context=n), ((dim, "length"),), ((dim, n),),
            source="MaxDiffusion's vae_spatial (default -1: every device)" if dim == "width"
            else f"the latents' {dim} over every device"))
    if n % 2 == 0 and n > 2:
        h = n // 2
        out.append(StageOption(v, _cand(f"vae-height2-width{h}", context=h, tensor=2),
                               (("height", "heads"), ("width", "length")),
                               (("height", 2), ("width", h)),
                               source="a 2D spatial split"))
    return out


def encoder_for(model) -> umt5.UMT5Config:
    """Wan's text encoder for a preset, sized to the transformer's text context (the real
    presets: UMT5-XXL, 512 tokens of 4096; the tiny one: UMT5_TINY at its text_len, dim)."""
    text_len, text_dim = getattr(model, "text_len", 512), getattr(model, "text_dim", 4096)
    if (text_len, text_dim) == (umt5.UMT5_XXL.text_len, umt5.UMT5_XXL.d_model):
        return umt5.UMT5_XXL
    return umt5.UMT5_TINY.replace(text_len=text_len, d_model=text_dim)


def vae_for(model) -> wan_vae.WanVAEConfig:
    """The VAE a preset decodes with: Wan 2.2 TI2V-5B's (stride 16) or Wan 2.1's; the tiny
    Wan gets the tiny 2.1 VAE."""
    if getattr(model, "name", "") == "wan-tiny":
        return wan_vae.WAN21_VAE_TINY
    return wan_vae.WAN22_VAE if tuple(getattr(model, "vae_stride", (4, 8, 8)))[1] == 16 \
        else wan_vae.WAN21_VAE


def latent_dims(workload) -> dict[str, int]:
    """The VAE's input sizes by logical axis (one video)."""
    t, h, w = workload.latent_shape()
    return {"frames": t, "height": h, "width": w}


# ---- image to video conditioning -------------------------------------------------------------

@dataclass(frozen=True)
class ImageEncoderStage(_Encoder):
    """CLIP (cfg: clip_image.CLIPVisionConfig) over `batch` images (Wan 2.1 I2V: 1, the first
    frame) -> the image tokens [B,257,1280] (clip_image.image_context: hidden_states[-2]);
    both halves of the transformer's CFG pair read the same tokens."""

    stage: str = "image_encoder"

    def input_axes(self, workload):
        return (Renamed(None, self.rename).axes(("batch", None, None, None)),)

    @staticmethod
    def model_output_axes():
        return clip_image.ACT_AXES

    def output_shape(self, workload) -> tuple:
        return (self.batch, self.cfg.tokens, self.cfg.width)

    def apply(self, params, pixels, *, workload, layout):
        return clip_image.image_context(self.cfg, params, pixels,
                                        layout=Renamed(layout, self.rename))


@dataclass(frozen=True)
class ConditioningClip:
    """What a preset VAE-encodes for image to video (diffusers' prepare_latents): the image
    alone (TI2V-5B, expand_timesteps: its latent replaces latent frame 0) or the image and
    zero frames up to the video's length (Wan 2.1 I2V, Wan 2.2 I2V A14B)."""

    vae: wan_vae.WanVAEConfig
    image_only: bool = False

    @property
    def name(self) -> str:
        return self.vae.name

    def key(self) -> dict:
        return {"vae": self.vae.key(), "image_only": self.image_only}

    def video_shape(self, workload) -> tuple:
        """[1,3,F,H,W]: F = 1 for the image alone, else the workload's frames."""
        f = 1 if self.image_only else workload.frames
        return (1, 3, f, workload.height, workload.width)


@dataclass(frozen=True)
class VaeEncodeStage(_Stage):
    """The VAE encode of one video's conditioning clip (cfg: ConditioningClip) [1,3,F,H,W] ->
    normalised latents [1,z,1+(F-1)/4,h,w] (wan_vae.encode: the posterior's mean, as the
    pipeline takes it)."""

    stage: str = "vae_encode"

    def abstract_params(self):
        return wan_vae.abstract_encoder_params(self.cfg.vae)

    def param_axes(self):
        # replicated: 54 M parameters (Wan 2.2: 150 M)
        return jax.tree.map(lambda a: (None,) * a.ndim, self.abstract_params())

    def abstract_inputs(self, workload):
        dt = jax.numpy.dtype(self.cfg.vae.dtype)
        return (jax.ShapeDtypeStruct(self.cfg.video_shape(workload), dt),)

    def input_axes(self, workload):
        return (Renamed(None, self.rename).axes(self.model_input_axes()),)

    @staticmethod
    def model_input_axes():
        """The video [B,3,F,H,W] (VIDEO_AXES is channels-last [B,T,H,W,C])."""
        b, t, h, w, _ = wan_vae.VIDEO_AXES
        return (b, None, t, h, w)

    model_output_axes = model_input_axes  # the latents [B,z,T,h,w] keep the video's axes

    def output_shape(self, workload) -> tuple:
        _, _, f, hh, ww = self.cfg.video_shape(workload)
        st, sh, sw = self.cfg.vae.stride
        return (1, self.cfg.vae.z_dim, 1 + (f - 1) // st, hh // sh, ww // sw)

    def apply(self, params, video, *, workload, layout):
        return wan_vae.encode(self.cfg.vae, params, video, layout=Renamed(layout, self.rename))


STAGES = {"text_encoder": TextEncoderStage, "vae_decode": VaeDecodeStage,
          "image_encoder": ImageEncoderStage, "vae_encode": VaeEncodeStage}


def image_encoder_options(n: int, cfg: clip_image.CLIPVisionConfig = clip_image.CLIP_VIT_H14
                          ) -> list[StageOption]:
    """Shardings of the image encoder on n devices (one image; 257 tokens, a prime, so no
    sequence split): replicated, heads and MLP over the largest degree dividing the heads
    (copies on the rest), weights over every device gathered per layer."""
    ie = "image_encoder"
    out = [StageOption(ie, _cand("ie-replicated", data=n), (),
                       source="every device encodes the image (one device's work)")]
    t = math.gcd(n, cfg.heads)
    if t > 1:
        out.append(StageOption(ie, _cand(f"ie-tensor{t}", data=n // t, tensor=t),
                               (("heads", "heads"), ("mlp", "mlp")),
                               source="heads and MLP over tensor (Megatron)"
                               + (f", {n // t} copies" if n > t else "")))
    if n > 1 and cfg.width % n == 0:
        out.append(StageOption(ie, _cand(f"ie-fsdp{n}", fsdp=n), (("fsdp", "fsdp"),),
                               source="weights sharded over every device, gathered per layer"))
    return out


def vae_encode_options(n: int) -> list[StageOption]:
    """Shardings of the conditioning clip's VAE encode on n devices: replicated, height or
    width over all n, height 2 x width n/2 (the decode's spatial splits; no frame split:
    1 + 4k frames divide by no even degree). `divides` on the latent grid."""
    v = "vae_encode"
    out = [StageOption(v, _cand("vae-encode-replicated", data=n), (),
                       source="every device encodes the clip (one device's work)")]
    if n == 1:
        return out
    for dim in ("width", "height"):
        out.append(StageOption(v, _cand(f"vae-encode-{dim}{n}", context=n),
                               ((dim, "length"),), ((dim, n),),
                               source=f"the clip's {dim} over every device"))
    if n % 2 == 0 and n > 2:
        h = n // 2
        out.append(StageOption(v, _cand(f"vae-encode-height2-width{h}", context=h, tensor=2),
                               (("height", "heads"), ("width", "length")),
                               (("height", 2), ("width", h)), source="a 2D spatial split"))
    return out


def clip_for(model) -> clip_image.CLIPVisionConfig:
    """The image encoder of a preset with image tokens: ViT-H/14 for Wan 2.1 I2V's 257 x 1280;
    otherwise CLIP_TINY at the model's width. Raises ValueError when the tokens differ."""
    dim, tokens = model.image_dim, getattr(model, "image_len", clip_image.CLIP_VIT_H14.tokens)
    if (dim, tokens) == (clip_image.CLIP_VIT_H14.width, clip_image.CLIP_VIT_H14.tokens):
        return clip_image.CLIP_VIT_H14
    cfg = clip_image.CLIP_TINY.replace(width=dim)
    if cfg.tokens != tokens:
        raise ValueError(f"{model.name} takes {tokens} image tokens; {cfg.name} gives "
                         f"{cfg.tokens}")
    return cfg


def image_stages_for(model) -> list[tuple[str, object]]:
    """The stages image to video adds before the loop, as (stage, config for
    StageOption.spec): the image encoder where the transformer takes image tokens
    (image_dim: Wan 2.1 I2V), the VAE encode where it takes image latents: the clip where
    they are input channels beside the noise (I2V: 16 + 4 mask + 16), the image alone
    where they replace latent frame 0 (per_token_time: TI2V-5B). [] for text to video."""
    out = []
    if getattr(model, "image_dim", None):
        out.append(("image_encoder", clip_for(model)))
    if model.in_dim > model.out_dim:
        out.append(("vae_encode", ConditioningClip(vae_for(model))))
    elif getattr(model, "per_token_time", False):
        out.append(("vae_encode", ConditioningClip(vae_for(model), image_only=True)))
    return out

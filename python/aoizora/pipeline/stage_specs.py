"""The stages around the transformer loop as plannable models: the text encoder (UMT5, the
prompt and the negative prompt) and the VAE decode of one video's latents, each under one
named sharding.

A stage spec has the ModelSpec interface of models/base.py, so compiler.Job, run_jobs (worker
processes, the on-disk cache) and optimized_hlo (the analysis compile) take it as they take a
Wan preset. Its sharding is a strategies.Candidate (the mesh: degrees and axis names) plus a
*rename*: the model's logical axis -> the candidate's logical axis (batch -> data/fsdp,
length -> context, heads/mlp -> tensor, fsdp -> fsdp) or None (replicated). So a VAE split
along width is the candidate `context n` with width renamed to length, and a mesh axis no
logical axis is renamed to holds copies (MaxDiffusion's "redundant" axis).

    text_encoder_options(n) / vae_options(n) -> list[StageOption]   (every sharding offered)
    StageOption.spec(cfg, workload) -> TextEncoderStage | VaeDecodeStage
    encoder_for(model) / vae_for(model)                              (the stage configs)

Picklable and frozen; key() holds the config, the stage and its rename, so two shardings on
the same mesh (VAE height vs width) are two cache entries.
"""

from __future__ import annotations

from dataclasses import dataclass

from aoizora.models import umt5, wan_vae
from aoizora.strategies import Candidate

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
class TextEncoderStage:
    """UMT5 over `batch` prompts of cfg.text_len tokens -> Wan's text context [B,L,d]
    (umt5.text_context: the padded positions zeroed)."""

    cfg: umt5.UMT5Config
    rename: tuple
    batch: int = 2
    stage: str = "text_encoder"

    @property
    def name(self) -> str:
        return self.cfg.name

    def key(self) -> dict:
        return {"stage": self.stage, "cfg": self.cfg.key(), "rename": list(self.rename),
                "batch": self.batch}

    def abstract_params(self):
        return self.cfg.abstract_params()

    def param_axes(self):
        return _rename_tree(self.cfg.param_axes(), self.rename)

    def abstract_inputs(self, workload):
        return self.cfg.abstract_inputs(self.batch)

    def input_axes(self, workload):
        a = Renamed(None, self.rename).axes(("batch", "length"))
        return (a, a)

    def output_axes(self, workload):
        return Renamed(None, self.rename).axes(self.model_output_axes())

    @staticmethod
    def model_output_axes():
        return ("batch", "length", None)

    def output_shape(self, workload) -> tuple:
        return (self.batch, self.cfg.text_len, self.cfg.d_model)

    def apply(self, params, ids, mask, *, workload, layout):
        return umt5.text_context(self.cfg, params, ids, mask,
                                 layout=Renamed(layout, self.rename))


@dataclass(frozen=True)
class VaeDecodeStage:
    """The VAE decode of one video's latents [1,z,T,h,w] (the workload's latent grid)."""

    cfg: wan_vae.WanVAEConfig
    rename: tuple
    stage: str = "vae_decode"

    @property
    def name(self) -> str:
        return self.cfg.name

    def key(self) -> dict:
        return {"stage": self.stage, "cfg": self.cfg.key(), "rename": list(self.rename)}

    def abstract_params(self):
        return self.cfg.abstract_params()

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
        if self.stage == "text_encoder":
            return TextEncoderStage(cfg, self.rename)
        return VaeDecodeStage(cfg, self.rename)


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

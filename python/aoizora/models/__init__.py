"""The model zoo: name -> ModelSpec, and the workloads.

    get_model("wan2.1-t2v-14b", blocks=2)   # the two-block compile proxy
    get_workload("720p", 81)                # or get_workload("720p-81f"): Wan 2.1's VAE grid
    get_workload("720p", 121, model="wan2.2-ti2v-5b")  # 704x1280 on that model's VAE grid
    MODELS                                  # name -> preset
"""

from __future__ import annotations

from aoizora.models.experts import WanExperts
from aoizora.models.presets import PRESETS
from aoizora.models.video import TINY_VIDEO, Video, video
from aoizora.models.wan import WanConfig

__all__ = ["MODELS", "RESOLUTIONS", "FRAMES", "WanConfig", "WanExperts", "Video", "default_video",
           "get_model", "get_workload", "paper_workloads"]

MODELS: dict[str, WanConfig] = dict(PRESETS)
RESOLUTIONS = ("480p", "720p")
FRAMES = (21, 41, 81)


def get_model(name: str, blocks: int | None = None) -> WanConfig:
    """A preset by name; blocks=N gives the N-block proxy (every shape kept)."""
    if name not in MODELS:
        raise KeyError(f"unknown model {name!r}: use one of {', '.join(sorted(MODELS))}")
    cfg = MODELS[name]
    return cfg.blocks(blocks) if blocks is not None else cfg


def get_workload(resolution: str, frames: int | None = None,
                 model: str | WanConfig | None = None) -> Video:
    """"720p", 81 or "720p-81f"; "tiny" gives the test workload of wan-tiny. With `model`
    (a name or a config) the resolution is one of that model's sizes on its VAE's latent
    grid; without, Wan 2.1's (480p 832x480, 720p 1280x720, VAE stride (4, 8, 8))."""
    if resolution == "tiny" or resolution == TINY_VIDEO.name:
        return TINY_VIDEO
    if frames is None:
        resolution, _, f = resolution.partition("-")
        frames = int(f.rstrip("f"))
    if model is None:
        return video(resolution, frames)
    cfg = get_model(model) if isinstance(model, str) else model
    return cfg.video(resolution, frames)


def default_video(model, preferred: str = "480p") -> str:
    """`preferred` if the model (a name or a config) is made for it, else the model's first
    size (an unknown model gets `preferred`, and the model check reports it)."""
    cfg = MODELS.get(model) if isinstance(model, str) else model
    sizes = dict(cfg.sizes) if cfg is not None else {}
    return preferred if preferred in sizes or not sizes else next(iter(sizes))


def paper_workloads() -> list[Video]:
    return [video(r, f) for r in RESOLUTIONS for f in FRAMES]

"""The model zoo: name -> ModelSpec, and the paper's workloads.

    get_model("wan2.1-t2v-14b", blocks=2)   # the two-block compile proxy
    get_workload("720p", 81)                # or get_workload("720p-81f")
    MODELS                                  # name -> preset
"""

from __future__ import annotations

from aoizora.models.wan import PRESETS, TINY_VIDEO, Video, WanConfig, video

MODELS: dict[str, WanConfig] = dict(PRESETS)
RESOLUTIONS = ("480p", "720p")
FRAMES = (21, 41, 81)


def get_model(name: str, blocks: int | None = None) -> WanConfig:
    """A preset by name; blocks=N gives the N-block proxy (every shape kept)."""
    if name not in MODELS:
        raise KeyError(f"unknown model {name!r}: use one of {', '.join(sorted(MODELS))}")
    cfg = MODELS[name]
    return cfg.blocks(blocks) if blocks is not None else cfg


def get_workload(resolution: str, frames: int | None = None) -> Video:
    """"720p", 81 or "720p-81f"; "tiny" gives the test workload of wan-tiny."""
    if resolution == "tiny" or resolution == TINY_VIDEO.name:
        return TINY_VIDEO
    if frames is None:
        res, _, f = resolution.partition("-")
        return video(res, int(f.rstrip("f")))
    return video(resolution, frames)


def paper_workloads() -> list[Video]:
    return [video(r, f) for r in RESOLUTIONS for f in FRAMES]

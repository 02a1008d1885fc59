"""The video workload of a Wan model: one denoising step of `frames` frames at height x width.

The latent grid comes from the *model's* VAE: Wan 2.1 and Wan 2.2 A14B compress by (4, 8, 8)
(time, height, width), Wan 2.2 TI2V-5B by (4, 16, 16), so the same pixels give 4x fewer
tokens per frame there. A Video therefore carries the VAE stride it was made for; build it
with the model's `cfg.video(resolution, frames)` (or models.get_workload(..., model=...)).

    Video.latent_shape() -> (latent frames, latent height, latent width)
    Video.tokens         -> latent tokens of one sample under Wan's (1, 2, 2) patch
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

VAE_STRIDE = (4, 8, 8)  # Wan 2.1 VAE: (time, height, width); Wan 2.2's TI2V VAE is (4, 16, 16)
RESOLUTIONS = {"480p": (480, 832), "720p": (720, 1280)}  # (height, width) in pixels


@dataclass(frozen=True)
class Video:
    """A workload: one denoising step of a video of `frames` frames at height x width pixels,
    compressed by the VAE `vae_stride`. batch 2 = classifier-free guidance as a batch
    (conditional, unconditional)."""

    name: str
    height: int
    width: int
    frames: int
    batch: int = 2
    guidance: float | None = 5.0  # combine the CFG pair into one prediction (None: return both)
    vae_stride: tuple[int, int, int] = VAE_STRIDE

    def latent_shape(self) -> tuple[int, int, int]:
        st, sh, sw = self.vae_stride
        return (self.frames - 1) // st + 1, self.height // sh, self.width // sw

    @property
    def tokens(self) -> int:
        """Sequence length of one sample under Wan's (1, 2, 2) patch: latent frames x
        (latent height / 2) x (latent width / 2) (480p 21 frames at stride 8: 6 x 30 x 52 =
        9,360; 704x1280 121 frames at stride 16: 31 x 22 x 40 = 27,280)."""
        f, h, w = self.latent_shape()
        return f * (h // 2) * (w // 2)

    def key(self) -> dict:
        return dataclasses.asdict(self)


def video(resolution: str, frames: int, batch: int = 2, *, sizes: dict | None = None,
          vae_stride: tuple[int, int, int] = VAE_STRIDE) -> Video:
    """The workload `resolution` (a name in `sizes`, default RESOLUTIONS) at `frames` frames
    (4k+1 for a temporal stride of 4). Raises ValueError naming what is allowed."""
    sizes = RESOLUTIONS if sizes is None else sizes
    if resolution not in sizes:
        raise ValueError(f"unknown resolution {resolution!r}: use one of {sorted(sizes)}")
    if (frames - 1) % vae_stride[0]:
        raise ValueError(f"frames must be {vae_stride[0]}k+1 (the VAE's temporal stride), "
                         f"got {frames}")
    h, w = sizes[resolution]
    return Video(f"{resolution}-{frames}f", h, w, frames, batch, vae_stride=vae_stride)


# A tiny workload for the tiny model: 3 latent frames of 6x8 -> 3 x 3 x 4 = 36 tokens (not a
# multiple of 8, so 8-way context parallelism exercises the padding).
TINY_VIDEO = Video("tiny-9f", height=48, width=64, frames=9)

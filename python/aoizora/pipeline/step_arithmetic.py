"""The arithmetic of one denoising step between transformer forwards, as a plannable stage:
the classifier-free-guidance combine of the transformer's output pair and the UniPC update
of the latents (models/scheduler.py). One program serves every step: the step index is an
input, as in MaxDiffusion's jitted FlaxUniPCMultistepScheduler.step.

The interface is TextEncoderStage's (stage_specs.py; models/base.py ModelSpec), so
jobs.Job and batch.run_jobs take it as they take a Wan preset. No parameters.

    StepArithmeticStage(model, run=FlowUniPC(steps, flow_shift), guidance=5.0)
    inputs:  the CFG pair [2, z, T, h, w] (the model's dtype; the prompt's first), the latents
             [1, z, T, h, w] float32, the UniPCState's three arrays (as the latents), the
             step index (int32 scalar)
    output:  (next latents, UniPCState), every array laid out as output_axes(workload)

Layout: the latents as the transformer leaves its output, model.output_axes(workload) with
the batch of one video never split (replicated for every Wan preset); `latent_axes`
overrides it. The pair keeps the transformer's batch axis and the latents' other axes, so a
pair split over data is gathered for the combine. A guided workload's transformer already
combines the pair (models/wan.py); this stage's combine is then counted twice (a few
elementwise ops over the latents). Wan 2.2's two guidance scales are two stages.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from aoizora.models import scheduler

LATENT_DIMS = 5  # [B, z, T, h, w]


@dataclass(frozen=True)
class StepArithmeticStage:
    model: object                        # the transformer (WanConfig): channels, dtype, layout
    run: scheduler.FlowUniPC             # the scheduler of the run (steps, flow shift)
    guidance: float = 5.0                # CFG scale of the steps this stage serves
    latent_axes: tuple | None = None     # None: as the transformer's output
    stage: str = "step_arithmetic"

    @property
    def name(self) -> str:
        return f"{self.model.name}:{self.stage}"

    def key(self) -> dict:
        return {"stage": self.stage, "model": self.model.key(),
                "run": dataclasses.asdict(self.run), "guidance": self.guidance,
                "latent_axes": None if self.latent_axes is None else list(self.latent_axes)}

    # An empty dict, not (): compiler.build reads a tuple of names or None as one array's axes.
    def abstract_params(self):
        return {}

    def param_axes(self):
        return {}

    def axes(self, workload) -> tuple:
        """The latents' logical axes."""
        if self.latent_axes is not None:
            return tuple(self.latent_axes)
        axes = tuple(self.model.output_axes(workload))
        axes = (None,) * (LATENT_DIMS - len(axes)) + axes  # a guided output has no batch dim
        return (None,) + axes[1:]  # one video: its batch of 1 is never split

    def abstract_inputs(self, workload):
        shape = (self.model.out_dim, *workload.latent_shape())
        latents = jax.ShapeDtypeStruct((1, *shape), jnp.float32)
        return (jax.ShapeDtypeStruct((2, *shape), jnp.dtype(self.model.dtype)),
                latents, latents, latents, latents, jax.ShapeDtypeStruct((), jnp.int32))

    def input_axes(self, workload):
        lat = self.axes(workload)
        return (("batch",) + lat[1:], lat, lat, lat, lat, ())

    def output_axes(self, workload):
        return self.axes(workload)

    def apply(self, params, pair, latents, x0_prev, x0_prev2, last_sample, i, *, workload,
              layout):
        guided = layout.constrain(scheduler.cfg_combine(pair, self.guidance)[None],
                                  self.axes(workload))
        state = scheduler.UniPCState(x0_prev, x0_prev2, last_sample)
        return scheduler.step(self.run, state, guided, latents, i)


def step_arithmetic_for(model, guidance: float | None = None) -> StepArithmeticStage:
    """The stage at the preset's run (scheduler.DENOISING): its steps, flow shift and first
    guidance scale (Wan 2.2 A14B: the high-noise expert's; pass the other for its steps)."""
    run = scheduler.denoising(model.name)
    return StepArithmeticStage(model, run.scheduler(),
                               run.guidance[0] if guidance is None else guidance)

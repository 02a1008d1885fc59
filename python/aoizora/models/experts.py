"""Wan 2.2 A14B: two experts of one shape, switched by timestep (Wan-Video/Wan2.2
wan/text2video.py and wan/image2video.py; diffusers WanPipeline `transformer`,
`transformer_2`, `boundary_ratio`).

The high-noise expert denoises the steps with t >= boundary_ratio x 1000 (the number of
training timesteps), the low-noise expert the rest. Both have the shape of the Wan 14B
transformer, so one compiled step, hence one plan (sharding and placement), serves both:
the step is the same program whichever expert's weights it is given.

Memory: the experts are either both resident in HBM (`resident=2`, the default: no
weight traffic at the switch) or swapped in turn (`resident=1`, as Wan's `offload_model`
does through host memory). The planned step takes every resident expert's weights as
arguments, `params = (running expert, other resident experts...)`, with the same shardings;
it computes with the first, and the others stay arguments (`keep_unused`, which
compiler.build reads). So Stage 1's memory check (entry-argument bytes per device) and
XLA's own allocation both count `resident` experts' weights, sharded as the plan shards
them. (keep_unused also skips jax's dead-code pass inside loops: Stage 1 sees a dead loop
carry or two more than in the one-expert program, ~0.1 % of peak activations.)

    WanExperts(... WanConfig fields ..., experts=2, resident=2, boundary_ratio=0.875)
    cfg.param_count()          every expert (the model's size)
    cfg.expert_param_count()   one expert (diffusers' count of one transformer)
    cfg.resident_weight_bytes()  the weights held in HBM by the whole slice
    cfg.expert_for(t)          0 (high noise) or 1 (low noise) for a timestep in [0, 1000]
    cfg.describe()             what a plan records: experts, resident, the boundary
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import jax
import jax.numpy as jnp

from aoizora.models.wan import WanConfig, forward

TRAIN_TIMESTEPS = 1000  # Wan's num_train_timesteps: the boundary is a ratio of it


@dataclass(frozen=True)
class WanExperts(WanConfig):
    experts: int = 2               # experts of equal shape, one per timestep range
    resident: int = 2              # experts held in HBM at once (1 to experts)
    boundary_ratio: float = 0.875  # high-noise expert for t >= boundary_ratio x 1000
    # The step reads only the first expert; the others must stay arguments (compiler.build).
    keep_unused: ClassVar[bool] = True

    def __post_init__(self):
        if not 1 <= self.resident <= self.experts:
            raise ValueError(f"{self.name}: resident experts must be 1 to {self.experts}, "
                             f"got {self.resident}")

    def expert(self) -> WanConfig:
        """One expert as a plain Wan model (its shapes; every expert has them)."""
        fields = {f: getattr(self, f) for f in WanConfig.__dataclass_fields__}
        return WanConfig(**fields)

    def expert_for(self, t: float) -> int:
        """The expert that denoises timestep t: 0 (high noise) or 1 (low noise)."""
        return 0 if t >= self.boundary_ratio * TRAIN_TIMESTEPS else 1

    def abstract_params(self):
        return (self.expert().abstract_params(),) * self.resident

    def param_axes(self):
        return (self.expert().param_axes(),) * self.resident

    def expert_param_count(self) -> int:
        return self.expert().param_count()

    def param_count(self) -> int:
        return self.experts * self.expert_param_count()

    def resident_weight_bytes(self) -> int:
        """Bytes of the resident experts' weights over the whole slice (before sharding)."""
        per = sum(math.prod(x.shape) * jnp.dtype(x.dtype).itemsize
                  for x in jax.tree.leaves(self.expert().abstract_params()))
        return self.resident * per

    def describe(self) -> dict:
        """What a plan records of the experts: this one plan serves every expert."""
        return {"experts": self.experts, "resident_experts": self.resident,
                "expert_params": self.expert_param_count(),
                "boundary_ratio": self.boundary_ratio, "plan_serves_every_expert": True}

    def apply(self, params, x, t, context, image_tokens=None, *, workload, layout=None):
        """One step of the expert whose weights come first in `params` (the others stay
        resident). The same program serves either expert: pass (high, low) for t >= the
        boundary and (low, high) below it."""
        return forward(self, params[0], x, t, context, image_tokens, workload=workload,
                       layout=layout)

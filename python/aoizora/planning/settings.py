"""What one plan() is asked to do (Settings) and whom it tells how it goes (Progress).

Settings is a plain record: each field's default and meaning beside it. The planner and every
module of its phases read it; none writes it. Progress receives the phases' names and
notes; the CLI shows them (progress.py), tests ignore them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aoizora.compile.cache import Cache
from aoizora.planning import flag_search, model_draws, speedups


@dataclass
class Settings:
    top_k: int | None = None          # None: the K chosen from measured recall (stage1)
    workers: int | None = None        # compile processes; None: one per two cores
    cache: Cache | None = field(default_factory=Cache)
    oracle: bool = False              # also simulate every candidate x every placement
    search_iters: int = 2000          # local-search steps per survivor (0: none)
    seed: int = 0
    compile_target: str = "tpu"       # "tpu": the slice's TPU via libtpu; "cpu": CPU devices
    hardware: str | None = None       # a hardware profile file replacing the chip figures
    executor: Any = None              # where jobs run (executor.py); None: local processes
    full_compile: bool = False        # TPU: every candidate through the TPU backend, not
                                      # only the plan's and the baselines' (optimized_hlo.py)
    run_ahead: bool = True            # the existing deployments' compiles start with the plan,
                                      # beside lowering and Stage 1 (prefetch.py)
    verify: bool = False              # TPU: the plan's sharding through the TPU backend
                                      # even where the analysis predicts its verdict
    verify_baselines: bool = False    # TPU: the baselines' shardings (and the plan's) through
                                      # the TPU backend; else only those whose verdict the
                                      # analysis cannot predict (compile_policy.backend_prediction)
    video: bool = True                # price the whole video: the stages around the loop
                                      # (pipeline/plan_video.py), the plan the best per video
    steps: int | None = None          # denoising steps; None: the model's MaxDiffusion config
    robust: bool = False              # the plan: the lowest high end of its interval (the best
                                      # worst case, intervals.py), not the best point figure
    flags: str = "none"               # compiler flags: "none", "published" (MaxDiffusion's set
                                      # for the generation) or "search" (flag_search.py)
    flag_budget: int = flag_search.FLAG_BUDGET  # --flags search: compiles under flags at most
    draws: int = model_draws.DRAWS    # joint draws of the chip's figures (model_draws.py)
    defend_p: float = speedups.DEFEND  # P(better) a change to what the user runs needs
                                      # (confidence.py); 0: the best point figure, always
    runtime: str = "jax"              # who runs the plan (strategies.RUNTIMES): every candidate
                                      # is priced as that runtime executes it


class Progress:
    """Receives the planner's phases; the CLI shows them with rich, tests ignore them."""

    def phase(self, name: str, total: int | None = None) -> None: ...
    def advance(self, detail: str = "") -> None: ...
    def note(self, text: str) -> None: ...

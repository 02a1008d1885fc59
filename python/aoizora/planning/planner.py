"""The planner end to end: `aoizora.plan(...)` and `aoizora plan`.

    candidates (candidate_filter)  ->  lower each (parallel, cached)  ->  Stage 1: Q1 +
      memory, Top-K  ->  compile the Top-K for the TPU target (parallel, cached)  ->  Stage 2:
      every placement each survivor allows, ranked by Q2  ->  the simulator judges the few
      best pairs: the decision (decision.py)  ->  the baselines' shardings analysed (the ones
      not in the Top-K) and simulated for the comparison (baseline_pairs.py)  ->  pooled
      (pooling.py)  ->  Plan (plan_record.py). A sharding goes through the TPU backend (a
      full compile, the backend's own checks) only where its verdict cannot be predicted
      from the analysis (compile_policy.py: HBM and VMEM), or when asked: the plan's with
      Settings.verify, every baseline's too with Settings.verify_baselines.

The blocks of the model run under `lax.scan`, so the compiled HLO holds one block body in a
while loop whose trip count is the real layer count: compiling the whole model costs what
the paper's two-block proxy costs, and every figure is for the full forward pass.

plan() is the entry; Settings, Progress and PlanResult are importable from here. The phases
share one run_state.Run.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace

from aoizora.compile import jaxenv  # noqa: F401
from aoizora.compile.compile_target import CompileTarget, compile_target_for
from aoizora.compile.jobs import runs_in_process
from aoizora.compile.prefetch import Prefetch
from aoizora.errors import UserError
from aoizora.models.base import FunctionSpec
from aoizora.planning import (baseline_pairs, baselines, candidate_filter, decision,
                              flag_search, oracle, plan_record, plan_uncertainty, pooling)
from aoizora.planning.decision import SIMULATED_PAIRS
from aoizora.planning.plan_record import PlanResult
from aoizora.planning.run_state import Run
from aoizora.planning.settings import Progress, Settings
from aoizora.planning.stage2 import Stage2

__all__ = ["MAX_CHIPS_PER_AXIS", "PlanResult", "Progress", "SIMULATED_PAIRS", "Settings",
           "plan", "resolve", "start_run"]

# The most chips along one axis libtpu 0.0.42.1's TPU compiler takes: it describes larger
# slices (v5e:100x100 in 0.3 s) but aborts compiling for them ("Check failed:
# Topology()->chip_bounds().x <= 16 (100 vs. 16)", target.cc), after lowering and Stage 1.
MAX_CHIPS_PER_AXIS = 16


def resolve(model, video: str | None, frames: int | None, batch: int = 1):
    """(ModelSpec, Video) or (FunctionSpec, None), checked up front (validate.workload):
    UserError on bad input. `model` is a preset name or a spec (user_model.load); `batch`
    videos per call make the workload's batch 2 x batch (each video's CFG pair)."""
    from aoizora.inputs import validate

    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise UserError(f"--batch {batch}: videos per call must be a whole number >= 1")
    if isinstance(model, FunctionSpec):
        if video is not None or frames is not None:
            raise UserError(f"--video/--frames: {model.name} is a function spec, its "
                            "arguments fix its sizes; leave them out")
        if batch != 1:
            raise UserError(f"--batch {batch}: {model.name} is a function spec, its "
                            "arguments fix its batch; leave --batch out")
        return model, None
    cfg, wl = validate.workload(model, video, frames)
    if batch != 1:
        if not hasattr(wl, "batch"):
            raise UserError(f"--batch {batch}: this workload has no batch of videos")
        wl = replace(wl, batch=2 * batch)
    return cfg, wl


def _what(name: str, video: str | None, wl) -> str:
    """"wan-tiny at tiny 9 frames", or the function's name."""
    return name if wl is None else f"{name} at {video} {wl.frames} frames"


def start_run(cfg, wl, topology: str, settings: Settings, progress: Progress) -> Run:
    """The Run of one plan of `cfg` at `wl` on `topology`: its Stage 2, compile target and
    compiler flags. UserError for a slice libtpu cannot compile for."""
    stage2 = Stage2.for_topology(topology, seed=settings.seed, search_iters=settings.search_iters,
                                 hardware=settings.hardware)
    run = Run(settings, progress, cfg, wl, stage2,
              compile_target_for(stage2.topology, settings.compile_target))
    _check_compilable(run.target, topology)
    run.flag_set = flag_search.plan_flags(settings.flags, stage2.topology.spec["generation"],
                                          run.target.platform, runs_in_process(cfg))
    return run


def plan(model="wan2.1-t2v-1.3b", video: str | None = "480p", frames: int | None = 21,
         topology: str = "v5e:2x4", settings: Settings | None = None,
         progress: Progress | None = None, batch: int = 1) -> PlanResult:
    """Plans the sharding and placement of `model` (a preset name, or a ModelSpec or
    FunctionSpec such as user_model.load gives; a FunctionSpec takes video=None,
    frames=None) on `topology`, `batch` videos per call (every program compiled at the
    batch 2 x batch: each video's CFG pair). Raises UserError on bad input, NoFitError when
    no candidate fits."""
    settings = settings or Settings()
    progress = progress or Progress()
    cfg, wl = resolve(model, video, frames, batch)
    name = model if isinstance(model, str) else cfg.name
    run = start_run(cfg, wl, topology, settings, progress)
    progress.note(f"compiling for {_describe_target(run.target)}")
    candidates = candidate_filter.enumerate_candidates(run, name)
    run.ahead = _run_ahead(run, candidates)
    try:
        s1, top = decision.run_stage1(run, candidates, no_fit=f"{_what(name, video, wl)} fits "
                                                             f"in no sharding on {topology}")
        survivors = decision.compile_top_k(run, candidates, s1, top)
        ranked = decision.rank_placements(run, survivors)
        pool = decision.decide(run, ranked)
        base_cands = baselines.baseline_candidates(
            run.cfg, s1, run.stage2.topology.link_bandwidth, run.stage2.topology.hop_latency)
        pool = decision.backend_accepted_decision(run, pool, base_cands.values())
        base_pairs = baseline_pairs.baseline_pairs(run, s1, base_cands, pool, ranked)
        whole = _video_model(run)
        run.pricer = plan_uncertainty.pricer(run, whole)
        pool, base_pairs = pooling.backend_accepted_pool(run, pool, base_pairs, whole)
    finally:
        run.ahead.close()
    best_oracle, pool, base_pairs = oracle.oracle_and_refusals(run, candidates, s1, pool,
                                                               base_pairs, whole)
    return plan_record.build_result(run, {"name": name, "video": video}, candidates, s1, top,
                                    ranked, pool, base_pairs, whole, best_oracle)


def _check_compilable(target: CompileTarget, topology: str) -> None:
    """UserError, before any work, for a TPU target libtpu cannot compile for (an axis of
    more than MAX_CHIPS_PER_AXIS chips)."""
    if target.platform != "tpu":
        return
    dims = [int(d) for d in target.name.partition(":")[2].split("x")]
    if max(dims) > MAX_CHIPS_PER_AXIS:
        raise UserError(f"{topology}: libtpu compiles for at most {MAX_CHIPS_PER_AXIS} chips "
                        f"along an axis, this slice has {max(dims)} ({target.name}); plan a "
                        "slice within that, or use --compile-target cpu (XLA's CPU pipeline, "
                        "not the TPU's programs)")


def _run_ahead(run: Run, candidates: list) -> Prefetch:
    """Starts the existing deployments' compiles (analysis, then full on TPU targets) now:
    their shardings are known from the enumeration, and on this machine they take only the
    cores the plan's own work leaves idle (prefetch.py)."""
    if not run.settings.run_ahead:
        return Prefetch()
    deployed = [c for c in candidates if c.baselines]
    kinds = [run.analysis_kind] + (["compile"] if run.analysis_kind == "analyze"
                                   and run.settings.verify_baselines else [])
    return Prefetch.start([run.job(k, c) for k in kinds for c in deployed],
                          run.settings.cache, run.settings.executor)


def _video_model(run: Run):
    """The whole video (pipeline/plan_video.py): the stages around the loop compiled once for
    the setting and simulated. None, with run.video_why, when not asked (Settings.video),
    for a function spec or a model that is not a Wan video model."""
    from aoizora.pipeline import plan_video

    run.video_why = ("not asked (--no-video)" if not run.settings.video
                     else "a function spec: only its forward is planned" if run.wl is None
                     else plan_video.plannable(run.cfg) or "")
    if run.video_why:
        return None
    steps, source, switch = plan_video.steps_for(run.cfg, run.settings.steps)
    t0 = time.perf_counter()
    run.progress.phase("price the text encoder and the VAE decode (once per setting)")
    stages = plan_video.price_stages(
        run.cfg, run.wl, run.stage2, cache=run.settings.cache,
        # one analysis per core, as compile_policy runs them: each is mostly one thread
        workers=run.settings.workers or (None if run.settings.executor else os.cpu_count()),
        executor=run.settings.executor, platform=run.target.platform,
        progress=lambda done, total, out: run.progress.advance(
            f"{out.name}{' (cached)' if out.cached else ''}"))
    for o in stages.options:  # a dim that does not divide is expected; a failure is not
        if o.error and o.compiled:
            run.progress.note(f"{o.stage} {o.sharding} not priced: {o.error}")
    run.lap("video_stages", t0)
    return plan_video.VideoModel(run.cfg, run.wl, run.stage2, steps, stages, source, switch,
                                 run.settings.runtime)


def _describe_target(target: CompileTarget) -> str:
    if target.platform == "cpu":
        return (f"{target.devices} CPU devices (--compile-target cpu: XLA's CPU pipeline, "
                "not the TPU's)")
    wrapped = [a for a, w in zip("xyz", target.wrap[:len(target.name.split("x"))]) if w]
    wrap = f"wraparound on {', '.join(wrapped)}" if wrapped else "no wraparound"
    return f"TPU {target.name} ({target.devices} devices, {wrap}) via libtpu, deviceless"

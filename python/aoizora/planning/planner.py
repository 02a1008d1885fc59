"""The planner end to end: `aoizora.plan(...)` and `aoizora plan`.

    candidates (strategies)  ->  lower each (parallel, cached)  ->  Stage 1: Q1 + memory, Top-K
      ->  compile the Top-K for the TPU target (parallel, cached)  ->  Stage 2: every placement
      each survivor allows, ranked by Q2  ->  the simulator judges the few best pairs: the
      decision  ->  the baselines' shardings analysed (the ones not in the Top-K) and
      simulated for the comparison  ->  Plan. A sharding goes through the TPU backend (a
      full compile, the backend's own checks) only where its verdict cannot be predicted
      from the analysis (_backend_prediction: HBM and VMEM), or when asked: the plan's with
      Settings.verify, every baseline's too with Settings.verify_baselines.

The blocks of the model run under `lax.scan`, so the compiled HLO holds one block body in a
while loop whose trip count is the real layer count: compiling the whole model costs what
the paper's two-block proxy costs, and every figure is for the full forward pass.

Figures are predicted (Q1, Q2) or simulated; wall-clock planning time is measured.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from typing import Any

from aoizora.compile import jaxenv  # noqa: F401
from aoizora import _core
from aoizora.compile import compile_flags, optimized_hlo
from aoizora.compile.compile_flags import FlagSet
from aoizora.planning import (baselines, flag_search, kernels, model_draws, speedups, stage1,
                              strategies)
from aoizora.compile.batch import run_jobs
from aoizora.compile.cache import Cache
from aoizora.compile.compile_target import CompileTarget, compile_target_for
from aoizora.compile.jobs import Job, Outcome, runs_in_process
from aoizora.compile.prefetch import Prefetch
from aoizora.errors import NoFitError, UserError
from aoizora.models.base import FunctionSpec
from aoizora.plan_format import Choice, Plan
from aoizora.planning.stage2 import NoDefaultOrder, Pair, Stage2, UnknownTripCount

# How many of the best pairs by Q2 the simulator re-judges before the final choice.
SIMULATED_PAIRS = 8
# The longest ring a candidate may have (ring steps; the ring and Ulysses x ring forms). The
# ring is unrolled, one kernel call and a permute of the K and V per step, each permute
# naming every device pair: the lowered text grows with the square of the ring, and a
# 10,000-device slice's ring outgrows memory before its lowering ends (sizes measured:
# docs/results/code_history.md).
MAX_RING_STEPS = 512
# The most chips along one axis libtpu 0.0.42.1's TPU compiler takes: it describes larger
# slices (v5e:100x100 in 0.3 s) but aborts compiling for them ("Check failed:
# Topology()->chip_bounds().x <= 16 (100 vs. 16)", target.cc), after lowering and Stage 1.
MAX_CHIPS_PER_AXIS = 16


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
                                      # analysis cannot predict (_backend_prediction)
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


@dataclass
class PlanResult:
    plan: Plan
    pairs: list[Pair]                     # every simulated pair, best first
    placements: list[dict[str, Any]]      # the chosen sharding's placements, for the report
    skipped: list[str]                    # candidates reported and skipped, with the reason
    graph: Any = None                     # the chosen candidate's CollectiveGraph
    topology: Any = None
    # For evaluation (aoizora eval): everything the choice was made from.
    stage1: list = field(default_factory=list)     # Stage1Result of every lowered candidate
    ranked: list[Pair] = field(default_factory=list)  # every placement of every survivor, by Q2
    graphs: dict[str, Any] = field(default_factory=dict)  # candidate name -> CollectiveGraph
    stage2: Any = None                    # the Stage2 used (topology, simulate, ...)


def _resolve(model, video: str | None, frames: int | None, batch: int = 1):
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


@dataclass
class _Run:
    """What the phases of one plan() share: its inputs, and what each phase leaves."""

    settings: Settings
    progress: Progress
    cfg: Any
    wl: Any
    stage2: Stage2
    target: CompileTarget
    t_start: float = field(default_factory=time.perf_counter)
    timings: dict[str, float] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    graphs: dict[str, Any] = field(default_factory=dict)   # candidate name -> CollectiveGraph
    outcomes: list[Outcome] = field(default_factory=list)  # every lowering and compile job
    searched_of: dict[str, str] = field(default_factory=dict)  # recipe name -> searched twin
    failed_recipes: dict[str, str] = field(default_factory=dict)  # tag -> why it failed
    # Baselines JAX's default order cannot lay out on the slice: tag -> JAX's reason.
    no_default_order: dict[str, str] = field(default_factory=dict)
    # Baselines with no figures: tag -> {"candidate": sharding, "why": reason}.
    failed_baselines: dict[str, dict[str, str]] = field(default_factory=dict)
    verified: set[str] = field(default_factory=set)  # through the TPU backend (_verify)
    hbm_of: dict[str, int] = field(default_factory=dict)  # name -> HBM bytes, the analysis's
    tried: set[str] = field(default_factory=set)  # compiled for the analysis, or failed to
    # Shardings analysed and not compiled in full: name -> the backend's predicted verdict.
    predicted: dict[str, str] = field(default_factory=dict)
    ahead: Prefetch = field(default_factory=Prefetch)  # jobs started before they are asked for
    video_why: str = ""               # why seconds per video was not priced (_video_model)
    not_drawn: str = ""               # why the figures were not drawn (_pricer)
    pricer: Any = None                # the joint draws every row is priced under (_pricer)
    # The compiler flags every transformer job runs under (flag_search.plan_flags).
    flag_set: FlagSet = field(default_factory=lambda: compile_flags.lookup(compile_flags.NONE))

    def job(self, kind: str, c) -> Job:
        """A job of the transformer's step for this plan's target, under its flags."""
        return Job(kind, c, self.cfg, self.wl, self.target.spec, flags=self.flag_set.flags)

    @property
    def analysis_kind(self) -> str:
        """The job that gives a candidate's program for the analysis: on TPU targets XLA's
        optimized HLO without the TPU backend ("analyze", optimized_hlo.py: seconds instead
        of minutes), the plan's and the baselines' shardings then compiled in full
        (_verify); a full compile everywhere on CPU targets, with --full-compile, and for
        models that run in this process (a child process could not load them)."""
        if (self.target.platform != "tpu" or self.settings.full_compile
                or runs_in_process(self.cfg)):
            return "compile"
        return "analyze"

    def lap(self, name: str, t0: float) -> None:
        self.timings[name] = round(time.perf_counter() - t0, 3)

    def skip(self, name: str, reason: str) -> None:
        self.skipped.append(f"{name}: {reason}")
        self.progress.note(f"skipped {name}: {reason}")


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
    cfg, wl = _resolve(model, video, frames, batch)
    name = model if isinstance(model, str) else cfg.name
    stage2 = Stage2.for_topology(topology, seed=settings.seed, search_iters=settings.search_iters,
                                 hardware=settings.hardware)
    run = _Run(settings, progress, cfg, wl, stage2,
               compile_target_for(stage2.topology, settings.compile_target))
    _check_compilable(run.target, topology)
    run.flag_set = flag_search.plan_flags(settings.flags, stage2.topology.spec["generation"],
                                          run.target.platform, runs_in_process(cfg))
    progress.note(f"compiling for {_describe_target(run.target)}")
    candidates = _enumerate(run, name)
    run.ahead = _run_ahead(run, candidates)
    try:
        s1, top = _stage1(run, candidates, no_fit=f"{_what(name, video, wl)} fits in no "
                                                  f"sharding on {topology}")
        survivors = _compile_top_k(run, candidates, s1, top)
        ranked = _rank_placements(run, survivors)
        pool = _decide(run, ranked)
        base_cands = baselines.baseline_candidates(
            run.cfg, s1, run.stage2.topology.link_bandwidth, run.stage2.topology.hop_latency)
        pool = _verify_decision(run, pool, base_cands.values())
        base_pairs = _baselines(run, s1, base_cands, pool, ranked)
        whole = _video_model(run)
        run.pricer = _pricer(run, whole)
        pool, base_pairs = _verify_pooled(run, pool, base_pairs, whole)
    finally:
        run.ahead.close()
    oracle, pool, base_pairs = _oracle_and_refusals(run, candidates, s1, pool, base_pairs, whole)
    return _result(run, {"name": name, "video": video}, candidates, s1, top, ranked, pool,
                   base_pairs, whole, oracle)


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


def _run_ahead(run: _Run, candidates: list) -> Prefetch:
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


def _enumerate(run: _Run, model: str) -> list:
    t0 = time.perf_counter()
    run.progress.phase("enumerate shardings")
    if isinstance(run.cfg, FunctionSpec):
        candidates = strategies.function_candidates(run.cfg, run.stage2.num_devices)
    else:
        candidates = strategies.enumerate_candidates(run.cfg, run.wl, run.stage2.num_devices,
                                                     run.settings.runtime)
    if not candidates:
        raise UserError(f"no legal sharding of {model} over {run.stage2.num_devices} devices")
    candidates = _bounded_rings(run, candidates)
    if not candidates:
        raise UserError(f"no sharding of {model} over {run.stage2.num_devices} devices has a "
                        f"ring of at most {MAX_RING_STEPS} steps")
    candidates = _with_kernels(run, candidates)
    if not candidates:
        raise UserError(f"no sharding of {model} can run the attention kernel of "
                        f"{run.target.platform}: " + "; ".join(run.skipped[:2]))
    run.lap("enumerate", t0)
    return candidates


def _bounded_rings(run: _Run, candidates: list) -> list:
    """The candidates whose ring has at most MAX_RING_STEPS steps; the others are reported
    in planning.skipped and said in one line (a baseline among them is then not compared)."""
    long = [c for c in candidates if c.ring > MAX_RING_STEPS]
    if long:
        run.skipped += [f"{c.name}: a ring of {c.ring} steps, over the {MAX_RING_STEPS} "
                        "planned (its unrolled program grows with the square of the ring)"
                        for c in long]
        longest = max(c.ring for c in long)
        run.progress.note(f"left out {len(long)} of {len(candidates)} shardings whose ring "
                          f"has more than {MAX_RING_STEPS} steps (longest {longest}; the "
                          "unrolled program grows with the square of the ring)")
    return [c for c in candidates if c.ring <= MAX_RING_STEPS]


def _with_kernels(run: _Run, candidates: list) -> list:
    """Each candidate with the attention kernel of the compile target and its searched block
    sizes (kernels.py), plus, for a MaxDiffusion recipe whose published blocks differ, the
    recipe as MaxDiffusion runs it (its blocks, its baseline tags). A candidate whose shards
    cannot run the kernel is reported and skipped."""
    platform = run.target.platform
    spec = run.stage2.topology.spec
    device = kernels.DeviceFigures.of(spec) if platform == "tpu" else None
    out = []
    for c in candidates:
        try:
            searched = kernels.with_kernel(c, run.cfg, run.wl, platform, device)
            recipes = _published_recipes(run, c, searched, spec["generation"])
        except kernels.KernelUnsupported as e:
            run.skip(c.name, str(e))
            continue
        moved = {t for r in recipes for t in r.baselines}
        run.searched_of.update((r.name, searched.name) for r in recipes)
        out.append(replace(
            searched, baselines=tuple(t for t in c.baselines if t not in moved)))
        out.extend(recipes)
    return out


def _published_recipes(run: _Run, bare, searched, generation: str) -> list:
    """The MaxDiffusion recipes among `bare`'s baseline tags whose published blocks
    (kernels.published_blocks) differ from the searched ones: one candidate per block
    triple, named <sharding>-b<q>x<kv>x<kv_compute>, carrying those tags. tokamax's ring
    kernel takes its blocks from the same flash_block_sizes in MaxDiffusion, so a ring
    recipe runs its published blocks as a splash recipe does."""
    if searched.kernel not in kernels.SPLASH_KERNELS:
        return []
    tags_of: dict[tuple, list[str]] = {}
    for tag in bare.baselines:
        if tag.startswith("maxdiffusion"):
            blocks = kernels.published_blocks(generation, bare.n_chips, tag)
            tags_of.setdefault(blocks, []).append(tag)
    out = []
    for blocks, tags in tags_of.items():
        recipe = kernels.with_kernel(bare, run.cfg, run.wl, run.target.platform,
                                     kernels.DeviceFigures.of(run.stage2.topology.spec),
                                     blocks=blocks)
        b = (recipe.block_q, recipe.block_kv, recipe.block_kv_compute)
        if b != (searched.block_q, searched.block_kv, searched.block_kv_compute):
            out.append(replace(recipe, name=f"{bare.name}-b{b[0]}x{b[1]}x{b[2]}",
                                           baselines=tuple(tags)))
    return out


def _stage1(run: _Run, candidates: list, no_fit: str) -> tuple[list, list]:
    """Lowers every candidate and runs Stage 1: (every Stage1Result, the Top-K). Raises
    NoFitError, `no_fit` and the least memory-hungry candidate's numbers, when none fits."""
    t0 = time.perf_counter()
    # Tracing and lowering run on one core each; XLA's TPU compile uses two.
    lowered = _run(run.progress, "lower to StableHLO", run.settings,
                   [run.job("lower", c) for c in candidates],
                   workers=run.settings.workers or os.cpu_count() or 1)
    run.outcomes += lowered
    run.lap("lower", t0)
    run.skipped += [f"{c.name}: {o.error}" for c, o in zip(candidates, lowered) if not o.ok]
    t0 = time.perf_counter()
    run.progress.phase("Stage 1: Q1 and memory", len(candidates))
    s1 = []
    for c, o in zip(candidates, lowered):
        if o.ok:
            try:
                s1.append(stage1.analyze(c, o.text, run.stage2.source,
                                         **run.stage2.stage1_options()))
            except ValueError as e:  # unreadable text, or a loop Stage 1 cannot price
                run.skip(c.name, f"Stage 1: {e}")
        run.progress.advance(c.name)
    fitting = [r for r in s1 if r.fits]
    if not fitting:
        least = min(s1, key=lambda r: r.memory_bytes) if s1 else None
        detail = (f"; the least memory-hungry: {least.reject_reason}" if least
                  else f"; every candidate failed: {'; '.join(run.skipped[:2])}")
        raise NoFitError(no_fit + detail)
    top = stage1.select_top_k(fitting, run.settings.top_k)
    run.lap("stage1", t0)
    run.progress.note(f"Stage 1 kept {len(top)} of {len(fitting)} fitting shardings "
                      f"({len(candidates)} legal)")
    return s1, top


def _compile_top_k(run: _Run, candidates: list, s1: list, top: list) -> list:
    """Compiles the Top-K (with the oracle, every fitting candidate) for the target; the
    survivors are the Top-K results whose program loaded."""
    want = {r.candidate.name for r in top}
    if run.settings.oracle:
        want |= {r.candidate.name for r in s1 if r.fits}
    t0 = time.perf_counter()
    _compile(run, "compile the Top-K for the TPU target",
             [c for c in candidates if c.name in want])
    run.lap("compile", t0)
    survivors = [r for r in top if r.candidate.name in run.graphs]
    if not survivors:
        raise UserError("every Top-K candidate failed to compile: "
                        + "; ".join(run.skipped[-3:]))
    return survivors


def _rank_placements(run: _Run, survivors: list) -> list[Pair]:
    """Stage 2: every placement of every survivor, best Q2 first."""
    t0 = time.perf_counter()
    run.progress.phase("Stage 2: placements by Q2", len(survivors))
    ranked: list[Pair] = []
    for r in survivors:
        ranked += run.stage2.rank(r.candidate, run.graphs[r.candidate.name], q1=r.q1_seconds)
        run.progress.advance(r.candidate.name)
    ranked.sort(key=lambda p: (p.q2, p.candidate.name, p.placement))
    run.lap("stage2", t0)
    return ranked


def _decide(run: _Run, ranked: list[Pair]) -> list[Pair]:
    """The simulator judges the best pairs; the best of them is the decision (what Stage 1 +
    Stage 2 choose on their own, the figure AoiZora is judged by). Returns the judged pool."""
    t0 = time.perf_counter()
    pool = _judged_pairs(ranked, SIMULATED_PAIRS)
    run.progress.phase("simulate", len(pool))
    for p in pool:
        run.stage2.simulate(p, run.graphs[p.candidate.name])
        run.progress.advance(p.candidate.name)
    run.lap("simulate", t0)
    run.timings["decision"] = round(time.perf_counter() - run.t_start, 3)
    return pool


def _baselines(run: _Run, s1: list, base_cands: dict, pool: list[Pair],
               ranked: list[Pair]) -> dict[str, Pair]:
    """The baselines on JAX's default order, simulated: their shardings not in the Top-K are
    compiled after the decision; a pair the decision already simulated is not run again. A
    baseline that cannot be compared so is reported, never fatal (_baseline_pair): one whose
    mesh JAX's default order cannot lay out is shown on Stage 2's best placement and says
    so (run.no_default_order); one whose sharding did not compile or that the core cannot
    price is listed with why (run.failed_baselines)."""
    t0 = time.perf_counter()
    base_cands = dict(base_cands)
    _compile(run, "compile the baselines",
             [c for c in dict.fromkeys(base_cands.values()) if c.name not in run.graphs])
    _verify(run, "full compile of the baselines", _unpredicted(run, base_cands.values()))
    stand_ins = _stand_ins(run, s1, base_cands)
    _compile(run, "compile the searched blocks of failed recipes",
             [c for c in dict.fromkeys(stand_ins.values()) if c.name not in run.graphs])
    _verify(run, "full compile of the searched blocks", _unpredicted(run, stand_ins.values()))
    run.failed_recipes = {tag: _skip_reason(run, base_cands[tag].name) for tag in stand_ins}
    base_cands.update((t, c) for t, c in stand_ins.items() if c.name in run.graphs)
    for tag, c in base_cands.items():
        if c.name not in run.graphs:
            run.failed_baselines[tag] = {"candidate": c.name, "why": _skip_reason(run, c.name)}
    q1_of = {r.candidate.name: r.q1_seconds for r in s1}
    pairs = {tag: _baseline_pair(run, tag, c, q1_of.get(c.name), ranked)
             for tag, c in base_cands.items() if c.name in run.graphs}
    base_pairs = _simulate_baselines(run, {t: p for t, p in pairs.items() if p}, pool)
    run.lap("baselines", t0)
    return base_pairs


def _baseline_pair(run: _Run, tag: str, c, q1: float | None,
                   ranked: list[Pair]) -> Pair | None:
    """The baseline `tag` (sharding `c`, compiled) on JAX's default order. When JAX has no
    default order for its mesh on this slice (a deployment that builds its mesh with
    create_device_mesh or jax.make_mesh fails there too), the sharding on Stage 2's best
    placement by Q2 instead, JAX's reason in run.no_default_order. None, with the reason in
    run.failed_baselines, when the core cannot price the sharding's program."""
    graph = run.graphs[c.name]
    try:
        return run.stage2.default_pair(c, graph, q1=q1)
    except NoDefaultOrder as e:
        run.no_default_order[tag] = e.why
        run.progress.note(f"{tag}: not deployable with JAX's default order on this slice: "
                          f"{e.why}")
    except _core.CoreError as e:
        run.failed_baselines[tag] = {"candidate": c.name, "why": f"Q2 failed: {e}"}
        return None
    try:  # a Top-K sharding's placements are ranked already
        own = ([p for p in ranked if p.candidate.name == c.name]
               or run.stage2.rank(c, graph, q1=q1))
    except _core.CoreError as e:
        run.failed_baselines[tag] = {"candidate": c.name, "why": f"no placement ranked: {e}"}
        return None
    return replace(own[0], tag=c.name)


def _simulate_baselines(run: _Run, base_pairs: dict[str, Pair],
                        pool: list[Pair]) -> dict[str, Pair]:
    """Each baseline pair simulated (a pair the decision judged is taken from it); one the
    simulator refuses is listed in run.failed_baselines and left out."""
    judged = {(p.candidate.name, tuple(p.device_of)): p for p in pool}
    run.progress.phase("simulate the baselines", len(base_pairs))
    out = {}
    for tag, p in base_pairs.items():
        twin = judged.get((p.candidate.name, tuple(p.device_of)))
        if twin is not None:
            p.simulated, p.sim, p.split = twin.simulated, twin.sim, twin.split
        elif p.simulated is None:
            try:
                run.stage2.simulate(p, run.graphs[p.candidate.name])
            except _core.CoreError as e:
                run.failed_baselines[tag] = {"candidate": p.candidate.name,
                                             "why": f"simulation failed: {e}"}
        if p.simulated is not None:
            out[tag] = p
        run.progress.advance(p.candidate.name)
    return out


def _unpredicted(run: _Run, cands, force: bool | None = None) -> list:
    """The shardings among `cands` to compile in full: every one with `force` (default:
    verify_baselines), else those whose backend verdict _backend_prediction cannot give.
    The others stay analysed only, their predicted verdict in run.predicted (said in the
    plan and its tables)."""
    force = run.settings.verify_baselines if force is None else force
    out = []
    for c in dict.fromkeys(cands):
        if run.analysis_kind == "compile" or c.name in run.verified or c.name not in run.graphs:
            continue
        why = None if force else _backend_prediction(run, c)
        if why is None:
            out.append(c)
        else:
            run.predicted[c.name] = why
    return out


# Buffer assignment's HBM bytes leave this share of the device's HBM for what they do not
# count (the program's code, a few MiB; libtpu's reserve): above it the backend decides.
HBM_PREDICTION_SHARE = 0.9


def _backend_prediction(run: _Run, c) -> str | None:
    """Why the TPU backend will accept `c`'s program, from what its analysis compile gave:
    the HBM bytes of XLA's buffer assignment (optimized_hlo.hbm_bytes) within
    HBM_PREDICTION_SHARE of one device's HBM, and the attention kernel's blocks within the
    scoped VMEM limit by kernels.vmem_bytes (an upper bound of what the kernel takes). None
    when either is over or unknown: only the backend can say, so the sharding is compiled
    in full. A kernel that returns its residuals (the ring steps: tokamax's ring kernel, jax's
    splash kernel in the Ulysses x ring form) is held to its own bound, which counts its
    outputs, the batch and Mosaic's spill slots, and only below the limit by
    kernels.RESIDUAL_VMEM_MARGIN (kernels.backend_vmem; docs/planner.md)."""
    spec = run.stage2.topology.spec
    hbm = spec["hbm_bytes"] / spec.get("cores_per_chip", 1)
    used = run.hbm_of.get(c.name)
    if used is None or used > HBM_PREDICTION_SHARE * hbm:
        return None
    said = [f"HBM {_size(used)} of {_size(hbm)} (XLA's buffer assignment)"]
    if c.block_q:  # a Pallas attention kernel with its blocks (none on the blockwise core)
        vmem, most = kernels.backend_vmem(c, run.cfg.dim // run.cfg.heads, run.wl.batch,
                                          spec.get("generation", ""))
        limit = kernels.scoped_vmem_bytes()
        if vmem > most:
            return None
        said.append(f"attention kernel VMEM at most {vmem / 2**20:.1f} of "
                    f"{limit / 2**20:.0f} MiB" + (
                        f" (residuals returned: predicted below {most / 2**20:.1f})"
                        if kernels.returns_residuals(c) else ""))
    return "analysed, not compiled in full; predicted to compile: " + ", ".join(said)


def _size(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def _stand_ins(run: _Run, s1: list, base_cands: dict) -> dict:
    """tag -> the searched-blocks twin of each MaxDiffusion recipe whose published blocks
    did not compile or load (TPU7x-8's published v7x blocks need more VMEM than the chip
    has): the recipe's sharding as it can run, shown in its place and named as a stand-in."""
    fits = {r.candidate.name: r.candidate for r in s1 if r.fits}
    return {tag: fits[run.searched_of[c.name]] for tag, c in base_cands.items()
            if c.name not in run.graphs and run.searched_of.get(c.name) in fits}


def _skip_reason(run: _Run, name: str) -> str:
    return next((s.split(": ", 1)[1] for s in run.skipped if s.startswith(f"{name}: ")),
                "not compiled")


def _result(run: _Run, asked: dict[str, str], candidates: list, s1: list, top: list,
            ranked: list[Pair], pool: list[Pair], base_pairs: dict[str, Pair],
            video, oracle: Pair | None) -> PlanResult:
    """The plan: the best of the decision and the baselines' own pairs (a user never gets a
    plan slower than their deployment), saying when a baseline replaced the decision; with
    the stages around the loop priced (`video`), the best per video."""
    decision = min(pool, key=_decision_key)
    t0 = time.perf_counter()
    simulated = _pooled(pool, base_pairs, video, _robust_key(run, video))
    pricer = run.pricer
    best, changes = _defended(run, pricer, simulated, base_pairs)
    drawn_s = time.perf_counter() - t0
    stage2, graphs = run.stage2, run.graphs
    choice = _chosen(run, best, ranked)
    run.timings["total"] = round(time.perf_counter() - run.t_start, 3)
    t0 = time.perf_counter()
    the_plan = Plan(
        model={"name": asked["name"], "layers": getattr(run.cfg, "layers", None),
               "params": _param_count(run.cfg), **_model_facts(run.cfg)},
        workload=_workload_record(asked["video"], run.cfg, run.wl),
        topology={**stage2.describe(), "compile_target": run.target.describe()},
        choice=choice,
        runners_up=[stage2.choice(p) for p in _other_shardings(simulated, best)][:4],
        baselines=_baseline_choices(stage2, base_pairs, oracle, run.failed_recipes,
                                    run.no_default_order, run.predicted),
        planning=_planning_record(run, candidates, s1, top, ranked, decision, best,
                                  base_pairs),
        video=_video_record(run, video, best, base_pairs, oracle,
                            _pooled(pool, base_pairs)[0]),
    )
    _intervals(run, the_plan, simulated, video, pricer, best, base_pairs, oracle, changes)
    run.timings["joint_draws"] = round(drawn_s + time.perf_counter() - t0, 3)
    run.timings["total"] = the_plan.planning["seconds"] = round(
        time.perf_counter() - run.t_start, 3)
    _flags(run, the_plan, best, simulated, pricer)
    return PlanResult(the_plan, simulated, choice.extra["placements"], run.skipped,
                      graphs[best.candidate.name], stage2.topology, stage1=s1, ranked=ranked,
                      graphs=graphs, stage2=stage2)


def _flags(run: _Run, the_plan: Plan, best: Pair, simulated: list[Pair], pricer=None) -> None:
    """plan.json's "flags": the mode, the chosen set, and with --flags search the search
    (flag_search.py); the compile target's libtpu_init_args carry the chosen flags, so that
    --emit maxdiffusion runs the plan under them."""
    chosen, searched = run.flag_set, None
    if run.settings.flags == "search":
        t0 = time.perf_counter()
        chosen, searched = flag_search.search(
            run.stage2, best, simulated, run.stage2.topology.spec["generation"],
            make_job=lambda c, flags: Job(run.analysis_kind, c, run.cfg, run.wl,
                                          run.target.spec, flags=flags),
            run_batch=lambda name, jobs: _run(run.progress, name, run.settings, jobs),
            budget=run.settings.flag_budget,
            speedup=None if pricer is None else pricer.step_speedup,
            defend_p=run.settings.defend_p)
        run.lap("flag search", t0)
        run.timings["total"] = round(time.perf_counter() - run.t_start, 3)
        the_plan.planning["seconds"] = run.timings["total"]
    if searched and searched.get("change") and the_plan.uncertainty:
        the_plan.uncertainty.setdefault("changes", []).append(searched["change"])
    flag_search.apply(the_plan, run.settings.flags, chosen, searched)


def _chosen(run: _Run, best: Pair, ranked: list[Pair]) -> Choice:
    """The plan's choice, with its sharding's placements for the report. A baseline's
    sharding that won the pooling was not ranked by Stage 2: it is ranked now, so that the
    report lists its placements as for any plan."""
    graph = run.graphs[best.candidate.name]
    own = [p for p in ranked if p.candidate.name == best.candidate.name] or run.stage2.rank(
        best.candidate, graph, q1=best.q1)
    choice = run.stage2.choice(best, with_links=True, graph=graph)
    if best.candidate.name in run.predicted and best.candidate.name not in run.verified:
        choice.extra["analysed_only"] = run.predicted[best.candidate.name]
    # for the report, a pure function of the plan
    choice.extra["placements"] = [{"name": p.placement, "q2_s": p.q2,
                                   "simulated_s": p.simulated} for p in own][:20]
    return choice


def _planning_record(run: _Run, candidates: list, s1: list, top: list, ranked: list[Pair],
                     decision: Pair, best: Pair, base_pairs: dict[str, Pair]) -> dict:
    """plan.json's "planning": how the plan was made (times measured, counts, what was
    skipped or only analysed, the decision before pooling)."""
    # A baseline's own pair won the pooling (one the pool also judged carries no tag).
    pooled = bool(best.tag) and (best.candidate.name, best.placement) != (
        decision.candidate.name, decision.placement)
    from aoizora.compile.fingerprint import code_fingerprint

    return {"seconds": run.timings["total"],
            "decision_seconds": run.timings["decision"], "phases": run.timings,
            "code": code_fingerprint(), "runtime": run.settings.runtime,
            "candidates": len(candidates), "fitting": sum(r.fits for r in s1),
            "top_k": [r.candidate.name for r in top], "compiled": len(run.graphs),
            "cache_hits": sum(o.cached for o in run.outcomes),
            "jobs": len(run.outcomes), "jobs_run_ahead": run.ahead.ran_ahead(),
            "skipped": run.skipped,
            # jobs run a second time because their worker was lost (executor.py)
            "retries": [{"job": o.name, "why": o.retried} for o in run.outcomes if o.retried],
            "baselines_failed": run.failed_baselines,
            "programs": _programs(run),
            "compiled_in_full": sorted(run.verified) if run.analysis_kind == "analyze"
            else sorted(run.graphs),
            "analysed_only": {n: run.predicted[n] for n in sorted(run.predicted)
                              if n in _shown(best, base_pairs)},
            "executor": getattr(run.settings.executor, "description", "local processes"),
            "pairs_ranked": len(ranked),
            "decision": {"candidate": decision.candidate.name,
                         "placement": decision.placement,
                         "simulated_s": decision.simulated,
                         "chip_ids": list(decision.device_of)},
            "pooling_changed_choice": pooled,
            "chosen_from": best.tag if pooled else "top-k"}


def _video_record(run: _Run, video, best: Pair, base_pairs: dict[str, Pair],
                  oracle: Pair | None, by_step: Pair) -> dict:
    """plan.json's "video": seconds per video of the plan and of each baseline by part
    (pipeline/plan_video.py), or why they were not priced."""
    if video is None:
        return {"kind": "simulated", "not_priced": run.video_why}
    shown = dict(base_pairs)
    if oracle is not None:
        shown["oracle"] = oracle
    record = video.record(best, shown, by_step=by_step)
    existing = _existing_tag(base_pairs, run.no_default_order)
    if existing is not None:
        record["baselines"] = {"existing": record["baselines"][existing],
                               **record["baselines"]}
    return record


def _run(progress: Progress, name: str, settings: Settings, jobs: list[Job],
         workers: int | None = None, ahead: Prefetch | None = None) -> list[Outcome]:
    progress.phase(name, len(jobs))
    return run_jobs(jobs, workers=workers or settings.workers, cache=settings.cache,
                    executor=settings.executor, ahead=ahead,
                    progress=lambda done, total, out: progress.advance(
                        f"{out.name}{' (cached)' if out.cached else ''}"))


def _compile(run: _Run, name: str, todo: list, full: list = ()) -> None:
    """Compiles `todo` (cached) and loads each collective graph into run.graphs; a candidate
    that fails to compile or load is reported and skipped. `full`: shardings analysed
    already, compiled in full in the same batch (_verify's checks), so that on a machine of
    a few cores a full compile, which keeps about one core busy for most of its time, runs
    beside the analyses. Analyses run one per core: the child compile of each is mostly one
    thread (starting Python and JAX, lowering, XLA's HLO passes)."""
    full = _to_verify(run, full)
    todo = [c for c in todo if c.name not in run.tried]
    if not todo and not full:
        return
    run.tried.update(c.name for c in todo)
    t0 = time.perf_counter()
    jobs = ([run.job(run.analysis_kind, c) for c in todo]
            + [run.job("compile", c) for c in full])
    workers = run.settings.workers
    if workers is None and run.analysis_kind == "analyze" and not run.settings.executor:
        workers = max(1, min(len(jobs), os.cpu_count() or 1))
    outcomes = _run(run.progress, name, run.settings, jobs, workers=workers, ahead=run.ahead)
    run.outcomes += outcomes
    for c, o in zip(todo, outcomes):
        if not o.ok:
            run.skip(c.name, f"compile failed: {o.error}")
            continue
        hbm = optimized_hlo.hbm_bytes(o.text) if run.analysis_kind == "analyze" else None
        if hbm is not None:
            run.hbm_of[c.name] = hbm
        try:
            run.graphs[c.name] = run.stage2.load(o.text)
        except UnknownTripCount as e:
            run.skip(c.name, str(e))
        except ValueError as e:
            run.skip(c.name, f"compiled HLO unreadable: {e}")
    _verified(run, full, outcomes[len(todo):])
    if full:
        run.timings["verify"] = round(run.timings.get("verify", 0)
                                      + time.perf_counter() - t0, 3)


def _to_verify(run: _Run, todo) -> list:
    """Of `todo`, the shardings analysed and not yet compiled in full (none when every
    candidate is compiled in full)."""
    if run.analysis_kind == "compile":
        return []
    return [c for c in {c.name: c for c in todo}.values()
            if c.name in run.graphs and c.name not in run.verified]


def _verified(run: _Run, todo: list, outcomes: list[Outcome]) -> None:
    """The backend's verdicts: one it refuses is reported, skipped, and leaves run.graphs."""
    for c, o in zip(todo, outcomes):
        if o.ok:
            run.verified.add(c.name)
        else:
            del run.graphs[c.name]
            run.skip(c.name, f"full compile failed: {o.error}")


def _verify(run: _Run, name: str, todo: list) -> None:
    """Full compiles, TPU backend included, of shardings that were analyzed from XLA's
    optimized HLO: the backend's own checks (a kernel over VMEM, a program over HBM) come
    after that text. One the backend refuses is reported, skipped, and leaves run.graphs."""
    todo = _to_verify(run, todo)
    if not todo:
        return
    t0 = time.perf_counter()
    outcomes = _run(run.progress, name, run.settings,
                    [run.job("compile", c) for c in todo],
                    ahead=run.ahead)
    run.outcomes += outcomes
    _verified(run, todo, outcomes)
    run.timings["verify"] = round(run.timings.get("verify", 0) + time.perf_counter() - t0, 3)


def _verify_plan(run: _Run) -> bool:
    """Whether the plan's sharding goes through the TPU backend even where the analysis
    predicts its verdict."""
    return run.settings.verify or run.settings.verify_baselines


def _verify_decision(run: _Run, pool: list[Pair], base_cands) -> list[Pair]:
    """The pool without shardings the TPU backend refuses: the decision's sharding is
    compiled in full where its verdict cannot be predicted (or with Settings.verify), and
    while the backend refuses it, the next best's. The baselines' shardings not compiled
    yet (`base_cands`) are analysed in the same batch."""
    analyse = [c for c in dict.fromkeys(base_cands) if c.name not in run.graphs]
    while True:
        best = min(pool, key=_decision_key)
        full = _unpredicted(run, [best.candidate], force=_verify_plan(run))
        t0 = time.perf_counter()
        _compile(run, ("full compile of the decision" + (", the baselines analysed beside it"
                                                         if analyse else ""))
                 if full else "analyse the baselines' shardings", analyse, full=full)
        if analyse and not full:  # a batch with a full compile is timed as "verify"
            run.lap("baselines_analysis", t0)
        analyse = []
        if best.candidate.name in run.graphs:
            return pool
        pool = [p for p in pool if p.candidate.name in run.graphs]
        if not pool:
            raise UserError("every judged sharding failed the full compile: "
                            + "; ".join(run.skipped[-3:]))


def _video_model(run: _Run):
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
        # one analysis per core, as _compile runs them: each is mostly one thread
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


def _pooled(pool: list[Pair], base_pairs: dict[str, Pair], video=None,
            robust=None) -> list[Pair]:
    """The decision's pool and the baselines' own pairs, one per (sharding, placement), best
    first: the plan is the first. Best: the fewest simulated seconds per forward, or with
    `video` (plan_video.VideoModel) per video (the steps and the reshards); with `robust`
    (a pair's worst case, _robust_key) the least worst case."""
    first = video.order_key if video is not None else (lambda p: p.simulated)
    if robust is not None:
        first = robust
    return sorted({(p.candidate.name, p.placement): p
                   for p in pool + list(base_pairs.values())}.values(),
                  key=lambda p: (first(p), p.simulated, p.q2))


def _verify_pooled(run: _Run, pool: list[Pair], base_pairs: dict[str, Pair], video=None
                   ) -> tuple[list[Pair], dict[str, Pair]]:
    """The judged pool and the baselines' pairs, less the pairs whose sharding would be the
    plan and that the TPU backend refuses: the best pooled pair's sharding (a baseline's
    own pair that wins the pooling) is held to the decision's rule, compiled in full before
    it becomes the plan where its verdict cannot be predicted (or with Settings.verify). A
    baseline so refused is listed in run.failed_baselines, and the next best pair is the
    plan (the decision, held to the rule by _verify_decision, ends the search)."""
    while True:
        best = _pooled(pool, base_pairs, video, _robust_key(run, video))[0].candidate
        name = best.name
        if (run.analysis_kind == "compile" or name in run.verified
                or not _unpredicted(run, [best], force=_verify_plan(run))):
            return pool, base_pairs
        run.predicted.pop(name, None)
        _verify(run, "full compile of the plan", [best])
        if name in run.graphs:
            return pool, base_pairs
        pool = [p for p in pool if p.candidate.name != name]
        for tag in [t for t, p in base_pairs.items() if p.candidate.name == name]:
            del base_pairs[tag]
            run.failed_baselines[tag] = {"candidate": name, "why": _skip_reason(run, name)}


def _bands(run: _Run):
    """The error bands of the slice's generation (error_bands.py)."""
    from aoizora.hardware import error_bands

    return error_bands.for_generation(run.stage2.topology.spec["generation"])


def _robust_key(run: _Run, video):
    """With Settings.robust, a pair's worst case: the high end of its 90 % interval across
    the joint draws (per video with `video`, else per forward), or where there are no draws
    the high end of the error bands' interval; None without --robust."""
    if not run.settings.robust:
        return None
    if run.pricer is None:
        return _high_end(_bands(run), video)
    return lambda p: speedups.interval(run.pricer.times(p, p.tag))[1]


def _high_end(bands, video):
    """A pair's worst case under `bands`: the high end of its simulated forward's interval,
    or with `video` of its share of the video (its steps and its reshards)."""
    from aoizora.planning import intervals

    def key(p: Pair) -> float:
        fwd = intervals.forward(p.split, bands)
        high = fwd["high_s"] if fwd else p.simulated
        if video is None:
            return high
        return video.steps * high + bands.communication.bounds(video.parts(p)["reshard_s"])[1]
    return key


def _intervals(run: _Run, plan: Plan, simulated: list[Pair], video, pricer, best: Pair,
               base_pairs: dict[str, Pair], oracle: Pair | None, changes: list[dict]) -> None:
    """Every choice of `plan` with its interval and its speedup's, plan.uncertainty
    (confidence.annotate) from the joint draws; where the slice's figures cannot be drawn
    (`pricer` None), the error bands' intervals and ties (intervals.annotate), and
    plan.uncertainty says why."""
    from aoizora.planning import confidence, intervals

    if pricer is not None:
        pairs = {(p.candidate.name, p.placement): (p, "") for p in simulated + [best]}
        pairs |= {(p.candidate.name, p.placement): (p, tag) for tag, p in base_pairs.items()}
        if oracle is not None:
            pairs[(oracle.candidate.name, oracle.placement)] = (oracle, "oracle")
        confidence.annotate(plan, pricer, pairs, best, changes, run.settings.defend_p,
                            intervals.ROBUST if run.settings.robust else intervals.POINT)
        return
    parts = ({(p.candidate.name, p.placement): video.parts(p) for p in simulated}
             if video is not None else {})
    intervals.annotate(plan, _bands(run), intervals.ROBUST if run.settings.robust
                       else intervals.POINT, parts)
    plan.uncertainty["not_drawn"] = run.not_drawn


def _pricer(run: _Run, video):
    """The joint draws of the slice's figures every row is priced under (confidence.py);
    None, with run.not_drawn, where the figures have no profile to draw from."""
    from aoizora.planning import confidence

    try:
        draws = model_draws.ModelDraws(run.stage2, run.settings.draws, run.settings.seed)
    except model_draws.UncertainModel as e:
        run.not_drawn = str(e)
        run.progress.note(f"no joint draws: {e}; intervals from the error bands")
        return None
    return confidence.Pricer(draws, run.graphs, video)


def _defended(run: _Run, pricer, ranked: list[Pair], base_pairs: dict[str, Pair]
              ) -> tuple[Pair, list[dict]]:
    """The plan's pair once each change it makes to what the user runs is defended
    (confidence.defend), and the changes considered; the first of `ranked` without draws."""
    from aoizora.planning import confidence

    if pricer is None or run.settings.defend_p <= 0:
        return ranked[0], []
    tag = _existing_tag(base_pairs, run.no_default_order)
    return confidence.defend(pricer, ranked, lambda p: _on_default_order(run, p),
                             base_pairs.get(tag), tag or "", run.settings.defend_p)


def _on_default_order(run: _Run, pair: Pair) -> Pair | None:
    """`pair`'s sharding on JAX's default device order, simulated; None where JAX has none."""
    graph = run.graphs[pair.candidate.name]
    try:
        default = run.stage2.default_pair(pair.candidate, graph, q1=pair.q1)
    except NoDefaultOrder:
        return None
    default.tag = pair.tag  # the same row (a baseline's, or none), on another order
    return run.stage2.simulate(default, graph)


def _decision_key(p: Pair):
    return (p.simulated, p.q2, p.candidate.name, p.placement)


def _describe_target(target: CompileTarget) -> str:
    if target.platform == "cpu":
        return (f"{target.devices} CPU devices (--compile-target cpu: XLA's CPU pipeline, "
                "not the TPU's)")
    wrapped = [a for a, w in zip("xyz", target.wrap[:len(target.name.split("x"))]) if w]
    wrap = f"wraparound on {', '.join(wrapped)}" if wrapped else "no wraparound"
    return f"TPU {target.name} ({target.devices} devices, {wrap}) via libtpu, deviceless"


def _judged_pairs(ranked: list[Pair], k: int) -> list[Pair]:
    """The k best pairs by Q2, plus the best placement of every sharding ranked (so each
    survivor is judged at least once)."""
    out = list(ranked[:k])
    seen = {p.candidate.name for p in out}
    for p in ranked:
        if p.candidate.name not in seen:
            out.append(p)
            seen.add(p.candidate.name)
    return out


def _other_shardings(simulated: list[Pair], best: Pair) -> list[Pair]:
    seen, out = {best.candidate.name}, []
    for p in simulated:
        if p.candidate.name not in seen:
            seen.add(p.candidate.name)
            out.append(p)
    return out


def _baseline_choices(stage2, base_pairs, oracle: Pair | None, failed: dict[str, str],
                      no_default: dict[str, str],
                      predicted: dict[str, str]) -> dict[str, Choice]:
    """tag -> choice; a recipe in `failed` is its searched-blocks stand-in, and says so
    (extra["stand_in"]: the published blocks and why they failed); a baseline in
    `no_default` is on Stage 2's best placement, not deployable as it is, and says so
    (extra["no_default_order"]: JAX's reason); one whose sharding was analysed and not
    compiled in full says so (extra["analysed_only"]: the predicted verdict). "existing" is
    the best deployable one."""
    out = {}
    for tag, p in base_pairs.items():
        out[tag] = stage2.choice(p, label=tag)
        if p.candidate.name in predicted:
            out[tag].extra["analysed_only"] = predicted[p.candidate.name]
        if tag in failed:
            out[tag].extra["stand_in"] = {"published_blocks_failed": failed[tag]}
        if tag in no_default:
            out[tag].extra["no_default_order"] = no_default[tag]
    best = _existing_tag(base_pairs, no_default)
    if best is not None:
        out = {"existing": replace(out[best], extra=dict(out[best].extra)), **out}
    if oracle is not None:
        out["oracle"] = stage2.choice(oracle, label="oracle")
    return out


def _existing_tag(base_pairs: dict[str, Pair], no_default: dict[str, str]) -> str | None:
    """The baseline "existing" repeats: the fastest deployable one (not the Alpa-style
    pick, not one JAX's default order cannot lay out)."""
    existing = [tag for tag in base_pairs if tag != baselines.ALPA and tag not in no_default]
    return min(existing, key=lambda tag: base_pairs[tag].simulated) if existing else None


def _programs(run: _Run) -> str:
    """planning.programs: what the plan's figures were read from, and what went through the
    TPU backend."""
    if run.analysis_kind == "compile":
        return "full compiles"
    if run.settings.verify_baselines:
        return "optimized HLO, the plan's and the baselines' shardings compiled in full"
    if run.settings.verify:
        return ("optimized HLO, the plan's sharding compiled in full; the baselines' analysed "
                "only, unless the backend's verdict could not be predicted "
                "(planning.analysed_only; --verify-baselines compiles them in full)")
    return ("optimized HLO, every sharding analysed only unless the backend's verdict could "
            "not be predicted from HBM and VMEM (planning.analysed_only, "
            "planning.compiled_in_full; --verify compiles the plan's sharding in full, "
            "--verify-baselines the baselines' too)")


def _shown(best: Pair, base_pairs: dict[str, Pair]) -> set[str]:
    return {best.candidate.name} | {p.candidate.name for p in base_pairs.values()}


def _oracle_and_refusals(run: _Run, candidates: list, s1: list, pool: list[Pair],
                         base_pairs: dict[str, Pair], video
                         ) -> tuple[Pair | None, list[Pair], dict[str, Pair]]:
    """With Settings.oracle: the oracle (_oracle), and the pool and the baselines' pairs
    less every sharding whose full compile there the TPU backend refused although the
    analysis predicted it to compile (reported in run.skipped; a refused baseline in
    run.failed_baselines); the plan's sharding is then held to the rule again. Without it:
    (None, pool, base_pairs)."""
    if not run.settings.oracle:
        return None, pool, base_pairs
    oracle = _oracle(run, candidates, s1, pool + list(base_pairs.values()))
    pool = [p for p in pool if p.candidate.name in run.graphs]
    if not pool:
        raise UserError("every judged sharding failed the full compile: "
                        + "; ".join(run.skipped[-3:]))
    for tag in [t for t, p in base_pairs.items() if p.candidate.name not in run.graphs]:
        name = base_pairs.pop(tag).candidate.name
        run.failed_baselines[tag] = {"candidate": name, "why": _skip_reason(run, name)}
    pool, base_pairs = _verify_pooled(run, pool, base_pairs, video)
    return oracle, pool, base_pairs


def _oracle(run: _Run, candidates: list, s1: list, simulated: list[Pair]) -> Pair:
    """The best simulated pair over every placement Stage 2 considers of every compiled
    sharding (the plan's own pool included), compiled in full like the plan: a sharding the
    TPU backend refuses is skipped. A reference only: the plan does not use it."""
    by_name = {c.name: c for c in candidates}
    q1_of = {r.candidate.name: r.q1_seconds for r in s1}
    run.progress.phase("oracle: simulate every pair", len(run.graphs))
    every = list(simulated)
    for name, g in run.graphs.items():
        for p in run.stage2.rank(by_name[name], g, q1=q1_of.get(name)):
            every.append(run.stage2.simulate(p, g))
        run.progress.advance(name)
    for p in sorted(every, key=lambda p: (p.simulated, p.q2)):
        if p.candidate.name in run.graphs:
            _verify(run, "full compile of the oracle", [p.candidate])
            if p.candidate.name in run.graphs:
                return p
    raise UserError("every simulated sharding failed the full compile: "
                    + "; ".join(run.skipped[-3:]))


def _workload_record(video: str | None, cfg, wl) -> dict[str, Any]:
    if wl is None:  # a FunctionSpec: its arguments are the workload
        return {"function": cfg.name, "video": None, "frames": None, "tokens": None}
    batch = getattr(wl, "batch", None)
    # batch: the program's (each video's CFG pair); videos_per_call: what a call serves
    return {"video": video, "frames": wl.frames, "tokens": getattr(wl, "tokens", None),
            "batch": batch, "videos_per_call": None if batch is None else max(1, batch // 2)}


def _model_facts(cfg) -> dict[str, Any]:
    """What a model adds to the plan's model record (WanExperts: its experts, all served by
    this one plan, and how many are resident; a spec from --model: where it came from)."""
    describe = getattr(cfg, "describe", None)
    facts = describe() if callable(describe) else {}
    source = getattr(cfg, "source", None)
    return {**facts, "source": source} if source else facts


def _param_count(cfg) -> int | None:
    """Parameters of a model that can count them (WanConfig); None for one that cannot."""
    count = getattr(cfg, "param_count", None)
    return int(count()) if callable(count) else None

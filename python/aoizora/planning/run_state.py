"""The state one plan() shares between its phases (Run), and a skipped candidate (Skip).

A Run is made once per plan() (planner.py) from its inputs; each phase module
(candidate_filter, decision, compile_policy, baseline_pairs, pooling, oracle, plan_record)
reads the inputs and adds what it leaves: graphs, skips, the backend's verdicts, failed
baselines. Single-threaded: no phase runs beside another. A candidate is left out with a
Skip (its name, the kind of failure, the reason); plan.json's planning.skipped is each
Skip's line, "<name>: <reason>".
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from aoizora.compile import compile_flags
from aoizora.compile.batch import run_jobs
from aoizora.compile.compile_flags import FlagSet
from aoizora.compile.compile_target import CompileTarget
from aoizora.compile.jobs import Job, Outcome, runs_in_process
from aoizora.compile.prefetch import Prefetch
from aoizora.planning.settings import Progress, Settings
from aoizora.planning.stage2 import Stage2

# The kinds of Skip, by the phase that left the candidate out.
RING = "ring"                 # a ring over candidate_filter.MAX_RING_STEPS
KERNEL = "kernel"             # its shards cannot run the attention kernel
LOWER = "lower"               # lowering to StableHLO failed
STAGE1 = "stage1"             # Stage 1 could not read or price its program
COMPILE = "compile"           # the analysis (or full) compile failed
LOAD = "load"                 # its compiled HLO could not be loaded as a collective graph
FULL_COMPILE = "full-compile"  # the TPU backend refused it in a full compile
NOT_COMPILED = "not compiled"  # what skip_reason says of a name never skipped


@dataclass(frozen=True)
class Skip:
    """A candidate left out of the plan: its name, the kind (RING, KERNEL, ...), and why."""

    name: str
    kind: str
    reason: str

    def line(self) -> str:
        """The line plan.json's planning.skipped holds."""
        return f"{self.name}: {self.reason}"


@dataclass
class Run:
    """What the phases of one plan() share: its inputs, and what each phase leaves."""

    settings: Settings
    progress: Progress
    cfg: Any
    wl: Any
    stage2: Stage2
    target: CompileTarget
    t_start: float = field(default_factory=time.perf_counter)
    timings: dict[str, float] = field(default_factory=dict)
    skips: list[Skip] = field(default_factory=list)
    graphs: dict[str, Any] = field(default_factory=dict)   # candidate name -> CollectiveGraph
    outcomes: list[Outcome] = field(default_factory=list)  # every lowering and compile job
    searched_of: dict[str, str] = field(default_factory=dict)  # recipe name -> searched twin
    failed_recipes: dict[str, str] = field(default_factory=dict)  # tag -> why it failed
    # Baselines JAX's default order cannot lay out on the slice: tag -> JAX's reason.
    no_default_order: dict[str, str] = field(default_factory=dict)
    # Baselines with no figures: tag -> {"candidate": sharding, "why": reason}.
    failed_baselines: dict[str, dict[str, str]] = field(default_factory=dict)
    # Shardings the TPU backend accepted in a full compile (compile_policy.compile_in_full).
    compiled_in_full: set[str] = field(default_factory=set)
    hbm_of: dict[str, int] = field(default_factory=dict)  # name -> HBM bytes, the analysis's
    tried: set[str] = field(default_factory=set)  # compiled for the analysis, or failed to
    # Shardings analysed and not compiled in full: name -> the backend's predicted verdict.
    predicted: dict[str, str] = field(default_factory=dict)
    ahead: Prefetch = field(default_factory=Prefetch)  # jobs started before they are asked for
    video_why: str = ""               # why seconds per video was not priced (planner)
    not_drawn: str = ""               # why the figures were not drawn (plan_uncertainty)
    pricer: Any = None                # the joint draws every row is priced under
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
        (compile_policy); a full compile everywhere on CPU targets, with --full-compile, and
        for models that run in this process (a child process could not load them)."""
        if (self.target.platform != "tpu" or self.settings.full_compile
                or runs_in_process(self.cfg)):
            return "compile"
        return "analyze"

    @property
    def skipped(self) -> list[str]:
        """Every Skip's line, in the order they were made (plan.json's planning.skipped)."""
        return [s.line() for s in self.skips]

    def lap(self, name: str, t0: float) -> None:
        self.timings[name] = round(time.perf_counter() - t0, 3)

    def skip(self, name: str, kind: str, reason: str, say: bool = True) -> None:
        """Leaves `name` out with a Skip; `say`: a note on the terminal too."""
        self.skips.append(Skip(name, kind, reason))
        if say:
            self.progress.note(f"skipped {name}: {reason}")

    def skip_reason(self, name: str) -> str:
        """Why `name` was first skipped; NOT_COMPILED when it never was."""
        return next((s.reason for s in self.skips if s.name == name), NOT_COMPILED)


def run_batch(progress: Progress, name: str, settings: Settings, jobs: list[Job],
              workers: int | None = None, ahead: Prefetch | None = None) -> list[Outcome]:
    """Runs `jobs` (compile/batch.run_jobs) as the phase `name`, each job's end said to
    `progress`; one Outcome per job, in order."""
    progress.phase(name, len(jobs))
    return run_jobs(jobs, workers=workers or settings.workers, cache=settings.cache,
                    executor=settings.executor, ahead=ahead,
                    progress=lambda done, total, out: progress.advance(
                        f"{out.name}{' (cached)' if out.cached else ''}"))

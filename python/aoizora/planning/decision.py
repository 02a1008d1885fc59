"""The decision: what Stage 1 and Stage 2 choose on their own, the figure AoiZora is judged
by. Each step takes the run_state.Run and what the step before it gave:

    run_stage1 (lower every candidate, Q1 and memory, Top-K)  ->  compile_top_k (the
    survivors)  ->  rank_placements (Stage 2, by Q2)  ->  decide (the simulator judges the
    best pairs: the pool)  ->  backend_accepted_decision (the pool less what the backend
    refuses, the decision held to compile_policy's rule)

UserError or NoFitError when a step leaves nothing; candidates that fail are Skips in run.
"""

from __future__ import annotations

import os
import time

from aoizora import _core
from aoizora.errors import NoFitError, UserError
from aoizora.planning import compile_policy, stage1
from aoizora.planning.run_state import LOWER, STAGE1, Run, Skip, run_batch
from aoizora.planning.stage2 import Pair

# How many of the best pairs by Q2 the simulator re-judges before the final choice.
SIMULATED_PAIRS = 8


def run_stage1(run: Run, candidates: list, no_fit: str) -> tuple[list, list]:
    """Lowers every candidate and runs Stage 1: (every Stage1Result, the Top-K). Raises
    NoFitError, `no_fit` and the least memory-hungry candidate's numbers, when none fits."""
    t0 = time.perf_counter()
    # Tracing and lowering run on one core each; XLA's TPU compile uses two.
    lowered = run_batch(run.progress, "lower to StableHLO", run.settings,
                        [run.job("lower", c) for c in candidates],
                        workers=run.settings.workers or os.cpu_count() or 1)
    run.outcomes += lowered
    run.lap("lower", t0)
    run.skips += [Skip(c.name, LOWER, o.error) for c, o in zip(candidates, lowered)
                  if not o.ok]
    t0 = time.perf_counter()
    run.progress.phase("Stage 1: Q1 and memory", len(candidates))
    s1 = []
    for c, o in zip(candidates, lowered):
        if o.ok:
            try:
                s1.append(stage1.analyze(c, o.text, run.stage2.source,
                                         **run.stage2.stage1_options()))
            except _core.CoreError as e:  # unreadable text, or a loop Stage 1 cannot price
                run.skip(c.name, STAGE1, f"Stage 1: {e}")
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


def compile_top_k(run: Run, candidates: list, s1: list, top: list) -> list:
    """Compiles the Top-K (with the oracle, every fitting candidate) for the target; the
    survivors are the Top-K results whose program loaded."""
    want = {r.candidate.name for r in top}
    if run.settings.oracle:
        want |= {r.candidate.name for r in s1 if r.fits}
    t0 = time.perf_counter()
    compile_policy.compile_candidates(run, "compile the Top-K for the TPU target",
                                      [c for c in candidates if c.name in want])
    run.lap("compile", t0)
    survivors = [r for r in top if r.candidate.name in run.graphs]
    if not survivors:
        raise UserError("every Top-K candidate failed to compile: "
                        + "; ".join(run.skipped[-3:]))
    return survivors


def rank_placements(run: Run, survivors: list) -> list[Pair]:
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


def decide(run: Run, ranked: list[Pair]) -> list[Pair]:
    """The simulator judges the best pairs; the best of them is the decision. Returns the
    judged pool."""
    t0 = time.perf_counter()
    pool = judged_pairs(ranked, SIMULATED_PAIRS)
    run.progress.phase("simulate", len(pool))
    for p in pool:
        run.stage2.simulate(p, run.graphs[p.candidate.name])
        run.progress.advance(p.candidate.name)
    run.lap("simulate", t0)
    run.timings["decision"] = round(time.perf_counter() - run.t_start, 3)
    return pool


def judged_pairs(ranked: list[Pair], k: int) -> list[Pair]:
    """The k best pairs by Q2, plus the best placement of every sharding ranked (so each
    survivor is judged at least once)."""
    out = list(ranked[:k])
    seen = {p.candidate.name for p in out}
    for p in ranked:
        if p.candidate.name not in seen:
            out.append(p)
            seen.add(p.candidate.name)
    return out


def decision_key(p: Pair):
    """The decision's order: simulated seconds, then Q2, then the names (placement_ties)."""
    return (p.simulated, p.q2, p.candidate.name, p.placement)


def backend_accepted_decision(run: Run, pool: list[Pair], base_cands) -> list[Pair]:
    """The pool without shardings the TPU backend refuses: the decision's sharding is
    compiled in full where its verdict cannot be predicted (or with Settings.verify), and
    while the backend refuses it, the next best's. The baselines' shardings not compiled
    yet (`base_cands`) are analysed in the same batch."""
    analyse = [c for c in dict.fromkeys(base_cands) if c.name not in run.graphs]
    while True:
        best = min(pool, key=decision_key)
        full = compile_policy.unpredicted(run, [best.candidate],
                                          force=compile_policy.plan_always_in_full(run))
        t0 = time.perf_counter()
        compile_policy.compile_candidates(
            run, ("full compile of the decision" + (", the baselines analysed beside it"
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

"""Pooling: the decision's judged pairs and the baselines' own pairs in one ranking, whose
first is the plan (a user never gets a plan slower than their deployment).

pooled() orders pairs by simulated seconds per forward, per video (a
plan_video.VideoModel), or by a worst case (robust_key, with Settings.robust);
backend_accepted_pool() holds the pool's best to compile_policy's rule before it becomes
the plan.
"""

from __future__ import annotations

from aoizora.planning import compile_policy, speedups
from aoizora.planning.run_state import Run
from aoizora.planning.stage2 import Pair


def pooled(pool: list[Pair], base_pairs: dict[str, Pair], video=None,
           robust=None) -> list[Pair]:
    """The decision's pool and the baselines' own pairs, one per (sharding, placement), best
    first: the plan is the first. Best: the fewest simulated seconds per forward, or with
    `video` (plan_video.VideoModel) per video (the steps and the reshards); with `robust`
    (a pair's worst case, robust_key) the least worst case."""
    first = video.order_key if video is not None else (lambda p: p.simulated)
    if robust is not None:
        first = robust
    return sorted({(p.candidate.name, p.placement): p
                   for p in pool + list(base_pairs.values())}.values(),
                  key=lambda p: (first(p), p.simulated, p.q2))


def backend_accepted_pool(run: Run, pool: list[Pair], base_pairs: dict[str, Pair], video=None
                          ) -> tuple[list[Pair], dict[str, Pair]]:
    """The judged pool and the baselines' pairs, less the pairs whose sharding would be the
    plan and that the TPU backend refuses: the best pooled pair's sharding (a baseline's
    own pair that wins the pooling) is held to the decision's rule, compiled in full before
    it becomes the plan where its verdict cannot be predicted (or with Settings.verify). A
    baseline so refused is listed in run.failed_baselines, and the next best pair is the
    plan (the decision, held to the rule by decision.backend_accepted_decision, ends the
    search)."""
    while True:
        best = pooled(pool, base_pairs, video, robust_key(run, video))[0].candidate
        name = best.name
        if (run.analysis_kind == "compile" or name in run.compiled_in_full
                or not compile_policy.unpredicted(
                    run, [best], force=compile_policy.plan_always_in_full(run))):
            return pool, base_pairs
        run.predicted.pop(name, None)
        compile_policy.compile_in_full(run, "full compile of the plan", [best])
        if name in run.graphs:
            return pool, base_pairs
        pool = [p for p in pool if p.candidate.name != name]
        for tag in [t for t, p in base_pairs.items() if p.candidate.name == name]:
            del base_pairs[tag]
            run.failed_baselines[tag] = {"candidate": name, "why": run.skip_reason(name)}


def bands(run: Run):
    """The error bands of the slice's generation (error_bands.py)."""
    from aoizora.hardware import error_bands

    return error_bands.for_generation(run.stage2.topology.spec["generation"])


def robust_key(run: Run, video):
    """With Settings.robust, a pair's worst case: the high end of its 90 % interval across
    the joint draws (per video with `video`, else per forward), or where there are no draws
    the high end of the error bands' interval; None without --robust."""
    if not run.settings.robust:
        return None
    if run.pricer is None:
        return high_end(bands(run), video)
    return lambda p: speedups.interval(run.pricer.times(p, p.tag))[1]


def high_end(bands, video):
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

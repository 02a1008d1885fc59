"""How sure a plan is: every row it compares priced under the same joint draws of the model
(model_draws.py), the speedup of the plan over each row with its interval and P
(speedups.py), and the changes the plan makes to what the user runs, each defended.

The pairs are ranked by the point figure (pooling.pooled). Each, best first, is taken:
  placement  on a placement other than JAX's default order for its sharding only where
             P(faster than that sharding on JAX's default order) >= DEFEND, else on JAX's
             default order;
  existing   as the plan only where P(faster than the existing deployment, the "existing"
             baseline) >= DEFEND; else the next pair is tried, and where none is defended
             the plan is the existing deployment.
Each change, made or not, is recorded with its median gain and P (plan.json's
uncertainty.changes). The compiler flags are defended the same way in flag_search.py.

    Pricer(draws, graphs, video)
        .times(pair, tag="") -> ndarray: seconds per video in each draw (per forward
            without a video model)
        .step_speedup(new_graph, old_graph, device_of) -> Speedup (per forward)
        .by -> intervals.PER_VIDEO | PER_FORWARD
    defend(pricer, ranked, default_of, existing, existing_tag, p) -> (Pair, [change dict])
    annotate(plan, pricer, pairs, best, changes, p, rule) -> None: each choice's extra["interval"] and
        extra["speedup"], and plan.uncertainty

Every figure is simulated; none measured.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from aoizora.planning import intervals, speedups
from aoizora.planning.model_draws import ModelDraws
from aoizora.planning.speedups import Speedup

PLACEMENT, EXISTING, FLAGS = "placement", "existing deployment", "compiler flags"
NOT_COVERED = ("each figure's spread comes from its generation's leave-one-out residuals "
               "(fitted), the largest of another generation's (derived) or a stated factor of "
               "2 (a rule's figure), widened until every left-out point lies inside its 90 % "
               "interval; the stages around the loop and the reshards are scaled by the "
               "draw's MXU and link factors, not simulated again; the kernel model's "
               "structural gaps and what a runtime does that is not priced are not covered")


class Pricer:
    def __init__(self, draws: ModelDraws, graphs: dict, video=None):
        self.draws, self.graphs, self.video = draws, graphs, video
        self.by = intervals.PER_VIDEO if video is not None else intervals.PER_FORWARD

    def step_s(self, pair) -> np.ndarray:
        return self.draws.step_s(self.graphs[pair.candidate.name], pair.device_of)

    def step_speedup(self, new_graph, old_graph, device_of) -> Speedup:
        """The speedup of one program over another on the same devices, per forward (the
        compiler flags change the step alone)."""
        return speedups.speedup(self.draws.step_s(new_graph, device_of),
                                self.draws.step_s(old_graph, device_of))

    def times(self, pair, tag: str = "") -> np.ndarray:
        if self.video is None:
            return self.step_s(pair)
        parts = self.video.parts(pair, tag)
        if any(v is None for v in parts.values()):
            return self.step_s(pair) * self.video.steps
        return self.draws.video_s(self.graphs[pair.candidate.name], pair.device_of, parts,
                                  self.video.steps, host=self.video.runs_maxdiffusion(tag))


def _same(a, b) -> bool:
    return (a.candidate.name, tuple(a.device_of)) == (b.candidate.name, tuple(b.device_of))


def _placement(pricer: Pricer, pair, default, p: float) -> tuple[Any, dict | None]:
    """`pair`, or its sharding on JAX's default order where the move off it is not
    defended; with the record of that move (None where there is none to make)."""
    if default is None or _same(pair, default):
        return pair, None
    s = speedups.speedup(pricer.times(pair, pair.tag), pricer.times(default, pair.tag))
    record = speedups.change(PLACEMENT, f"{pair.candidate.name} on {pair.placement}",
                    f"{pair.candidate.name} on JAX's default order", s, p)
    return (pair if record["made"] else default), record


def defend(pricer: Pricer, ranked: list, default_of: Callable, existing=None,
           existing_tag: str = "", p: float = speedups.DEFEND) -> tuple[Any, list[dict]]:
    """(the plan's pair, the changes considered): the first of `ranked` (best first by the
    point figure), each on its defended placement (default_of(pair): its sharding on JAX's
    default order, or None), that is faster than `existing` in P >= p of the draws; the
    existing deployment where none is. The records: the placement move of the plan, and
    each move away from the existing deployment considered (made or not)."""
    changes: list[dict] = []
    tried: set[tuple] = set()
    for pair in ranked:
        pair, moved = _placement(pricer, pair, default_of(pair), p)
        if (pair.candidate.name, tuple(pair.device_of)) in tried:
            continue  # another placement of a sharding tried on its default order already
        tried.add((pair.candidate.name, tuple(pair.device_of)))
        if existing is None or _same(pair, existing):
            return pair, changes + ([moved] if moved else [])
        if pair.simulated >= existing.simulated and changes:
            break  # slower by the point figure: no later one is the defended best
        s = speedups.speedup(pricer.times(pair, pair.tag),
                             pricer.times(existing, existing_tag))
        record = speedups.change(EXISTING, pair.candidate.name,
                        f"the existing deployment ({existing_tag})", s, p)
        changes.append(record)
        if record["made"]:
            return pair, ([moved] if moved else []) + changes
    return existing, changes


def _interval(point: float, t: np.ndarray, split_parts: tuple[float, float, float]) -> dict:
    lo, hi = speedups.interval(t)
    compute, comm, other = split_parts
    return {"point_s": point, "low_s": lo, "high_s": hi, "compute_s": compute,
            "exposed_comm_s": comm, "other_s": other}


def _parts(pair) -> tuple[float, float, float]:
    """(compute, exposed communication, unattributed) of one simulated forward."""
    fwd = (pair.split or {}).get("forward_s") or {}
    compute, other = fwd.get("compute", 0.0), fwd.get("unattributed", 0.0)
    return compute, sum(fwd.values()) - compute - other, other


def _row_intervals(pricer: Pricer, pair, tag: str) -> dict:
    c, m, o = _parts(pair)
    out = {"forward": _interval(pair.simulated, pricer.step_s(pair), (c, m, o)), "video": None}
    if pricer.video is not None:
        parts = pricer.video.parts(pair, tag)
        if all(v is not None for v in parts.values()):
            n = pricer.video.steps
            stages = sum(parts.get(k) or 0.0 for k in intervals.STAGES)
            out["video"] = _interval(sum(parts.values()), pricer.times(pair, tag),
                                     (n * c, n * m + parts["reshard_s"], n * o + stages))
    return out


def annotate(plan, pricer: Pricer, pairs: dict, best, changes: list[dict],
             p: float = speedups.DEFEND, rule: str = intervals.POINT) -> None:
    """`pairs`: (candidate, placement) -> (Pair, tag) of every row the plan shows."""
    mine = pricer.times(best)
    plan.choice.extra["interval"] = _row_intervals(pricer, best, "")
    by = pricer.by if intervals.ranked_interval(plan.choice.extra, pricer.by) else \
        intervals.PER_FORWARD
    if by != pricer.by:
        mine = pricer.step_s(best)
    rows = []
    for tag, c in list(plan.baselines.items()) + [(None, c) for c in plan.runners_up]:
        pair, own_tag = pairs[(c.candidate, c.placement)]
        c.extra["interval"] = _row_intervals(pricer, pair, own_tag)
        t = pricer.times(pair, own_tag) if by == pricer.by else pricer.step_s(pair)
        c.extra["speedup"] = speedups.speedup(mine, t).record()
    for role, name, c in intervals.compared_rows(plan):
        rows.append({"name": name, "role": role, "candidate": c.candidate,
                     "placement": c.placement, **c.extra["speedup"]})
    plan.uncertainty = {"method": "joint draws", **pricer.draws.record(), "ranked_by": by,
                        "rule": rule, "defend_p": p,
                        "speedups": rows, "changes": changes,
                        "ties": _ties(plan, by), "not_covered": NOT_COVERED}


def _ties(plan, by: str) -> list[dict]:
    mine = intervals.ranked_interval(plan.choice.extra, by)
    out = []
    for role, name, c in intervals.compared_rows(plan):
        iv = intervals.ranked_interval(c.extra, by)
        if iv is None or mine is None or not c.extra["speedup"]["tie"]:
            continue
        out.append({"name": name, "role": role, "candidate": c.candidate,
                    "placement": c.placement, "point_s": iv["point_s"], "low_s": iv["low_s"],
                    "high_s": iv["high_s"], "speedup": c.extra["speedup"],
                    **intervals.separation(mine, iv)})
    return sorted(out, key=lambda t: t["point_s"])

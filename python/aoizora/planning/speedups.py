"""How sure a comparison is: the plan's speedup over a row across joint draws of the model
(model_draws.py), and whether a change away from what the user runs can be defended.

For draws t_plan[d], t_row[d] (seconds, one model of the chip per d), the speedup is
t_row / t_plan: its median, its 90 % interval (5th to 95th percentile) and P, the share of
draws in which the plan is faster. A row *ties* the plan when its speedup's interval
contains 1.0. A change (leaving the existing deployment, JAX's default device order or the
default compiler flags) is defended when P >= DEFEND.

    speedup(plan_t, row_t) -> Speedup
    interval(t) -> (low, high): the 90 % interval of one row's seconds
    defended(s, p=DEFEND) -> bool
    change(what, new, old, s, p=DEFEND) -> dict: plan.json's record of a change considered
    change_words(new, old, s, p=DEFEND) -> str: the change in words, its median gain and P

Pure functions of the arrays.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

DEFEND = 0.9            # P(better) a plan needs to change what the user runs
LOW_Q, HIGH_Q = 5, 95   # percentiles of a 90 % interval


@dataclass(frozen=True)
class Speedup:
    median: float       # median of t_row / t_plan over the draws (> 1: the plan is faster)
    low: float          # its 5th percentile
    high: float         # its 95th percentile
    p_faster: float     # share of draws with t_plan < t_row

    @property
    def tie(self) -> bool:
        return self.low <= 1.0 <= self.high

    def record(self) -> dict:
        return asdict(self) | {"tie": self.tie}


def speedup(plan_t: np.ndarray, row_t: np.ndarray) -> Speedup:
    ratio = np.asarray(row_t) / np.asarray(plan_t)
    lo, med, hi = np.percentile(ratio, [LOW_Q, 50, HIGH_Q])
    return Speedup(float(med), float(lo), float(hi),
                   float(np.mean(np.asarray(plan_t) < np.asarray(row_t))))


def interval(t: np.ndarray) -> tuple[float, float]:
    lo, hi = np.percentile(np.asarray(t), [LOW_Q, HIGH_Q])
    return float(lo), float(hi)


def defended(s: Speedup, p: float = DEFEND) -> bool:
    return s.p_faster >= p


def change(what: str, new: str, old: str, s: Speedup, p: float = DEFEND) -> dict:
    """plan.json's record of one change the plan considered (made: defended at `p`)."""
    return {"what": what, "to": new, "from": old, "made": defended(s, p),
            "gain_pct": 100 * (1 - 1 / s.median), "p": s.p_faster,
            "words": change_words(new, old, s, p)}


def change_words(new: str, old: str, s: Speedup, p: float = DEFEND) -> str:
    """"dp2-uly4 saves 12.3 % over jax-default (P = 0.97)", or, not defended, "dp2-uly4
    would save 0.6 % over jax-default (P = 0.58): not worth a change"."""
    gain = 100 * (1 - 1 / s.median)
    if defended(s, p):
        return f"{new} saves {gain:.1f} % over {old} (P = {s.p_faster:.2f})"
    return (f"{new} would save {gain:.1f} % over {old} (P = {s.p_faster:.2f} < {p:g}): "
            f"not worth a change; {old} kept")

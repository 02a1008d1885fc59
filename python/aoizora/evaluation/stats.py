"""Statistics over simulated figures: Spearman rho, geometric mean, Stage 1's Q1 order."""

from __future__ import annotations

import math
from typing import Iterable


def spearman(xs: list[float], ys: list[float]) -> float | None:
    """Spearman rho (ties as average ranks); None when undefined (n < 3 or a constant side)."""
    if len(xs) != len(ys):
        raise ValueError("spearman: lengths differ")
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    from scipy.stats import spearmanr

    rho = float(spearmanr(xs, ys).statistic)
    return None if math.isnan(rho) else rho


def geomean(xs: Iterable[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def q1_order(stage1_results: list) -> list:
    """Fitting Stage 1 results in Q1 order, ties in enumeration order (as select_top_k)."""
    from aoizora import _core

    fitting = [r for r in stage1_results if r.fits]
    return [fitting[i] for i in _core.select_top_k([r.q1_seconds for r in fitting], 0)]

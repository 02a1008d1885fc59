"""Stage 1's Q1 against the simulated step, over every fitting candidate the oracle compiled:
per setting the rank correlation and the relative error, over the grid the share within 20 %
and the classes of sharding it misses. Q1 is predicted and the step simulated; neither is
measured."""

from __future__ import annotations

import re
import statistics
from typing import Any

from aoizora.evaluation.grid import POOL_ALL
from aoizora.evaluation.stats import spearman

WITHIN = 0.20   # the bound on |Q1 / simulated - 1|


def sharding_class(name: str) -> str:
    """A candidate's class: its name without the axis sizes ("dp2-usp4x2" -> "dp-usp",
    "fsdp2-ag8w" -> "fsdp-agw"), so one row counts every size of a form."""
    return re.sub(r"\d+(x\d+)*", "", name)


def _pairs(result: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(candidate, Q1, simulated) of every compiled fitting candidate of an oracle result."""
    if result["status"] != "ok" or result["stage1"].get("pool") != POOL_ALL:
        return []
    return [(c["candidate"], c["q1_s"], c["simulated_s"])
            for c in result["stage1"].get("candidates") or []
            if c["simulated_s"] and c["q1_s"] is not None]


def per_setting(result: dict[str, Any]) -> dict[str, Any] | None:
    """Spearman(Q1, simulated) and Q1's relative error over one setting's candidates; None
    for a result without the oracle's candidates."""
    pairs = _pairs(result)
    if not pairs:
        return None
    err = [q / s - 1 for _, q, s in pairs]
    return {"candidates": len(pairs), "spearman": spearman([q for _, q, _ in pairs],
                                                           [s for _, _, s in pairs]),
            "median_rel_err": statistics.median(err), "min_rel_err": min(err),
            "max_rel_err": max(err), "within": sum(abs(e) <= WITHIN for e in err) / len(err)}


def over_grid(results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The share of every setting's candidates within 20 %, and per class of sharding the
    count, the share within and the median error (worst share first)."""
    rows = [(r["key"], n, q / s - 1) for r in results for n, q, s in _pairs(r)]
    if not rows:
        return None
    by_class: dict[str, list[float]] = {}
    for _, n, e in rows:
        by_class.setdefault(sharding_class(n), []).append(e)
    classes = {c: {"candidates": len(es), "within": sum(abs(e) <= WITHIN for e in es) / len(es),
                   "median_rel_err": statistics.median(es)} for c, es in by_class.items()}
    worst = sorted(rows, key=lambda x: -abs(x[2]))[:5]
    return {"settings": len({k for k, _, _ in rows}), "candidates": len(rows),
            "within": sum(abs(e) <= WITHIN for _, _, e in rows) / len(rows), "bound": WITHIN,
            "classes": dict(sorted(classes.items(), key=lambda kv: (kv[1]["within"], kv[0]))),
            "worst": [{"key": k, "candidate": n, "rel_err": e} for k, n, e in worst]}

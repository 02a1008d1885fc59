"""Stage 1's K and its recall, fitted on one half of the grid and reported on the other.

Recall is "the sharding that wins after Stage 2 and the simulator over every fitting
candidate is in Stage 1's Top-K". It is only defined for results made with --oracle (every
fitting candidate compiled); without it only the Top-K and the baselines are compiled, and a
miss could only show if a baseline won. K is the least that keeps every fit-half winner
(worst winner rank + 1) plus a slack of one; the test half is never looked at to choose it.
These are figures against the simulator, never measured."""

from __future__ import annotations

from typing import Any

from aoizora.evaluation.grid import POOL_ALL

SLACK = 1


def _oracle_ok(results: list[dict[str, Any]], which: str) -> list[dict[str, Any]]:
    return [r for r in results if r["status"] == "ok" and r.get("half") == which
            and r["stage1"]["pool"] == POOL_ALL]


def choose_k(results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """K from the fit half's oracle results; None when there is none."""
    fit = _oracle_ok(results, "fit")
    ranks = [r["stage1"]["winner_q1_rank"] for r in fit]
    if not fit or any(x is None for x in ranks):
        return None
    return {"k": max(ranks) + 1 + SLACK, "settings": [r["key"] for r in fit],
            "winner_q1_ranks": ranks, "slack": SLACK}


def miss_cost(result: dict[str, Any], k: int) -> float | None:
    """How much slower the best of Stage 1's first k candidates is than the winner
    (simulated; 0 when the winner is among them), from the result's candidates in Q1 order
    (older results: their Top-K's loss, at their own K only); None where neither tells."""
    s1 = result["stage1"]
    if s1.get("candidates") is None:   # results made before the list: only the planner's K
        return s1.get("top_k_loss") if s1.get("k") == k else None
    sims = [c["simulated_s"] for c in s1["candidates"][:k] if c["simulated_s"] is not None]
    if not sims:
        return None
    return min(sims) / result["stage1"]["winner_simulated_s"] - 1


def held_out_recall(results: list[dict[str, Any]], k: int) -> dict[str, Any] | None:
    """Recall at K over the test half's oracle results, with each miss and what it costs
    (the Top-K's best over the winner, simulated)."""
    test = _oracle_ok(results, "test")
    if not test:
        return None
    misses = [{"key": r["key"], "winner": r["stage1"]["winner"],
               "winner_q1_rank": r["stage1"]["winner_q1_rank"], "cost": miss_cost(r, k)}
              for r in test if r["stage1"]["winner_q1_rank"] is None
              or r["stage1"]["winner_q1_rank"] >= k]
    costs = [m["cost"] for m in misses if m["cost"] is not None]
    return {"k": k, "settings": len(test), "hits": len(test) - len(misses),
            "recall": (len(test) - len(misses)) / len(test), "misses": misses,
            "worst_miss_cost": max(costs) if costs else None}


def recall_summary(results: list[dict[str, Any]], k_used: int | None) -> dict[str, Any]:
    """The K fitted on the fit half, recall on the test half at that K and at the K the
    planner used (when it differs), each half listed by its settings."""
    fitted = choose_k(results)
    out: dict[str, Any] = {"fit": fitted, "note": "against the simulator, not measured"}
    if fitted:
        out["test_at_fitted_k"] = held_out_recall(results, fitted["k"])
    if k_used and (not fitted or k_used != fitted["k"]):
        out["test_at_planner_k"] = held_out_recall(results, k_used)
    return out

"""One setting of the grid: plan it (cold, then warm), simulate every placement of every
compiled sharding, and compute the figures (analyze). Everything here is simulated except
planning time, which is measured.

AoiZora's figure is the *decision*: the best pair Stage 1 + Stage 2 choose from the Top-K,
before the planner pools the baselines' own pairs (the plan `aoizora plan` returns is the
best of both, so comparing it with the baselines could never show a loss)."""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from typing import Any, Callable

from aoizora.errors import UserError
from aoizora.evaluation.grid import NOTE, POOL_ALL, POOL_TOP_K, SCHEMA, Setting, half
from aoizora.evaluation.placement_gain import beyond_axis_orders, every_device_order
from aoizora.evaluation.provenance import provenance
from aoizora.evaluation.stats import q1_order, spearman


def _pair_dict(p, stage2) -> dict[str, Any]:
    c = p.candidate
    return {"candidate": c.name, "mesh_shape": list(c.mesh_shape),
            "axis_names": list(c.axis_names), "placement": p.placement,
            "device_coords": stage2.coords(p.device_of), "q1_s": p.q1, "q2_s": p.q2,
            "simulated_s": p.simulated}


def _choice_dict(ch) -> dict[str, Any]:
    return {"candidate": ch.candidate, "mesh_shape": list(ch.mesh_shape),
            "axis_names": list(ch.axis_names), "placement": ch.placement,
            "device_coords": ch.device_coords, "q1_s": ch.q1_s, "q2_s": ch.q2_s,
            "simulated_s": ch.simulated_s, "label": ch.extra.get("label")}


def judge_all(result) -> tuple[dict[str, list], dict[str, Any]]:
    """(candidate name -> every placement Stage 2 considers plus JAX's default order, all
    simulated, best simulated first; candidate name -> the pair on JAX's default order).
    Covers every compiled candidate of `result`; a mesh JAX's default order cannot lay out
    on the slice (NoDefaultOrder, as the planner reports it) has no default pair, and the
    placement figures that compare with it are left out (None) for it."""
    from aoizora.planning.stage2 import NoDefaultOrder

    stage2 = result.stage2
    q1_of = {r.candidate.name: r.q1_seconds for r in result.stage1}
    by_name = {r.candidate.name: r.candidate for r in result.stage1}
    ranked_of: dict[str, list] = {}
    for p in result.ranked:
        ranked_of.setdefault(p.candidate.name, []).append(p)
    out, defaults = {}, {}
    for name, graph in result.graphs.items():
        pairs = list(ranked_of.get(name) or stage2.rank(by_name[name], graph, q1=q1_of.get(name)))
        try:
            d = stage2.default_pair(by_name[name], graph, q1=q1_of.get(name))
        except NoDefaultOrder:
            d = None
        if d is not None:
            same = next((p for p in pairs if p.device_of == d.device_of), None)
            if same is None:
                pairs.append(d)
            defaults[name] = same or d
        for p in pairs:
            if p.simulated is None:
                stage2.simulate(p, graph)
        out[name] = sorted(pairs, key=lambda p: (p.simulated, p.q2, p.placement))
    return out, defaults


def _timed_plan(setting: Setting, settings) -> tuple[Any, float]:
    from aoizora.planning.planner import plan

    t0 = time.perf_counter()
    r = plan(setting.model, setting.video, setting.frames, setting.topology, settings)
    return r, time.perf_counter() - t0


def evaluate_setting(setting: Setting, *, oracle: bool = False, workers: int | None = 1,
                     cache=None, top_k: int | None = None, exhaustive: bool = True,
                     log: Callable[[str], None] = lambda s: None,
                     executor=None) -> dict[str, Any]:
    """Evaluates one setting (its jobs on `executor`, default local processes); returns a
    JSON-ready dict. A setting that fits in no memory
    comes back with status "no-fit" and the planner's reason; with oracle, every fitting
    candidate is compiled (for the oracle and recall)."""
    from aoizora.compile.cache import Cache
    from aoizora.errors import NoFitError
    from aoizora.planning.planner import Settings

    cache = cache if cache is not None else Cache()
    base = {"schema": SCHEMA, "setting": asdict(setting), "key": setting.key, "note": NOTE,
            "half": half(setting),
            "provenance": provenance({"oracle": oracle, "top_k": top_k, "workers": workers,
                                      "exhaustive": exhaustive, "executor": getattr(
                                          executor, "description", "local processes")})}
    plain = Settings(top_k=top_k, workers=workers, cache=cache, oracle=False,
                     executor=executor)
    load_before = os.getloadavg()[0]
    try:
        log(f"{setting.key}: planning (cold)")
        cold, cold_s = _timed_plan(setting, plain)
    except NoFitError as e:
        return {**base, "status": "no-fit", "reason": str(e)}
    except UserError as e:
        return {**base, "status": "error", "reason": str(e)}
    log(f"{setting.key}: planned in {cold_s:.1f} s; planning again (warm)")
    warm, warm_s = _timed_plan(setting, plain)
    planning = _planning_times(cold, cold_s, warm, warm_s, workers, load_before)
    full = cold
    if oracle:
        log(f"{setting.key}: compiling every fitting candidate (oracle)")
        full, oracle_s = _timed_plan(setting, Settings(top_k=top_k, workers=workers,
                                                       cache=cache, oracle=True,
                                                       executor=executor))
        planning["oracle_s"] = round(oracle_s, 3)
    return {**base, "status": "ok",
            **analyze(cold, full, oracle=oracle, exhaustive=exhaustive, log=log),
            "planning": planning}


def _planning_times(cold, cold_s, warm, warm_s, workers, load_before) -> dict[str, Any]:
    c, w = cold.plan.planning, warm.plan.planning
    return {
        "cold_s": round(cold_s, 3), "cold_cache_hits": c["cache_hits"],
        # to the choice among the Top-K; the rest is the baselines' compiles for the comparison
        "cold_decision_s": c.get("decision_seconds"),
        "cold_jobs": c["jobs"], "cold_phases": c["phases"],
        "warm_s": round(warm_s, 3), "warm_cache_hits": w["cache_hits"],
        "warm_jobs": w["jobs"], "warm_phases": w["phases"],
        "workers": workers, "cpus": os.cpu_count(),
        # the machine is shared: the 1-minute load average before and after the cold run
        "load_before": round(load_before, 2), "load_after_cold": round(os.getloadavg()[0], 2)}


def analyze(result, full=None, *, oracle: bool = False, exhaustive: bool = False,
            log: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """The figures of one setting from a PlanResult `result` (AoiZora's own run) and `full`
    (the same setting with more candidates compiled, for the oracle and recall; default:
    `result`)."""
    full = full or result
    plan = result.plan
    judged, defaults = judge_all(full)
    d = plan.planning["decision"]
    decision = {**d, "q2_s": None}
    by_placement = {p.placement: p for p in judged.get(d["candidate"], [])}
    if d["placement"] in by_placement:
        decision["q2_s"] = by_placement[d["placement"]].q2
    baselines = {tag: _choice_dict(c) for tag, c in plan.baselines.items() if tag != "oracle"}
    every = [p for pairs in judged.values() for p in pairs]
    oracle_pair = min(every, key=lambda p: (p.simulated, p.q2, p.candidate.name, p.placement))
    oracle_d = _pair_dict(oracle_pair, full.stage2)

    def speedup(b):  # > 1: the decision is faster; < 1: a loss, reported as such
        return b["simulated_s"] / d["simulated_s"] if b and b.get("simulated_s") else None

    speedups = {f"vs_{tag}": speedup(b) for tag, b in baselines.items()}
    speedups["vs_existing"] = speedup(baselines.get("existing"))
    speedups["vs_alpa"] = speedup(baselines.get("alpa-style"))
    speedups["oracle"] = speedup(oracle_d)   # <= 1: the oracle is at least as fast
    placement = _placement(judged, defaults, d, full, exhaustive, log)
    return {"topology": plan.topology, "aoizora": decision,
            "plan": {**_choice_dict(plan.choice),
                     "pooling_changed_choice": plan.planning["pooling_changed_choice"],
                     "chosen_from": plan.planning.get("chosen_from")},
            "baselines": baselines, "oracle": {**oracle_d, "pool": _pool(oracle)},
            # a baseline whose sharding did not compile or could not be priced, and why
            "baselines_failed": plan.planning.get("baselines_failed", {}),
            "speedup": speedups, **placement, "stage1": _stage1(plan, full, judged, oracle),
            "spearman": _spearman(plan, judged), "skipped": list(result.skipped),
            "q2_vs_simulated": [[n, p.placement, p.q2, p.simulated]
                                for n in plan.planning["top_k"] for p in judged.get(n, [])]}


def _pool(oracle: bool) -> str:
    return POOL_ALL if oracle else POOL_TOP_K


def _placement(judged, defaults, d, full, exhaustive, log) -> dict[str, Any]:
    """The decision's sharding: its placement spread, what beyond-axis-order placements
    gain, and (small slices) every device order."""
    mine = judged.get(d["candidate"], [])
    default = defaults.get(d["candidate"])
    sims = [p.simulated for p in mine]
    spread = {"candidate": d["candidate"], "placements": len(mine),
              "best_s": min(sims) if sims else None, "worst_s": max(sims) if sims else None,
              "spread": (max(sims) / min(sims) - 1) if sims else None,
              "default_s": default.simulated if default else None}
    out = {"placement_spread": spread,
           "placement_gain": beyond_axis_orders(mine, default) if mine and default else None,
           "every_order": None}
    if exhaustive and mine and default:
        log(f"{d['candidate']}: simulating every device order")
        out["every_order"] = every_device_order(full.stage2, full.graphs[d["candidate"]],
                                                d["chip_ids"], default.device_of)
    return out


def _stage1(plan, full, judged, oracle: bool) -> dict[str, Any]:
    """Recall: the winner over every compiled candidate and its Q1 rank (0-based; in the
    Top-K iff rank < K). Only with oracle is every fitting candidate compiled, so only then
    can a candidate outside the Top-K and the baselines win."""
    ranked = q1_order(full.stage1)
    order = [r.candidate.name for r in ranked]
    top_k = list(plan.planning["top_k"])
    winner = min(judged, key=lambda n: (judged[n][0].simulated, n))
    out = {"legal": plan.planning["candidates"], "fitting": plan.planning["fitting"],
           "k": len(top_k), "top_k": top_k, "compiled": sorted(judged), "pool": _pool(oracle),
           "winner": winner, "winner_simulated_s": judged[winner][0].simulated,
           "winner_q1_rank": order.index(winner) if winner in order else None,
           "in_top_k": winner in top_k, "candidates": _q1_beside_simulated(ranked, judged)}
    in_k = [n for n in top_k if n in judged]
    if in_k:
        kbest = min(in_k, key=lambda n: (judged[n][0].simulated, n))
        out.update(top_k_best=kbest, top_k_best_s=judged[kbest][0].simulated,
                   top_k_loss=judged[kbest][0].simulated / judged[winner][0].simulated - 1)
    return out


def _q1_beside_simulated(ranked, judged) -> list[dict[str, Any]]:
    """Each fitting candidate in Q1 order: its Q1 (predicted) and, when compiled, its best
    simulated step over the placements judged. From these the tables take Q1's error and
    recall and a miss's cost at any K."""
    return [{"candidate": r.candidate.name, "q1_s": r.q1_seconds,
             "simulated_s": judged[r.candidate.name][0].simulated
             if r.candidate.name in judged else None} for r in ranked]


def _spearman(plan, judged) -> dict[str, Any]:
    """Spearman rho between Q2 and the simulator, per Top-K survivor over its placements."""
    rho, scatter = {}, []
    for name in plan.planning["top_k"]:
        pairs = judged.get(name)
        if not pairs:
            continue
        q2_best = min(pairs, key=lambda p: (p.q2, p.placement))
        sims = [p.simulated for p in pairs]
        rho[name] = {"rho": spearman([p.q2 for p in pairs], sims), "placements": len(pairs),
                     # defined for any count (v5e:2x2 has 2 placements, where rho is not)
                     "q2_best_is_sim_best": q2_best.simulated <= min(sims) * (1 + 1e-9),
                     "q2_best_loss": q2_best.simulated / min(sims) - 1,
                     "spread": max(sims) / min(sims) - 1}
        scatter += [(p.q2, p.simulated) for p in pairs]
    defined = [v["rho"] for v in rho.values() if v["rho"] is not None]
    return {"per_candidate": rho, "min": min(defined) if defined else None,
            "mean": sum(defined) / len(defined) if defined else None,
            "q2_best_is_sim_best": sum(v["q2_best_is_sim_best"] for v in rho.values()),
            "survivors": len(rho),
            "pooled": spearman([x[0] for x in scatter], [x[1] for x in scatter])}

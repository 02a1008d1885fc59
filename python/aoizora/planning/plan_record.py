"""The plan and its record: the pooled pairs' best becomes plan_format.Plan, with
plan.json's "planning" (how it was made), "video", "baselines", "flags" and its
uncertainty, returned as a PlanResult (build_result).

Figures are predicted (Q1, Q2) or simulated; wall-clock planning time is measured. Every
function reads the run_state.Run the phases filled; only build_result writes the run's
final timings.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from aoizora.compile.jobs import Job
from aoizora.plan_format import Choice, Plan
from aoizora.planning import baseline_pairs, decision, flag_search, plan_uncertainty, pooling
from aoizora.planning.run_state import Run, run_batch
from aoizora.planning.stage2 import Pair


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


def build_result(run: Run, asked: dict[str, str], candidates: list, s1: list, top: list,
                 ranked: list[Pair], pool: list[Pair], base_pairs: dict[str, Pair],
                 video, oracle: Pair | None) -> PlanResult:
    """The plan: the best of the decision and the baselines' own pairs (a user never gets a
    plan slower than their deployment), saying when a baseline replaced the decision; with
    the stages around the loop priced (`video`), the best per video."""
    chosen_by_decision = min(pool, key=decision.decision_key)
    t0 = time.perf_counter()
    simulated = pooling.pooled(pool, base_pairs, video, pooling.robust_key(run, video))
    pricer = run.pricer
    best, changes = plan_uncertainty.defended(run, pricer, simulated, base_pairs)
    drawn_s = time.perf_counter() - t0
    stage2, graphs = run.stage2, run.graphs
    choice = chosen(run, best, ranked)
    run.timings["total"] = round(time.perf_counter() - run.t_start, 3)
    t0 = time.perf_counter()
    the_plan = Plan(
        model={"name": asked["name"], "layers": getattr(run.cfg, "layers", None),
               "params": param_count(run.cfg), **model_facts(run.cfg)},
        workload=workload_record(asked["video"], run.cfg, run.wl),
        topology={**stage2.describe(), "compile_target": run.target.describe()},
        choice=choice,
        runners_up=[stage2.choice(p) for p in other_shardings(simulated, best)][:4],
        baselines=baseline_choices(stage2, base_pairs, oracle, run.failed_recipes,
                                   run.no_default_order, run.predicted),
        planning=planning_record(run, candidates, s1, top, ranked, chosen_by_decision, best,
                                 base_pairs),
        video=video_record(run, video, best, base_pairs, oracle,
                           pooling.pooled(pool, base_pairs)[0]),
    )
    plan_uncertainty.annotate_intervals(run, the_plan, simulated, video, pricer, best,
                                        base_pairs, oracle, changes)
    run.timings["joint_draws"] = round(drawn_s + time.perf_counter() - t0, 3)
    run.timings["total"] = the_plan.planning["seconds"] = round(
        time.perf_counter() - run.t_start, 3)
    flags_record(run, the_plan, best, simulated, pricer)
    return PlanResult(the_plan, simulated, choice.extra["placements"], run.skipped,
                      graphs[best.candidate.name], stage2.topology, stage1=s1, ranked=ranked,
                      graphs=graphs, stage2=stage2)


def flags_record(run: Run, the_plan: Plan, best: Pair, simulated: list[Pair],
                 pricer=None) -> None:
    """plan.json's "flags": the mode, the chosen set, and with --flags search the search
    (flag_search.py); the compile target's libtpu_init_args carry the chosen flags, so that
    --emit maxdiffusion runs the plan under them."""
    chosen_set, searched = run.flag_set, None
    if run.settings.flags == "search":
        t0 = time.perf_counter()
        chosen_set, searched = flag_search.search(
            run.stage2, best, simulated, run.stage2.topology.spec["generation"],
            make_job=lambda c, flags: Job(run.analysis_kind, c, run.cfg, run.wl,
                                          run.target.spec, flags=flags),
            run_batch=lambda name, jobs: run_batch(run.progress, name, run.settings, jobs),
            budget=run.settings.flag_budget,
            speedup=None if pricer is None else pricer.step_speedup,
            defend_p=run.settings.defend_p)
        run.lap("flag search", t0)
        run.timings["total"] = round(time.perf_counter() - run.t_start, 3)
        the_plan.planning["seconds"] = run.timings["total"]
    if searched and searched.get("change") and the_plan.uncertainty:
        the_plan.uncertainty.setdefault("changes", []).append(searched["change"])
    flag_search.apply(the_plan, run.settings.flags, chosen_set, searched)


def chosen(run: Run, best: Pair, ranked: list[Pair]) -> Choice:
    """The plan's choice, with its sharding's placements for the report. A baseline's
    sharding that won the pooling was not ranked by Stage 2: it is ranked now, so that the
    report lists its placements as for any plan."""
    graph = run.graphs[best.candidate.name]
    own = [p for p in ranked if p.candidate.name == best.candidate.name] or run.stage2.rank(
        best.candidate, graph, q1=best.q1)
    choice = run.stage2.choice(best, with_links=True, graph=graph)
    if best.candidate.name in run.predicted and best.candidate.name not in run.compiled_in_full:
        choice.extra["analysed_only"] = run.predicted[best.candidate.name]
    # for the report, a pure function of the plan
    choice.extra["placements"] = [{"name": p.placement, "q2_s": p.q2,
                                   "simulated_s": p.simulated} for p in own][:20]
    return choice


def planning_record(run: Run, candidates: list, s1: list, top: list, ranked: list[Pair],
                    decided: Pair, best: Pair, base_pairs: dict[str, Pair]) -> dict:
    """plan.json's "planning": how the plan was made (times measured, counts, what was
    skipped or only analysed, the decision before pooling)."""
    # A baseline's own pair won the pooling (one the pool also judged carries no tag).
    pooled = bool(best.tag) and (best.candidate.name, best.placement) != (
        decided.candidate.name, decided.placement)
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
            "programs": programs(run),
            "compiled_in_full": sorted(run.compiled_in_full) if run.analysis_kind == "analyze"
            else sorted(run.graphs),
            "analysed_only": {n: run.predicted[n] for n in sorted(run.predicted)
                              if n in shown(best, base_pairs)},
            "executor": getattr(run.settings.executor, "description", "local processes"),
            "pairs_ranked": len(ranked),
            "decision": {"candidate": decided.candidate.name,
                         "placement": decided.placement,
                         "simulated_s": decided.simulated,
                         "chip_ids": list(decided.device_of)},
            "pooling_changed_choice": pooled,
            "chosen_from": best.tag if pooled else "top-k"}


def programs(run: Run) -> str:
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


def shown(best: Pair, base_pairs: dict[str, Pair]) -> set[str]:
    """The shardings the plan shows: its own and the baselines'."""
    return {best.candidate.name} | {p.candidate.name for p in base_pairs.values()}


def video_record(run: Run, video, best: Pair, base_pairs: dict[str, Pair],
                 oracle: Pair | None, by_step: Pair) -> dict:
    """plan.json's "video": seconds per video of the plan and of each baseline by part
    (pipeline/plan_video.py), or why they were not priced."""
    if video is None:
        return {"kind": "simulated", "not_priced": run.video_why}
    shown_pairs = dict(base_pairs)
    if oracle is not None:
        shown_pairs["oracle"] = oracle
    record = video.record(best, shown_pairs, by_step=by_step)
    existing = baseline_pairs.existing_tag(base_pairs, run.no_default_order)
    if existing is not None:
        record["baselines"] = {"existing": record["baselines"][existing],
                               **record["baselines"]}
    return record


def other_shardings(simulated: list[Pair], best: Pair) -> list[Pair]:
    """The best pair of each sharding but the plan's, in `simulated`'s order."""
    seen, out = {best.candidate.name}, []
    for p in simulated:
        if p.candidate.name not in seen:
            seen.add(p.candidate.name)
            out.append(p)
    return out


def baseline_choices(stage2, base_pairs, oracle: Pair | None, failed: dict[str, str],
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
    best = baseline_pairs.existing_tag(base_pairs, no_default)
    if best is not None:
        out = {"existing": replace(out[best], extra=dict(out[best].extra)), **out}
    if oracle is not None:
        out["oracle"] = stage2.choice(oracle, label="oracle")
    return out


def workload_record(video: str | None, cfg, wl) -> dict[str, Any]:
    """plan.json's "workload": the video setting, or for a FunctionSpec its name."""
    if wl is None:  # a FunctionSpec: its arguments are the workload
        return {"function": cfg.name, "video": None, "frames": None, "tokens": None}
    batch = getattr(wl, "batch", None)
    # batch: the program's (each video's CFG pair); videos_per_call: what a call serves
    return {"video": video, "frames": wl.frames, "tokens": getattr(wl, "tokens", None),
            "batch": batch, "videos_per_call": None if batch is None else max(1, batch // 2)}


def model_facts(cfg) -> dict[str, Any]:
    """What a model adds to the plan's model record (WanExperts: its experts, all served by
    this one plan, and how many are resident; a spec from --model: where it came from)."""
    describe = getattr(cfg, "describe", None)
    facts = describe() if callable(describe) else {}
    source = getattr(cfg, "source", None)
    return {**facts, "source": source} if source else facts


def param_count(cfg) -> int | None:
    """Parameters of a model that can count them (WanConfig); None for one that cannot."""
    count = getattr(cfg, "param_count", None)
    return int(count()) if callable(count) else None

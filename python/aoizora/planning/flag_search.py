"""Compiler flags as a choice of the plan (`aoizora plan --flags none|published|search`).

    none       every program compiled without flags beyond jaxenv's (the default)
    published  every transformer program compiled under MaxDiffusion's published set for
               the slice's generation (compile_flags.published)
    search     after the plan is chosen, the best few shardings (FLAG_SHARDINGS) are compiled
               again under each set of compile_flags.search_sets: none, the published set,
               each of its flags alone, then the rest of the catalogue, at most `budget`
               compiles under flags (the sets left out are listed), beside each
               sharding's compile without flags (the plan's own, counted apart). Each (sharding, flags) program gets
               Stage 2's best placement by Q2 and is simulated there and on the plan's own
               placement; a set whose program
               is the same as none's (flag_effects: "identical" or "attributes only") is
               reported as such and not ranked. The plan's flags are the ranked set with the
               fewest simulated seconds for the plan's sharding on the plan's placement
               (none unless one is strictly faster); the best (sharding, placement, flags)
               triple is recorded beside it; one that beats the plan under its chosen
               flags is reported, not adopted (the plan's sharding and placement were
               chosen per video, with the stages around the loop, without flags). A set
               other than none is adopted only where it is faster in at least
               speedups.DEFEND of the joint draws of the model (confidence.py); else the
               plan keeps none and the search record's "change" says why.

    plan_flags(mode, generation, platform, in_process) -> FlagSet   what the jobs run under
    apply(plan, mode, chosen, search=None)          plan.json's "flags" and the compile
                                                    target's libtpu_init_args
    search(...) -> (chosen FlagSet, search record)
    defended(chosen, best, graphs, speedup, p) -> (FlagSet, change record or None)

Every figure is simulated on the model of the chip, never measured. The stages around the
loop (text encoder, VAE) are compiled without flags in every mode.
"""

from __future__ import annotations

from typing import Any, Callable

from aoizora import _core
from aoizora.compile import compile_flags
from aoizora.compile.compile_flags import FlagSet
from aoizora.compile.jobs import Job
from aoizora.planning import flag_effects, speedups
from aoizora.planning.stage2 import Pair, Stage2, UnknownTripCount

MODES = ("none", "published", "search")
FLAG_SHARDINGS = 2          # the best few shardings the search compiles under each set
FLAG_BUDGET = 16            # compiles under flags at most (none's are the plan's, cached)


def plan_flags(mode: str, generation: str, platform: str, in_process: bool) -> FlagSet:
    """The set every transformer job of a plan runs under: MaxDiffusion's published one
    for "published", none otherwise (search starts from none). UserError, before any work,
    for a mode not in MODES, a CPU target (libtpu's flags are the TPU compiler's) or a model
    that compiles in this process (flags need a worker started with them)."""
    from aoizora.errors import UserError

    if mode not in MODES:
        raise UserError(f"--flags {mode!r}: use one of {', '.join(MODES)}")
    if mode != "none" and platform != "tpu":
        raise UserError(f"--flags {mode}: libtpu's flags change TPU programs only; this plan "
                        "compiles for CPU devices (--compile-target cpu)")
    if mode != "none" and in_process:
        raise UserError(f"--flags {mode}: your model compiles in this process, and libtpu "
                        "takes its flags only in a worker started with them: use --flags none")
    return compile_flags.published(generation) if mode == "published" \
        else compile_flags.lookup(compile_flags.NONE)


def record(mode: str, chosen: FlagSet, search: dict | None = None) -> dict[str, Any]:
    out = {"mode": mode, "chosen": chosen.to_dict(), "kind": "simulated",
           "not_flagged": "the stages around the loop (text encoder, VAE): compiled "
                          "without flags in every mode"}
    if search is not None:
        out["search"] = search
    return out


def apply(plan, mode: str, chosen: FlagSet, search: dict | None = None) -> None:
    """Records the flags in a plan: plan.flags, and the chosen flags in its compile
    target's libtpu_init_args (what --emit maxdiffusion puts in LIBTPU_INIT_ARGS)."""
    plan.flags = record(mode, chosen, search)
    target = plan.topology.get("compile_target", {})
    if target.get("platform") == "tpu":
        target["libtpu_init_args"] = compile_flags.env_value(
            target.get("libtpu_init_args", ""), chosen.flags)


def exposed_seconds(pair: Pair) -> float:
    """Seconds of the simulated step no compute hides (step_split: every kind but
    compute)."""
    return sum(s for k, s in pair.split["forward_s"].items() if k != "compute")


def _figures(stage2: Stage2, pair: Pair, graph) -> dict[str, Any]:
    stage2.simulate(pair, graph)
    return {"placement": pair.placement, "chip_ids": list(pair.device_of), "q2_s": pair.q2,
            "simulated_s": pair.simulated, "exposed_comm_s": exposed_seconds(pair)}


def _row(stage2: Stage2, c, s: FlagSet, text: str, graph, plan_devices, base) -> dict:
    """One (sharding, flags) program: its best placement and the plan's, simulated."""
    summary = flag_effects.summary(text, graph)
    best = stage2.rank(c, graph)[0]
    row = {"candidate": c.name, "flag_set": s.name, "flags": list(s.flags),
           "source": s.source, "summary": summary,
           "changes": flag_effects.changes(base, summary) if base else None,
           "best": _figures(stage2, best, graph)}
    if plan_devices is not None:
        q2 = _core.evaluate_q2(graph, stage2.topology, plan_devices).seconds
        row["plan_placement"] = _figures(stage2, Pair(c, "plan", plan_devices, q2), graph)
    row["ranked"] = s.name == compile_flags.NONE or row["changes"]["program"] == "changed"
    return row


def _budgeted(shardings: list, sets: list[FlagSet], budget: int):
    """(shardings, sets, left out): sets kept whole for the first sharding, the others
    added while the budget lasts; the sets that fit under it for none."""
    flagged = [s for s in sets if s.flags]
    per = max(1, min(len(flagged), budget))
    kept = [sets[0]] + flagged[:per]
    n = max(1, min(len(shardings), budget // max(1, per)))
    return shardings[:n], kept, [s.name for s in flagged[per:]]


def search(stage2: Stage2, best: Pair, simulated: list[Pair], generation: str, *,
           make_job: Callable[..., Job], run_batch: Callable[[str, list[Job]], list],
           budget: int = FLAG_BUDGET, shardings: int = FLAG_SHARDINGS,
           sets: list[FlagSet] | None = None, speedup: Callable | None = None,
           defend_p: float = speedups.DEFEND):
    """(chosen FlagSet, the search record). make_job(candidate, flags) gives a sharding's
    analysis job under flags; run_batch(name, jobs) runs them (cached) in job order; sets:
    the flag sets, none first (default compile_flags.search_sets(generation));
    speedup(new_graph, old_graph, device_of) -> speedups.Speedup over joint draws of the
    model (confidence.Pricer.step_speedup): a set replaces none only where P >= defend_p."""
    order = [best.candidate] + [p.candidate for p in simulated
                                if p.candidate.name != best.candidate.name]
    distinct = list({c.name: c for c in order}.values())[:shardings]
    cands, sets, left_out = _budgeted(distinct, sets or compile_flags.search_sets(generation),
                                      budget)
    jobs = [make_job(c, s.flags) for c in cands for s in sets]
    outs = run_batch("compile the best shardings under each flag set", jobs)
    unflagged = sum(1 for s in sets if not s.flags) * len(cands)
    rows, failed, graphs = [], [], {}
    for i, c in enumerate(cands):
        plan_devices = list(best.device_of) if c.name == best.candidate.name else None
        base = None
        for j, s in enumerate(sets):
            out = outs[i * len(sets) + j]
            try:
                if not out.ok:
                    raise ValueError(out.error)
                graph = Stage2.load(out.text)
            except (ValueError, UnknownTripCount) as e:
                failed.append(f"{c.name} under {s.name}: {e}")
                continue
            row = _row(stage2, c, s, out.text, graph, plan_devices, base)
            base = base or row["summary"]
            rows.append(row)
            graphs[(c.name, s.name)] = graph
    chosen, change = defended(_chosen(rows, best), best, graphs, speedup, defend_p)
    return chosen, {
        # compiles: those under flags, what the budget bounds; unflagged: each sharding's
        # compile without flags, the plan's own programs (from the cache unless --no-cache).
        "budget": {"max_compiles": budget, "shardings": [c.name for c in cands],
                   "flag_sets": [s.name for s in sets], "compiles": len(jobs) - unflagged,
                   "unflagged": unflagged, "left_out": left_out},
        "rows": rows, "failed": failed, "best_triple": _best_triple(rows, chosen),
        "change": change}


def defended(chosen: FlagSet, best: Pair, graphs: dict, speedup, p: float):
    """(the flags the plan runs under, the change's record or None): the fastest set by
    the point figure replaces none only where it is faster in P >= p of the joint draws."""
    name = best.candidate.name
    if speedup is None or chosen.name == compile_flags.NONE or (
            (name, compile_flags.NONE) not in graphs):
        return chosen, None
    s = speedup(graphs[(name, chosen.name)], graphs[(name, compile_flags.NONE)],
                list(best.device_of))
    record = speedups.change("compiler flags", chosen.name, compile_flags.NONE, s, p)
    record["words"] = speedups.change_words(f"flags {chosen.name}", "no flags", s, p)
    return (chosen if record["made"] else compile_flags.lookup(compile_flags.NONE)), record


def _best_triple(rows: list[dict], chosen: FlagSet) -> dict | None:
    """The ranked (sharding, placement, flags) with the fewest simulated seconds, and
    whether it beats the plan under its chosen flags (then it is reported, not adopted:
    the plan's sharding and placement were chosen per video, without flags)."""
    ranked = [r for r in rows if r["ranked"]]
    if not ranked:
        return None
    top = min(ranked, key=lambda r: r["best"]["simulated_s"])
    plan = next((r["plan_placement"]["simulated_s"] for r in rows
                 if "plan_placement" in r and r["flag_set"] == chosen.name), None)
    return {"candidate": top["candidate"], "flag_set": top["flag_set"], **top["best"],
            "beats_plan": plan is not None and top["best"]["simulated_s"] < plan * (1 - 1e-6)}


def _chosen(rows: list[dict], best: Pair) -> FlagSet:
    """The ranked set with the fewest simulated seconds for the plan's sharding on the
    plan's placement; none unless one is strictly faster."""
    mine = [r for r in rows if r["candidate"] == best.candidate.name and r["ranked"]
            and "plan_placement" in r]
    none = next((r for r in mine if r["flag_set"] == compile_flags.NONE), None)
    if none is None:
        return compile_flags.lookup(compile_flags.NONE)
    top = min(mine, key=lambda r: (r["plan_placement"]["simulated_s"], r["flag_set"] != "none"))
    if top["plan_placement"]["simulated_s"] < none["plan_placement"]["simulated_s"]:
        return compile_flags.lookup(top["flag_set"])
    return compile_flags.lookup(compile_flags.NONE)


def table(flags: dict) -> list[dict[str, Any]]:
    """The search's rows as the report and the terminal show them: per (sharding, flag set)
    the simulated step and exposed communication on the plan's placement (or, for another
    sharding, its own best), and what the flags changed in the program. [] without a
    search."""
    out = []
    for r in flags.get("search", {}).get("rows", []):
        at = r.get("plan_placement") or r["best"]
        out.append({"candidate": r["candidate"], "flag_set": r["flag_set"],
                    "placement": "plan's" if "plan_placement" in r else "its best",
                    "simulated_s": at["simulated_s"], "exposed_comm_s": at["exposed_comm_s"],
                    "changed": "(base)" if r["changes"] is None else r["changes"]["words"],
                    "ranked": r["ranked"]})
    return out


def lines(flags: dict) -> list[str]:
    """plan.json's "flags" in words, for the terminal."""
    if not flags:
        return []
    c = flags["chosen"]
    out = [f"compiler flags ({flags['mode']}): {c['name']}"
           + (f" = {' '.join(c['flags'])}" if c["flags"] else "")]
    s = flags.get("search")
    if s:
        b = s["budget"]
        without = (f"; {b['unflagged']} without, the plan's own" if "unflagged" in b else "")
        out.append(f"  searched {len(b['flag_sets'])} flag sets x {len(b['shardings'])} "
                   f"shardings ({b['compiles']} compiles under flags, at most "
                   f"{b['max_compiles']}{without})"
                   + (f"; left out: {', '.join(b['left_out'])}" if b["left_out"] else ""))
        for r in table(flags):
            out.append(f"  {r['candidate']:<16} {r['flag_set']:<56} "
                       f"{r['simulated_s'] * 1e3:9.3f} ms  exposed "
                       f"{r['exposed_comm_s'] * 1e3:8.3f} ms  {r['changed']}")
        t = s.get("best_triple")
        if t and t["beats_plan"]:
            out.append(f"  the best triple, {t['candidate']} @ {t['placement']} under "
                       f"{t['flag_set']} ({t['simulated_s'] * 1e3:.3f} ms simulated), beats "
                       "the plan's under its flags: reported, not adopted (the plan's "
                       "sharding and placement were chosen per video, without flags)")
    return out

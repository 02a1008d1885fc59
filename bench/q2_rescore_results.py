"""Q2 against the simulated steps an evaluation already made, rescored with today's Q2.

An `aoizora eval` result (docs/results/settings/*.json) lists, for each of Stage 1's Top-K
shardings, every placement Stage 2 considered with its Q2 and its simulated step
(`q2_vs_simulated`). The simulated steps come from the compiled program and the simulator,
not from Q2, so a change to Q2 is measured on them without compiling or simulating again:
each Top-K sharding's analysis compile is read back from the compile cache the evaluation
filled (by its metadata: model, workload, slice, candidate, the result's code fingerprint),
each placement is priced by the installed core's Q2, and the table gives per setting, for
the Q2 the result stored and for today's:
  - rho: Spearman(Q2, simulated) over every (sharding, placement) row, and the least
    per-sharding rho (a sharding whose simulated steps all tie is left out of the least);
  - pick: how much slower Q2's best placement of each sharding simulates than that
    sharding's best placement, the largest over the Top-K;
  - decision: the planner's rule (planner.SIMULATED_PAIRS best pairs by Q2, plus each
    sharding's best by Q2, simulated; the fastest wins) over the stored rows, as the
    simulated step over the best row's, minus one.
Every latency is predicted (Q2) or simulated, never measured.

    AOIZORA_CACHE=/work/grid_cache4 .venv/bin/python bench/q2_rescore_results.py \\
        docs/results/settings/wan-14b_v5e-4x4_*.json --placements /tmp/q2_placements.json

The placements' device orders are not in the results: they are found again by ranking each
program as Stage 2 does (the same seed and search), which reproduces the stored rows only
while Q2 is the one that made them (the local search follows Q2). `--placements FILE` keeps
the orders found on the first run and reads them there afterwards, so a later Q2 is priced on
the same placements the simulator judged. A row whose placement cannot be found is counted
and left out.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import sys

from scipy.stats import spearmanr


def analysis_compiles(cache: str) -> dict[tuple, list[str]]:
    """(model, workload name, slice, candidate name, code) -> the cached analysis compiles'
    text files (.gz) of the compile cache `cache`."""
    out: dict[tuple, list[str]] = {}
    for meta in glob.glob(os.path.join(cache, "*", "*.json")):
        with open(meta) as f:
            m = json.load(f)
        if (m.get("kind") != "analyze" or not isinstance(m.get("workload"), dict)
                or "name" not in m.get("model", {})):
            continue
        key = (m["model"]["name"], m["workload"]["name"], m["target"],
               m["job"].split(":", 1)[1], m["code"])
        out.setdefault(key, []).append((meta[:-len(".json")] + ".gz", m["candidate"]))
    return out


def program(compiles: dict, result: dict, name: str):
    """(graph, candidate) of one Top-K sharding of `result`, or (None, why)."""
    from aoizora.planning.stage2 import Stage2
    from aoizora.planning.strategies import Candidate

    s = result["setting"]
    key = (s["model"], f"{s['video']}-{s['frames']}f", s["topology"], name,
           result["provenance"]["code"])
    found = compiles.get(key, [])
    if len(found) != 1:
        return None, f"{len(found)} cached analysis compiles"
    path, fields = found[0]
    with gzip.open(path, "rt") as f:
        return Stage2.load(f.read()), Candidate(name=name, **fields)


def device_orders(stage2, graph, candidate) -> dict[str, list[int]]:
    """placement name -> device_of, as Stage 2 ranks this program (JAX's default included)."""
    return {p.placement: p.device_of for p in stage2.rank(candidate, graph)}


def rescore_setting(result: dict, compiles: dict, saved: dict) -> dict:
    """Rows [sharding, placement, stored Q2, today's Q2, simulated] of one result."""
    from aoizora import _core
    from aoizora.planning.stage2 import Stage2

    stage2 = Stage2.for_topology(result["setting"]["topology"])
    orders = saved.setdefault(result["key"], {})
    rows, missing = [], []
    for name in result["stage1"]["top_k"]:
        stored = [r for r in result["q2_vs_simulated"] if r[0] == name]
        graph, cand = program(compiles, result, name)
        if graph is None:
            missing.append(f"{name}: {cand}")
            continue
        if name not in orders:
            orders[name] = device_orders(stage2, graph, cand)
        q2 = _core.Q2Evaluator(graph, stage2.topology)
        for _, placement, q2_stored, sim in stored:
            device_of = orders[name].get(placement)
            if device_of is None:
                missing.append(f"{name} @ {placement}: placement not found")
                continue
            rows.append([name, placement, q2_stored, q2.seconds(device_of), sim])
    return {"rows": rows, "missing": missing}


def figures(rows: list, col: int, simulated_pairs: int) -> dict:
    """rho, least per-sharding rho, worst pick and the decision's loss for Q2 column `col`."""
    by_name: dict[str, list] = {}
    for r in rows:
        by_name.setdefault(r[0], []).append(r)
    per = [spearmanr([r[col] for r in rs], [r[4] for r in rs]).statistic
           for rs in by_name.values() if len({r[4] for r in rs}) > 1 and len({r[col] for r in rs}) > 1]
    picks = [min(rs, key=lambda r: r[col])[4] / min(r[4] for r in rs) - 1 for rs in by_name.values()]
    ranked = sorted(rows, key=lambda r: r[col])
    judged = ranked[:simulated_pairs] + [min(rs, key=lambda r: r[col]) for rs in by_name.values()]
    best = min(r[4] for r in rows)
    return {"rho": float(spearmanr([r[col] for r in rows], [r[4] for r in rows]).statistic),
            "rho_min": float(min(per)) if per else float("nan"),
            "pick_worst": max(picks), "decision_loss": min(r[4] for r in judged) / best - 1}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("--cache", default=os.environ.get("AOIZORA_CACHE"),
                    help="the compile cache the evaluation filled (default: $AOIZORA_CACHE)")
    ap.add_argument("--placements", help="file to keep the placements' device orders in")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    if not args.cache or not os.path.isdir(args.cache):
        sys.exit("q2_rescore_results: give the evaluation's compile cache (--cache)")
    from aoizora.planning.planner import SIMULATED_PAIRS

    saved = {}
    if args.placements and os.path.exists(args.placements):
        with open(args.placements) as f:
            saved = json.load(f)
    compiles = analysis_compiles(args.cache)
    print("| setting | rows | rho stored / today | least rho per sharding | worst pick | "
          "decision behind the best row |")
    print("|---|---|---|---|---|---|")
    out = {}
    for path in args.results:
        with open(path) as f:
            result = json.load(f)
        if result.get("status") != "ok":
            continue
        r = out[result["key"]] = rescore_setting(result, compiles, saved)
        if not r["rows"]:
            print(f"| {result['key']} | 0 | - | - | - | - |")
            continue
        a, b = (figures(r["rows"], c, SIMULATED_PAIRS) for c in (2, 3))
        print(f"| {result['key']} | {len(r['rows'])} | {a['rho']:.3f} / {b['rho']:.3f} | "
              f"{a['rho_min']:.3f} / {b['rho_min']:.3f} | {a['pick_worst']:+.2%} / "
              f"{b['pick_worst']:+.2%} | {a['decision_loss']:+.2%} / {b['decision_loss']:+.2%} |")
        for m in r["missing"]:
            print(f"note: {result['key']}: left out: {m}")
        drift = max(abs(x[2] - x[3]) / x[2] for x in r["rows"])
        if drift > 1e-9:
            print(f"note: {result['key']}: today's Q2 differs from the stored by up to {drift:.2%}")
    if args.placements:
        with open(args.placements, "w") as f:
            json.dump(saved, f)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())

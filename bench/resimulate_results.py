"""The simulated steps of an evaluation, simulated again by today's simulator.

An `aoizora eval --oracle` result (docs/results/settings/*.json) stores every fitting
candidate's best simulated step (`stage1.candidates`), the best over every placement Stage 2
ranks for it (the oracle's pool). A change to the simulator or to the HLO loader is measured
on the same compiled programs without compiling again: each candidate's analysis compile is
read back from the compile cache the evaluation filled (as `q2_rescore_results.py` does),
every placement Stage 2 ranks is simulated, and the best is set beside the stored one (a
candidate whose compile is not in the cache keeps its stored step and is counted apart). The
table gives per setting the candidates whose step moved, the simulator's winner before and
after, and the new winner's rank by the Q1 the evaluation stored (Stage 1's recall on the
corrected steps). Every latency is simulated or predicted, never measured.

    AOIZORA_CACHE=/work/grid_cache4 .venv/bin/python bench/resimulate_results.py \\
        docs/results/settings/wan-14b_tpu7x-*.json [--only fsdp2-ring4w ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from q2_rescore_results import analysis_compiles, program  # noqa: E402


def resimulate(result: dict, compiles: dict, only: set[str] | None) -> dict:
    """candidate -> {stored, today, placements} for one result's fitting candidates."""
    from aoizora.planning.stage2 import Stage2

    stage2 = Stage2.for_topology(result["setting"]["topology"])
    rows = {}
    for c in result["stage1"]["candidates"]:
        name = c["candidate"]
        if c["simulated_s"] is None or (only and name not in only):
            continue
        graph, cand = program(compiles, result, name)
        if graph is None:
            rows[name] = {"stored": c["simulated_s"], "today": None, "why": cand}
            continue
        pairs = [stage2.simulate(p, graph) for p in stage2.rank(cand, graph, q1=c["q1_s"])]
        best = min(pairs, key=lambda p: p.simulated)
        rows[name] = {"stored": c["simulated_s"], "today": best.simulated, "q1": c["q1_s"],
                      "placement": best.placement, "placements": len(pairs)}
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("--only", nargs="*", help="resimulate only these candidates")
    ap.add_argument("--json", help="write the per-candidate rows here")
    a = ap.parse_args()
    compiles = analysis_compiles(os.environ.get("AOIZORA_CACHE", ""))
    print("| setting | resimulated | not in the cache | moved (> 0.01 %) | largest move "
          "| winner stored -> today | today's winner's stored Q1 rank | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    dump = {}
    for path in a.results:
        with open(path) as f:
            result = json.load(f)
        t0 = time.perf_counter()
        rows = resimulate(result, compiles, set(a.only) if a.only else None)
        dump[result["key"]] = rows
        steps = {c["candidate"]: c["simulated_s"] for c in result["stage1"]["candidates"]
                 if c["simulated_s"] is not None}
        steps.update({n: r["today"] for n, r in rows.items() if r["today"] is not None})
        moved = [(r["today"] / r["stored"] - 1, n) for n, r in rows.items()
                 if r["today"] is not None and abs(r["today"] / r["stored"] - 1) > 1e-4]
        q1 = {c["candidate"]: c["q1_s"] for c in result["stage1"]["candidates"]}
        winner = min(steps, key=steps.get)
        rank = sorted(steps, key=lambda n: q1[n]).index(winner)
        largest = max(moved, key=lambda m: abs(m[0])) if moved else (0.0, "-")
        missing = [n for n, r in rows.items() if r["today"] is None]
        print(f"| {result['key']} | {len(rows) - len(missing)} | {len(missing)} | {len(moved)} "
              f"| {largest[0]:+.1%} ({largest[1]}) "
              f"| {result['stage1']['winner']} -> {winner} ({steps[winner]:.4f} s) | {rank} "
              f"| {time.perf_counter() - t0:.0f} |", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dump, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Stage 1's Q1 against the simulator, candidate by candidate (what Top-K recall rests on).

For one setting, every fitting candidate is compiled (cached), each one's best placements by
Q2 are simulated, and the table puts Q1 and its parts beside the simulated step and the
compiled HLO's communication, best simulated first. Every latency is predicted (Q1) or
simulated, never measured.

    AOIZORA_CACHE=.cache/eval python bench/q1_vs_simulated.py --model wan2.1-t2v-14b \
        --topology v5e:2x4 --video 480p --frames 21 [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys

from aoizora import jaxenv  # noqa: F401
from aoizora import planner, stage1
from aoizora.cache import Cache
from scipy.stats import spearmanr

GB = 1e9


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="wan2.1-t2v-14b")
    ap.add_argument("--topology", default="v5e:2x4")
    ap.add_argument("--video", default="480p")
    ap.add_argument("--frames", type=int, default=21)
    ap.add_argument("--placements", type=int, default=3, help="best-by-Q2 placements simulated")
    ap.add_argument("--json")
    a = ap.parse_args()

    res = planner.plan(a.model, a.video, a.frames, a.topology,
                       planner.Settings(top_k=1000, cache=Cache(), search_iters=200))
    st2 = res.stage2
    rows = []
    for r in res.stage1:
        name = r.candidate.name
        g = res.graphs.get(name)
        if g is None or not r.fits:
            continue
        pairs = st2.rank(r.candidate, g, q1=r.q1_seconds)[: a.placements]
        for p in pairs:
            st2.simulate(p, g)
        best = min(pairs, key=lambda p: p.simulated)
        compiled = stage1.predicted_vs_compiled(r, g)
        rows.append({
            "candidate": name, "q1": r.q1_seconds,
            "compute": r.compute_seconds, "overlap": r.overlappable_comm_seconds,
            "barrier": r.barrier_comm_seconds, "sim": best.simulated,
            "sim_compute": best.sim.compute_bound_seconds, "q2": best.q2,
            "comm_gb": {k: [v[0] / GB, v[1] / GB] for k, v in compiled.items()},
        })
    for rank, x in enumerate(sorted(rows, key=lambda x: x["q1"])):
        x["q1_rank"] = rank
    rows.sort(key=lambda x: x["sim"])
    kinds = ("all-gather", "all-reduce", "all-to-all", "collective-permute")
    hdr = (f"{'candidate':18} {'simrk':>5} {'q1rk':>4} {'Q1':>6} {'comp':>6} {'ovl':>6} "
           f"{'barr':>6} | {'sim':>6} {'simcmp':>6} {'Q2':>6} | "
           + " ".join(f"{k[:10]:>13}" for k in kinds))
    print(hdr)
    for i, x in enumerate(rows):
        cols = " ".join(f"{x['comm_gb'].get(k, [0, 0])[0]:6.2f}/{x['comm_gb'].get(k, [0, 0])[1]:6.2f}"
                        for k in kinds)
        print(f"{x['candidate']:18} {i:5d} {x['q1_rank']:4d} {x['q1']:6.3f} {x['compute']:6.3f} "
              f"{x['overlap']:6.3f} {x['barrier']:6.3f} | {x['sim']:6.3f} {x['sim_compute']:6.3f} "
              f"{x['q2']:6.3f} | {cols}")
    rho = spearmanr([x["q1"] for x in rows], [x["sim"] for x in rows]).statistic
    win = rows[0]
    print(f"\n{len(rows)} candidates; Spearman(Q1, simulated) = {rho:.3f}; "
          f"winner {win['candidate']} has Q1 rank {win['q1_rank']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

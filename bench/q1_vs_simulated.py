"""Stage 1's Q1 against the simulator, candidate by candidate (what Top-K recall rests on).

For one setting, every fitting candidate is compiled (cached), each one's best placements by
Q2 are simulated, and the table puts Q1 and its parts beside the simulated step and the
compiled HLO's communication, best simulated first. Every latency is predicted (Q1) or
simulated, never measured.

    AOIZORA_CACHE=.cache/eval python bench/q1_vs_simulated.py --model wan2.1-t2v-14b \
        --topology v5e:2x4 --video 480p --frames 21 [--json out.json] [--texts DIR]

`--texts DIR` also writes each candidate's StableHLO (DIR/<candidate>.mlir). Stage 1 sees only
that text, and the simulated step only the compiled HLO, so a change to Stage 1 is measured
without compiling or simulating again:

    python bench/q1_vs_simulated.py --rescore out.json --texts DIR [--json after.json]

reruns Stage 1 (the installed core) on the saved texts and prints the table against the saved
simulated steps; `--best-boxes` rescores with every collective on its own best box of the
slice (Q1 before it was priced on placements, docs/stage1.md), to measure what that changes. The summary line gives Spearman(Q1, simulated) and Q1's relative error
(Q1 / simulated - 1: median and range; the share within 20 %).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from aoizora.compile import jaxenv  # noqa: F401
from aoizora.planning import planner, stage1
from aoizora.compile.cache import Cache
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
    ap.add_argument("--texts", help="folder of the candidates' StableHLO (written, or read "
                    "with --rescore)")
    ap.add_argument("--rescore", metavar="JSON", help="rows of an earlier run: rerun Stage 1 "
                    "on the texts in --texts, keep the simulated figures")
    ap.add_argument("--best-boxes", action="store_true", help="with --rescore: price every "
                    "collective on its own best box, not on the best placement")
    a = ap.parse_args()
    rows = rescore(a) if a.rescore else measure(a)
    report(rows)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


def measure(a) -> list[dict]:
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
    if a.texts:
        _write_texts(a, res, {x["candidate"] for x in rows})
    return rows


def _write_texts(a, res, names) -> None:
    from aoizora.inputs import validate
    from aoizora.compile.batch import run_jobs
    from aoizora.compile.jobs import Job

    cfg, wl = validate.workload(a.model, a.video, a.frames)
    jobs = [Job("lower", r.candidate, cfg, wl, a.topology)
            for r in res.stage1 if r.candidate.name in names]
    os.makedirs(a.texts, exist_ok=True)
    for job, out in zip(jobs, run_jobs(jobs, cache=Cache())):
        with open(os.path.join(a.texts, f"{job.candidate.name}.mlir"), "w") as f:
            f.write(out.text)


def rescore(a) -> list[dict]:
    from aoizora import _core

    with open(a.rescore) as f:
        rows = json.load(f)
    topology = a.topology
    for x in rows:
        with open(os.path.join(a.texts, f"{x['candidate']}.mlir")) as f:
            r = _core.analyze_stablehlo(f.read(), topology=topology,
                                        q1_on_placements=not a.best_boxes)
        x.update(q1=r.q1_seconds, compute=r.compute_seconds,
                 overlap=r.overlappable_comm_seconds, barrier=r.barrier_comm_seconds)
        for kind, pair in x["comm_gb"].items():
            pair[0] = r.comm_bytes_by_kind.get(kind, 0.0) / GB
    return rows


def summary(rows) -> dict:
    """Spearman(Q1, simulated), Q1's relative error against the simulated step, and the
    simulator's winner's Q1 rank."""
    err = [x["q1"] / x["sim"] - 1 for x in rows]
    win = min(rows, key=lambda x: x["sim"])
    return {"candidates": len(rows),
            "spearman": spearmanr([x["q1"] for x in rows], [x["sim"] for x in rows]).statistic,
            "median_rel_err": statistics.median(err), "min_rel_err": min(err),
            "max_rel_err": max(err), "within_20pct": sum(abs(e) <= 0.2 for e in err) / len(err),
            "winner": win["candidate"],
            "winner_q1_rank": sorted(rows, key=lambda x: x["q1"]).index(win)}


def report(rows) -> None:
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
    s = summary(rows)
    print(f"\n{s['candidates']} candidates; Spearman(Q1, simulated) = {s['spearman']:.3f}; "
          f"Q1 / simulated - 1: median {s['median_rel_err']:+.1%}, range "
          f"{s['min_rel_err']:+.1%} .. {s['max_rel_err']:+.1%}, within 20 %: "
          f"{s['within_20pct']:.0%}; winner {s['winner']} has Q1 rank {s['winner_q1_rank']}")


if __name__ == "__main__":
    sys.exit(main())

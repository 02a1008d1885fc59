"""Q1 against the simulated steps an evaluation already made, rescored with today's Stage 1.

An `aoizora eval --oracle` result (docs/results/settings/*.json) lists every fitting
candidate's Q1 beside its best simulated step (`stage1.candidates`). The simulated steps come
from the compiled programs and do not change with Stage 1, so a change to Stage 1 is measured
on them without compiling or simulating again: each candidate is lowered (cheap), analysed by
the installed core, and the table gives per setting Spearman(Q1, simulated), the share within
20 %, the spread of Q1's error and the simulator's winner's Q1 rank, for the Q1 the evaluation
stored beside today's. Every latency is predicted (Q1) or simulated, never measured.

    .venv/bin/python bench/q1_rescore_results.py docs/results/settings/wan-14b_v5e-*.json \
        [--texts DIR]

`--texts DIR` keeps each setting's texts (DIR/<setting>/<candidate>.mlir) and reads them there
the next time, so a change to Stage 1 is rescored in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from aoizora.compile import jaxenv  # noqa: F401
from scipy.stats import spearmanr


def saved_or_lowered(setting: dict, names: set[str], folder: str | None) -> dict[str, str]:
    """lowered_texts, read from `folder` when every one was saved there (else saved there)."""
    paths = {n: os.path.join(folder, f"{n}.mlir") for n in names} if folder else {}
    if paths and all(os.path.exists(p) for p in paths.values()):
        return {n: open(p).read() for n, p in paths.items()}
    texts = lowered_texts(setting, names)
    if folder:
        os.makedirs(folder, exist_ok=True)
        for n, text in texts.items():
            with open(paths[n], "w") as f:
                f.write(text)
    return texts


def lowered_texts(setting: dict, names: set[str]) -> dict[str, str]:
    """StableHLO of the named candidates, lowered as the planner lowers them."""
    from aoizora.compile.compile_target import compile_target_for
    from aoizora.planning import candidate_filter, planner
    from aoizora.planning.run_state import Run, run_batch
    from aoizora.planning.stage2 import Stage2

    stage2 = Stage2.for_topology(setting["topology"])
    run = Run(planner.Settings(), planner.Progress(), *planner.resolve(
        setting["model"], setting["video"], setting["frames"]), stage2,
        compile_target_for(stage2.topology))
    candidates = [c for c in candidate_filter.enumerate_candidates(run, setting["model"])
                  if c.name in names]
    outcomes = run_batch(run.progress, "lower", run.settings,
                         [run.job("lower", c) for c in candidates], workers=2)
    return {c.name: o.text for c, o in zip(candidates, outcomes) if o.ok}


def scores(rows: list[tuple[float, float]]) -> dict:
    q1 = [r[0] for r in rows]
    sim = [r[1] for r in rows]
    err = [a / b - 1 for a, b in rows]
    winner = min(range(len(rows)), key=lambda i: sim[i])
    return {"spearman": spearmanr(q1, sim).statistic,
            "within": sum(abs(e) <= 0.2 for e in err) / len(err),
            "median": sorted(err)[len(err) // 2], "min": min(err), "max": max(err),
            "rank": sorted(range(len(rows)), key=lambda i: q1[i]).index(winner)}


def main() -> int:
    from aoizora import _core

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("--json", help="write the per-candidate rows here")
    ap.add_argument("--texts", help="folder to keep the lowered texts in (and read them from)")
    a = ap.parse_args()
    print("| setting | candidates | rho stored / today | within 20 % | median Q1/sim - 1 | "
          "range | winner | its Q1 rank |")
    print("|---|---|---|---|---|---|---|---|")
    dump = {}
    for path in a.results:
        with open(path) as f:
            d = json.load(f)
        cands = {c["candidate"]: c["simulated_s"] for c in d["stage1"]["candidates"]
                 if c["simulated_s"] is not None}
        stored = {c["candidate"]: c["q1_s"] for c in d["stage1"]["candidates"]}
        texts = saved_or_lowered(d["setting"], set(cands),
                                 a.texts and os.path.join(a.texts, d["key"]))
        rows = {}
        for name, text in texts.items():
            today = _core.analyze_stablehlo(text, topology=d["setting"]["topology"])
            rows[name] = {"stored": stored[name], "today": today.q1_seconds,
                          "placement": today.q1_placement, "sim": cands[name]}
        dump[d["key"]] = rows
        s = scores([(r["stored"], r["sim"]) for r in rows.values()])
        t = scores([(r["today"], r["sim"]) for r in rows.values()])
        winner = min(rows, key=lambda n: rows[n]["sim"])
        print(f"| {d['key']} | {len(rows)} of {len(cands)} | {s['spearman']:.3f} / "
              f"{t['spearman']:.3f} | {s['within']:.0%} / {t['within']:.0%} | "
              f"{s['median']:+.1%} / {t['median']:+.1%} | {s['min']:+.1%} .. {s['max']:+.1%} / "
              f"{t['min']:+.1%} .. {t['max']:+.1%} | {winner} | {s['rank']} / {t['rank']} |",
              flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dump, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

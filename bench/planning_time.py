"""Planning time, measured: `aoizora plan` cold (an empty compile cache) and warm, side by side.

Goal (issue 9): Wan 2.1 14B on v5e-16 (v5e:4x4), 720p 81 frames, under 60 s cold and under
5 s warm on this machine (2 cores). Each run is a fresh `aoizora plan --json` process, so
the times include starting Python and JAX. Prints the time to the decision (the Top-K
compiled, Stage 2, simulated) and in all (plus the baselines' shardings compiled and
simulated for the comparison), and the phases. --compare-full adds a cold plan with
--full-compile (every candidate through the TPU backend, as before the analysis compile);
--compare-run-ahead adds cold plans with --no-run-ahead (the existing deployments' compiles
started after the decision instead of with the plan), alternating with the default: a
comparison for a Ray cluster (--executor ray://...); local processes run nothing ahead.

    python bench/planning_time.py [--model wan2.1-t2v-14b] [--topology v5e:4x4] \
        [--video 720p] [--frames 81] [--top-k K] [--compare-full] \
        [--compare-run-ahead --reps N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run(args: list[str], cache: str) -> tuple[float, dict]:
    env = dict(os.environ, AOIZORA_CACHE=cache)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", "import sys; from aoizora.cli import main; "
                          "sys.argv[0] = 'aoizora'; sys.exit(main())", "plan", "--json", *args],
                         env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        sys.exit(f"aoizora plan failed: {out.stderr.strip().splitlines()[-1:]}")
    return wall, json.loads(out.stdout)["planning"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="wan2.1-t2v-14b")
    ap.add_argument("--topology", default="v5e:4x4")
    ap.add_argument("--video", default="720p")
    ap.add_argument("--frames", default="81")
    ap.add_argument("--top-k", type=int)
    ap.add_argument("--compare-run-ahead", action="store_true",
                    help="also plan cold with --no-run-ahead (the deployments' compiles after "
                         "the decision), alternating with the default, for the ratio")
    ap.add_argument("--executor", help="passed to aoizora plan (ray://HOST:PORT for a cluster)")
    ap.add_argument("--reps", type=int, default=1,
                    help="cold runs of each kind, alternating (medians printed)")
    ap.add_argument("--compare-full", action="store_true",
                    help="also plan cold with --full-compile (every candidate through the TPU "
                         "backend), in the same run, for the ratio")
    a = ap.parse_args()
    args = ["--model", a.model, "--topology", a.topology, "--video", a.video,
            "--frames", a.frames, "--quiet"]
    if a.top_k:
        args += ["--top-k", str(a.top_k)]
    if a.executor:
        args += ["--executor", a.executor]
    rows = []
    runs = []
    for rep in range(a.reps):
        runs.append(("cold", [], f"cache{rep}"))
        if a.compare_run_ahead:
            runs.append(("cold, --no-run-ahead", ["--no-run-ahead"], f"cache-seq{rep}"))
    runs.append(("warm", [], "cache0"))
    if a.compare_full:
        runs.append(("cold, --full-compile", ["--full-compile"], "cache-full"))
    with tempfile.TemporaryDirectory(prefix="aoizora-cold-") as tmp:
        args += ["--out", os.path.join(tmp, "plan.json")]
        for label, extra, cache in runs:
            load = os.getloadavg()[0]
            wall, p = run(args + extra, os.path.join(tmp, cache))
            rows.append((label, wall, p, load))
    print(f"{a.model} {a.video} {a.frames} frames on {a.topology} ({os.cpu_count()} cores)")
    print(f"{'run':20} {'process s':>9} {'plan s':>7} {'decision s':>10} {'jobs':>5} "
          f"{'cached':>6} {'load':>5}  phases (s)")
    for label, wall, p, load in rows:
        phases = ", ".join(f"{k} {v:.1f}" for k, v in p["phases"].items()
                           if k not in ("total", "decision"))
        print(f"{label:20} {wall:9.1f} {p['seconds']:7.1f} {p.get('decision_seconds', 0):10.1f} "
              f"{p['jobs']:5d} {p['cache_hits']:6d} {load:5.1f}  {phases}")
    if a.compare_run_ahead:
        med = {label: (statistics.median(r[2]["decision_seconds"] for r in rows if r[0] == label),
                       statistics.median(r[2]["seconds"] for r in rows if r[0] == label))
               for label in ("cold", "cold, --no-run-ahead")}
        (d1, t1), (d0, t0) = med["cold"], med["cold, --no-run-ahead"]
        print(f"medians of {a.reps}: run ahead / after the decision: to the decision "
              f"{d1:.1f} / {d0:.1f} s ({d1 / d0:.3f}x), in all {t1:.1f} / {t0:.1f} s "
              f"({t1 / t0:.3f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

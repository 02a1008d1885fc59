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
--before REV adds cold plans by the code of git revision REV (its python/aoizora, imported
instead of this checkout's through a sitecustomize on PYTHONPATH; the C++ core is this
checkout's), alternating with this code: before/after side by side. Each row gives the
1-minute load average when the run started and when it ended (the machine is shared).

    python bench/planning_time.py [--model wan2.1-t2v-14b] [--topology v5e:4x4] \
        [--video 720p] [--frames 81] [--top-k K] [--compare-full] \
        [--compare-run-ahead] [--before REV] [--reps N] [--no-warm]

The README default, before/after (docs/planner.md, "Cost"):

    python bench/planning_time.py --model wan2.1-t2v-1.3b --topology v5e:2x4 --video 480p \
        --frames 21 --before e66eedc --reps 3 --no-warm
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Imports aoizora from the folder this file is in, not from the editable checkout.
_OVERLAY = """import sys
sys.meta_path[:] = [f for f in sys.meta_path
                    if type(f).__name__ != "ScikitBuildRedirectingFinder"]
for m in [m for m in sys.modules if m == "aoizora" or m.startswith("aoizora.")]:
    del sys.modules[m]
"""


def snapshot(rev: str, folder: str) -> str:
    """A folder to put on PYTHONPATH that imports revision `rev`'s python/aoizora, with this
    install's C++ core and data files. Returns the folder."""
    import aoizora._core

    site = os.path.join(folder, "site")
    os.makedirs(site)
    archive = subprocess.run(["git", "-C", REPO, "archive", rev, "python/aoizora"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    os.rename(os.path.join(folder, "python", "aoizora"), os.path.join(site, "aoizora"))
    installed = os.path.dirname(aoizora._core.__file__)
    for path in glob.glob(os.path.join(installed, "_core*.so")):
        shutil.copy(path, os.path.join(site, "aoizora"))
    for data in ("profiles", "calibration"):
        if os.path.isdir(os.path.join(installed, data)):
            shutil.copytree(os.path.join(installed, data), os.path.join(site, "aoizora", data),
                            dirs_exist_ok=True)
    with open(os.path.join(site, "sitecustomize.py"), "w") as f:
        f.write(_OVERLAY)
    return site


def run(args: list[str], cache: str, pythonpath: str | None = None) -> tuple[float, dict]:
    env = dict(os.environ, AOIZORA_CACHE=cache)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
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
    ap.add_argument("--before", metavar="REV",
                    help="also plan cold with the Python code of git revision REV, "
                         "alternating with this code (medians of each printed)")
    ap.add_argument("--no-warm", action="store_true", help="no warm run")
    a = ap.parse_args()
    args = ["--model", a.model, "--topology", a.topology, "--video", a.video,
            "--frames", a.frames, "--quiet"]
    if a.top_k:
        args += ["--top-k", str(a.top_k)]
    if a.executor:
        args += ["--executor", a.executor]
    rows = []
    runs = []
    before = f"cold, {a.before}" if a.before else None
    for rep in range(a.reps):
        if before:
            runs.append((before, [], f"cache-before{rep}"))
        runs.append(("cold", [], f"cache{rep}"))
        if a.compare_run_ahead:
            runs.append(("cold, --no-run-ahead", ["--no-run-ahead"], f"cache-seq{rep}"))
    if not a.no_warm:
        runs.append(("warm", [], "cache0"))
    if a.compare_full:
        runs.append(("cold, --full-compile", ["--full-compile"], "cache-full"))
    with tempfile.TemporaryDirectory(prefix="aoizora-cold-") as tmp:
        args += ["--out", os.path.join(tmp, "plan.json")]
        old = snapshot(a.before, os.path.join(tmp, "before")) if before else None
        for label, extra, cache in runs:
            load = os.getloadavg()[0]
            wall, p = run(args + extra, os.path.join(tmp, cache),
                          old if label == before else None)
            rows.append((label, wall, p, load, os.getloadavg()[0]))
            print(f"{label}: {wall:.1f} s (decision {p.get('decision_seconds', 0):.1f} s), "
                  f"load {load:.1f} -> {rows[-1][4]:.1f}", file=sys.stderr, flush=True)
    print(f"{a.model} {a.video} {a.frames} frames on {a.topology} ({os.cpu_count()} cores)")
    print(f"{'run':20} {'process s':>9} {'plan s':>7} {'decision s':>10} {'jobs':>5} "
          f"{'cached':>6} {'load':>11}  phases (s)")
    for label, wall, p, load, load_end in rows:
        phases = ", ".join(f"{k} {v:.1f}" for k, v in p["phases"].items()
                           if k not in ("total", "decision"))
        print(f"{label:20} {wall:9.1f} {p['seconds']:7.1f} {p.get('decision_seconds', 0):10.1f} "
              f"{p['jobs']:5d} {p['cache_hits']:6d} {load:5.1f}->{load_end:<5.1f}  {phases}")
    for label in dict.fromkeys(r[0] for r in rows if r[0].startswith("cold")):
        mine = [r for r in rows if r[0] == label]
        print(f"median of {len(mine)} {label}: process "
              f"{statistics.median(r[1] for r in mine):.1f} s, plan "
              f"{statistics.median(r[2]['seconds'] for r in mine):.1f} s, decision "
              f"{statistics.median(r[2].get('decision_seconds', 0) for r in mine):.1f} s, load "
              f"{statistics.median((r[3] + r[4]) / 2 for r in mine):.1f}")
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

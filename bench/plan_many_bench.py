"""plan-many with the local executor vs Ray on this machine, cold, in one run (alternating,
medians), and the scaling the job graph allows on N workers.

    PYTHONPATH=build/dev/pyroot:python .venv/bin/python bench/plan_many_bench.py \
        [--settings SETTINGS.yaml] [--reps 2] [--compile-target tpu|cpu]

Each run plans every setting with a cold cache of its own (one setting at a time, as
`aoizora plan-many` does on 2 cores). Ray's runs include starting it. Every lower and compile
job's seconds are recorded (jobs.Outcome.seconds) by wrapping the planner's run_jobs, and
each setting's job graph is its batches in order: lowering, the Top-K compiles, the
baselines' compiles, with the driver's own work (Stage 1, Stage 2, simulation) between them.
From the local runs: the critical path (per batch its longest job, plus the driver's work)
and the total work; on N workers a schedule needs at least max(critical path, work / N)
("ideal"). Job times were measured with the other jobs of a batch running beside them on
this machine's cores, so they are what a job costs here, not alone. Planning time is
measured wall clock; nothing here is a TPU measurement.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

from aoizora.planning import planner, plan_many  # noqa: E402
from aoizora.compile.cache import Cache  # noqa: E402
from aoizora.compile.executor import make_executor  # noqa: E402
from aoizora.inputs.settings_file import load  # noqa: E402

DEFAULT = """\
- {model: wan-tiny, video: tiny, topology: v5e:2x2, top_k: 1}
- {model: wan-tiny, video: tiny, topology: v5e:2x4, top_k: 1}
"""


class Recorder:
    """Wraps planner.run_jobs: per setting, its batches as (wall s, [job s]) in order."""

    def __init__(self):
        self.batches: dict[str, list[tuple[float, list[float]]]] = {}
        self.current = ""
        self.inner = planner.run_jobs

    def __call__(self, jobs, **kw):
        t = time.perf_counter()
        outs = self.inner(jobs, **kw)
        self.batches.setdefault(self.current, []).append(
            (time.perf_counter() - t, [o.seconds for o in outs if not o.cached]))
        return outs


def one_run(name: str, requests, compile_target: str, rec: Recorder) -> dict:
    from contextlib import nullcontext

    t0 = time.perf_counter()
    executor = make_executor(name)
    started = time.perf_counter() - t0
    rec.batches = {}

    def progress_for(r):
        rec.current = r.key
        return nullcontext()

    with tempfile.TemporaryDirectory(prefix="aoizora-bench-") as tmp:
        settings = planner.Settings(cache=Cache(os.path.join(tmp, "cache")),
                                    compile_target=compile_target, executor=executor)
        try:
            rows = plan_many.run(requests, os.path.join(tmp, "plans"), settings,
                                 progress_for=progress_for)
        finally:
            executor.close()
    assert all(r.status == "planned" for r in rows), [(r.key, r.reason) for r in rows]
    return {"wall": time.perf_counter() - t0, "start": started, "batches": dict(rec.batches),
            "planning": {r.key: r.planning_s for r in rows}}


def job_graph(run: dict) -> dict[str, tuple[float, float]]:
    """setting -> (critical path s, total work s) of one run."""
    out = {}
    for key, batches in run["batches"].items():
        driver = run["planning"][key] - sum(wall for wall, _ in batches)
        path = sum(max(jobs, default=0.0) for _, jobs in batches) + driver
        out[key] = (path, sum(sum(jobs) for _, jobs in batches) + driver)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--settings", help="a settings file (default: two tiny settings)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--compile-target", choices=("tpu", "cpu"), default="tpu")
    args = ap.parse_args()
    path = args.settings
    if path is None:
        path = os.path.join(tempfile.mkdtemp(prefix="aoizora-bench-"), "settings.yaml")
        with open(path, "w") as f:
            f.write(DEFAULT)
    requests = load(path)
    rec = Recorder()
    planner.run_jobs = rec
    runs: dict[str, list[dict]] = {"local": [], "ray": []}
    for rep in range(args.reps):
        for name in (("local", "ray") if rep % 2 == 0 else ("ray", "local")):
            r = one_run(name, requests, args.compile_target, rec)
            runs[name].append(r)
            print(f"rep {rep + 1} {name}: {r['wall']:.1f} s (start {r['start']:.1f} s), "
                  f"load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    report(requests, runs, args)


def report(requests, runs, args) -> None:
    med = {n: statistics.median(r["wall"] for r in rs) for n, rs in runs.items()}
    start = statistics.median(r["start"] for r in runs["ray"])
    print(f"\nplan-many of {len(requests)} settings ({', '.join(r.key for r in requests)}), "
          f"cold, {os.cpu_count()} cores, compile target {args.compile_target}, "
          f"median of {args.reps} (measured wall clock)\n")
    print("| executor | wall s | of which starting the executor s | vs local |")
    print("|---|---:|---:|---:|")
    for n in ("local", "ray"):
        s = start if n == "ray" else 0.0
        print(f"| {n} | {med[n]:.1f} | {s:.1f} | {med[n] / med['local']:.3f}x |")
    graphs = [job_graph(r) for r in runs["local"]]
    keys = list(graphs[0])
    path = {k: statistics.median(g[k][0] for g in graphs) for k in keys}
    work = {k: statistics.median(g[k][1] for g in graphs) for k in keys}
    print("\njob graph (local runs, median): per setting the critical path and the total work "
          "(jobs + driver)\n")
    print("| setting | critical path s | total work s |")
    print("|---|---:|---:|")
    for k in keys:
        print(f"| {k} | {path[k]:.1f} | {work[k]:.1f} |")
    print("\nideal wall s on N workers, max(critical path, work / N): settings one at a time "
          "(sum over settings) and all at once\n")
    print("| N workers | one at a time | all at once | vs measured local |")
    print("|---:|---:|---:|---:|")
    for n in (1, 2, 4, 8, 16, 32, 64):
        seq = sum(max(path[k], work[k] / n) for k in keys)
        par = max(max(path.values()), sum(work.values()) / n)
        print(f"| {n} | {seq:.1f} | {par:.1f} | {med['local'] / par:.1f}x |")


if __name__ == "__main__":
    main()

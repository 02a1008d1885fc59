"""Lowering and compile times of the Wan two-block proxy, per candidate, and the cache.

    PYTHONPATH=python .venv/bin/python bench/compile_bench.py \
        [--model wan2.1-t2v-14b] [--video 720p-81f] [--topology v5e:2x4 v5e:4x4]
        [--compile picks|baselines|all] [--workers 2] [--splash]

Prints, per topology: the lowering time of every candidate (in this process), then for the
compiled set (default: one per strategy kind plus the baselines) the compile time in a fresh
spawned worker process each (wall seconds, including lowering inside the worker but not the
JAX start-up), the peak resident memory of that process, the compiled HLO size and its
collectives; then the cache-hit time for the same jobs. The cache is a fresh temporary
folder so that nothing earlier is measured. Wall times depend on the machine's load: it
prints the load average beside them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

from aoizora.compile import compiler as C  # noqa: E402
from aoizora.compile import jaxenv  # noqa: E402,F401
from aoizora.planning import kernels  # noqa: E402
from aoizora.planning import strategies as S  # noqa: E402
from aoizora.compile.batch import run_jobs
from aoizora.compile.cache import Cache  # noqa: E402
from aoizora.compile.jobs import Job, versions
from aoizora.models import get_model, get_workload  # noqa: E402
from aoizora.hardware.probes import count_collectives  # noqa: E402

MOSAIC = 'custom_call_target="tpu_custom_call"'
KIND_PICKS = {8: ["dp2-ag4w", "fsdp2-ring2-tp2", "dp2-uly4", "dp2-usp2x2", "tp8"],
              16: ["dp2-ag8w", "fsdp2-ring4-tp2", "dp2-uly8", "dp2-usp4x2", "ag2-tp8"],
              4: ["dp2-ag2w", "fsdp2-ring2", "dp2-uly2", "usp2x2", "tp4"]}


def short(counts: dict[str, int]) -> str:
    abbrev = {"all-gather": "ag", "all-reduce": "ar", "reduce-scatter": "rs", "all-to-all": "a2a",
              "collective-permute": "cp"}
    return " ".join(f"{abbrev.get(k, k)}{v}" for k, v in sorted(counts.items()))


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)  # progress shows when redirected
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="wan2.1-t2v-14b")
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--video", default="720p-81f")
    ap.add_argument("--topology", nargs="+", default=["v5e:2x4", "v5e:4x4"])
    ap.add_argument("--compile", choices=["picks", "baselines", "all", "none"], default="picks")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--splash", action="store_true", help="also compile dp/ag with splash")
    args = ap.parse_args()

    model = get_model(args.model, blocks=args.blocks)
    workload = get_workload(args.video)
    print(f"model {model.name}, workload {workload.name} "
          f"({model.seq_len(workload)} tokens), jax {versions()}")
    for topo in args.topology:
        n = 1
        for d in topo.split(":")[1].split("x"):
            n *= int(d)
        cands = S.enumerate_candidates(model, workload, n)
        print(f"\n== {topo}: {len(cands)} candidates ==")
        t_lower = {}
        for c in cands:
            t = time.perf_counter()
            try:
                text = C.lower(c, model, workload, topo)
                t_lower[c.name] = (time.perf_counter() - t, len(text))
            except C.CompileError as e:
                t_lower[c.name] = (time.perf_counter() - t, None)
                print(f"  lower FAILED {e}")
        ts = [v[0] for v in t_lower.values()]
        print(f"lowering, {len(ts)} candidates: mean {statistics.mean(ts):.2f} s, "
              f"median {statistics.median(ts):.2f} s, max {max(ts):.2f} s, "
              f"total {sum(ts):.1f} s (load {os.getloadavg()[0]:.1f})")

        by = {c.name: c for c in cands}
        if args.compile == "none":
            continue
        if args.compile == "all":
            chosen = list(by)
        else:
            chosen = [] if args.compile == "baselines" else \
                [x for x in KIND_PICKS.get(n, []) if x in by]
            chosen += [c.name for c in S.baseline_shardings(model, workload, n).values()
                       if c.name not in chosen]
        jobs = [Job("compile", by[x], model, workload, topo) for x in chosen]
        if args.splash:
            base = S.baseline_shardings(model, workload, n)[S.MAXDIFFUSION_CFG]
            jobs.append(Job("compile", kernels.with_kernel(base, model, workload, "tpu", topo),
                              model, workload, topo))
        with tempfile.TemporaryDirectory() as root:
            cache = Cache(root)
            t = time.perf_counter()
            outs = run_jobs(jobs, workers=args.workers, cache=cache, fresh_process=True)
            wall = time.perf_counter() - t
            hits = run_jobs(jobs, workers=0, cache=cache)
        print(f"{'candidate':<20} {'kinds':<40} {'lower s':>7} {'compile s':>9} "
              f"{'peak MB':>8} {'HLO kB':>7} {'hit ms':>7}  collectives")
        for job, o, h in zip(jobs, outs, hits):
            name = job.candidate.name + ("+splash" if job.candidate.kernel == "splash" else "")
            lo = t_lower.get(job.candidate.name, (float("nan"),))[0]
            if not o.ok:
                print(f"{name:<20} FAILED {o.error}")
                continue
            extra = ""
            if job.candidate.kernel == "splash":
                extra = f" tpu_custom_call x{o.text.count(MOSAIC)}"
            print(f"{name:<20} {','.join(job.candidate.kinds):<40} {lo:7.2f} {o.seconds:9.1f} "
                  f"{o.peak_rss_mb:8.0f} {len(o.text) / 1024:7.0f} {h.seconds * 1e3:7.1f}  "
                  f"{short(count_collectives(o.text))}{extra}")
        print(f"compiled {len(jobs)} in {wall:.0f} s wall with {args.workers} workers "
              f"(load {os.getloadavg()[0]:.1f}); cache hits: "
              f"{all(h.cached for h in hits)}")


if __name__ == "__main__":
    main()

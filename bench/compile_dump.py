"""Writes the lowered StableHLO (and optionally the compiled HLO) of candidates to files, for
other stages' fixtures and for reading by eye.

    PYTHONPATH=python .venv/bin/python bench/compile_dump.py --out /tmp/wan \
        [--model wan2.1-t2v-14b] [--blocks 2] [--video 720p-81f] [--topology v5e:2x4]
        [--candidate dp2-ag4w ...] [--compile] [--list]

Files: <out>/<topology>/<candidate>.stablehlo.mlir and .hlo.txt (compiled, through the cache).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

from aoizora.compile import jaxenv  # noqa: E402,F401
from aoizora.planning import strategies as S  # noqa: E402
from aoizora.compile.batch import run_jobs
from aoizora.compile.cache import Cache  # noqa: E402
from aoizora.compile.jobs import Job
from aoizora.models import get_model, get_workload  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="wan2.1-t2v-14b")
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--video", default="720p-81f")
    ap.add_argument("--topology", default="v5e:2x4")
    ap.add_argument("--candidate", nargs="*", help="names (default: the baselines)")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--list", action="store_true", help="list the candidates and exit")
    args = ap.parse_args()

    model = get_model(args.model, blocks=args.blocks)
    w = get_workload(args.video)
    n = 1
    for d in args.topology.split(":")[1].split("x"):
        n *= int(d)
    by = {c.name: c for c in S.enumerate_candidates(model, w, n)}
    if args.list:
        for c in by.values():
            print(f"{c.name:<22} {','.join(c.kinds):<45} {' '.join(c.baselines)}")
        return
    names = args.candidate or sorted({c.name for c in S.baseline_shardings(model, w, n).values()})
    folder = os.path.join(args.out, args.topology.replace(":", "_"))
    os.makedirs(folder, exist_ok=True)
    jobs = []
    for name in names:
        if name not in by:
            sys.exit(f"unknown candidate {name!r} for {args.topology}: see --list")
        kind = "compile" if args.compile else "lower"
        jobs.append(Job(kind, by[name], model, w, args.topology))
    outs = run_jobs(jobs, cache=Cache(), progress=lambda d, t, o: print(
        f"[{d}/{t}] {o.name}: {'ok' if o.ok else o.error} {o.seconds:.1f} s"
        f"{' (cached)' if o.cached else ''}"))
    for job, o in zip(jobs, outs):
        if o.ok:
            ext = ".hlo.txt" if job.kind == "compile" else ".stablehlo.mlir"
            with open(os.path.join(folder, job.candidate.name + ext), "w") as f:
                f.write(o.text)
    print(f"wrote {sum(o.ok for o in outs)} files to {folder}")


if __name__ == "__main__":
    main()

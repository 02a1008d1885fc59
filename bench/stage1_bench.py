"""Stage 1 over every candidate of a model on a slice, after lowering: the planner's budget.

Goal (issue 7): Wan 2.1 14B on v5e-16 (v5e:4x4) in under 5 s for all candidates. Lowering
(jax, Python) is timed separately and not part of the goal; Stage 1 (parse, propagate,
DAG, memory, Q1 in C++) is timed over all texts, sequentially, then with threads (the
binding releases the GIL). Prints the ranked table.

    PYTHONPATH=build/shlo/pyroot:python .venv/bin/python bench/stage1_bench.py \
        [--model wan2.1-t2v-14b] [--video 720p-81f] [--target v5e:4x4] [--threads 2]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import sys
import time

from aoizora.compile import jaxenv  # noqa: F401


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="wan2.1-t2v-14b")
    ap.add_argument("--blocks", type=int, default=0, help="N-block proxy (0: the full model)")
    ap.add_argument("--video", default="720p-81f")
    ap.add_argument("--target", default="v5e:4x4")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0)
    a = ap.parse_args(argv)

    from aoizora import _core
    from aoizora.compile import compiler
    from aoizora.planning import stage1, strategies
    from aoizora.models import get_model, get_workload

    model = get_model(a.model, blocks=a.blocks or None)
    wl = get_workload(a.video)
    n = 1
    for d in a.target.partition(":")[2].split("x"):
        n *= int(d)
    cands = strategies.enumerate_candidates(model, wl, n)
    if a.limit:
        cands = cands[: a.limit]
    t0 = time.perf_counter()
    texts = [compiler.lower(c, model, wl, a.target) for c in cands]
    t_lower = time.perf_counter() - t0
    mb = sum(len(t) for t in texts) / 1e6

    t0 = time.perf_counter()
    ranked = stage1.analyze_all(list(zip(cands, texts)), a.target)
    t_seq = time.perf_counter() - t0

    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(a.threads) as ex:
        list(ex.map(lambda t: _core.analyze_stablehlo(t, topology=a.target), texts))
    t_par = time.perf_counter() - t0

    # The same texts with every collective on its own best box (Q1 before it was priced on
    # the placement pool): what the placements cost, side by side.
    t0 = time.perf_counter()
    for t in texts:
        _core.analyze_stablehlo(t, topology=a.target, q1_on_placements=False)
    t_boxes = time.perf_counter() - t0

    print(f"{a.model} {a.video} on {a.target}: {len(cands)} candidates, "
          f"{mb:.1f} MB of StableHLO")
    print(f"{'rank':>4} {'candidate':18s} {'Q1 ms':>9} {'compute':>9} {'comm':>8} "
          f"{'barrier':>8} {'mem GB':>7}  fits / reason")
    for r in ranked:
        print(f"{r.rank:4d} {r.candidate.name:18s} {r.q1_seconds * 1e3:9.1f} "
              f"{r.compute_seconds * 1e3:9.1f} {r.comm_seconds * 1e3:8.1f} "
              f"{r.barrier_comm_seconds * 1e3:8.1f} {r.memory_bytes / 1e9:7.2f}  "
              f"{'yes' if r.fits else r.reject_reason}")
    top = stage1.select_top_k(ranked)
    print(f"Top-{len(top)} (K = {stage1.choose_k()}): {', '.join(r.candidate.name for r in top)}")
    print(f"lowering {t_lower:.1f} s (not part of the goal); Stage 1: {t_seq:.2f} s sequential, "
          f"{t_par:.2f} s with {a.threads} threads, {t_seq / max(len(cands), 1) * 1e3:.1f} ms "
          f"per candidate; goal < 5 s: {'met' if min(t_seq, t_par) < 5 else 'NOT met'}")
    print(f"with every collective on its own best box instead of the placement pool: "
          f"{t_boxes:.2f} s sequential (placements cost x{t_seq / max(t_boxes, 1e-9):.2f})")


if __name__ == "__main__":
    sys.exit(main())

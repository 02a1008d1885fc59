"""Stage 1's predicted communication against what XLA really compiled, per candidate.

For every candidate of a model on a slice: lower (StableHLO) -> Stage 1 prediction; compile
(deviceless TPU) -> hlo front end's CollectiveGraph; bytes per device by collective kind
(operand bytes x executions, both sides the same convention). Prints a table and the
relative error of the total and per kind.

    .venv/bin/python bench/stage1_vs_hlo.py \
        --model wan2.1-t2v-14b --blocks 2 --video 480p-21f --target v5e:2x4 [--limit N]
    (the small one: --model wan-tiny --blocks 0 --video tiny --dtype bfloat16)

On a TPU target each candidate runs the attention kernel the planner gives it (splash, with
its searched blocks: kernels.with_kernel) and the HLO is the optimized module Stage 2 reads
(optimized_hlo), so the comparison is of the programs the planner ranks.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from aoizora.compile import jaxenv  # noqa: F401

KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")


def compare(candidates, model, workload, target, log=print):
    from aoizora import _core
    from aoizora.compile import compiler
    from aoizora.planning import kernels
    from aoizora.compile.optimized_hlo import optimized_hlo

    tpu = not target.startswith("cpu")
    rows = []
    for c in candidates:
        t0 = time.time()
        if tpu:
            try:
                c = kernels.with_kernel(c, model, workload, "tpu", target)
            except kernels.KernelUnsupported as e:
                log(f"{c.name:18s} skipped: {e}")
                continue
        text = compiler.lower(c, model, workload, target)
        pred = _core.analyze_stablehlo(text, topology=target)
        t1 = time.time()
        hlo = (optimized_hlo if tpu else compiler.compile)(c, model, workload, target)
        t2 = time.time()
        try:
            graph = _core.load_hlo(hlo)
        except _core.CoreError as e:  # the HLO front end's gap, not Stage 1's
            log(f"{c.name:18s} skipped: load_hlo failed: {str(e)[:120]}")
            continue
        real = {k: 0.0 for k in KINDS}
        for col in graph.collectives:
            real[col.kind] = real.get(col.kind, 0.0) + col.operand_bytes * col.repeat
        row = {"name": c.name, "pred": {k: pred.comm_bytes_by_kind.get(k, 0.0) for k in KINDS},
               "real": real, "q1": pred.q1_seconds, "fits": pred.fits,
               "compute": pred.compute_seconds, "barrier": pred.barrier_comm_seconds,
               "exposed": pred.q1_seconds - pred.compute_seconds - pred.barrier_comm_seconds,
               "lower_s": t1 - t0, "compile_s": t2 - t1}
        rows.append(row)
        log(f"{c.name:18s} " + "  ".join(
            f"{k[:6]} {row['pred'][k]/1e6:9.3f}/{row['real'][k]/1e6:9.3f}" for k in KINDS)
            + f"  (MB pred/real)  Q1 {row['q1'] * 1e3:.2f} ms = compute {row['compute'] * 1e3:.2f}"
            f" + exposed {row['exposed'] * 1e3:.2f} + barrier {row['barrier'] * 1e3:.2f}  {t2 - t0:5.1f}s")
    return rows


def summarize(rows):
    tot_p = sum(sum(r["pred"].values()) for r in rows)
    tot_r = sum(sum(r["real"].values()) for r in rows)
    out = {"candidates": len(rows), "total_pred_bytes": tot_p, "total_real_bytes": tot_r}
    per = []
    for r in rows:
        p, q = sum(r["pred"].values()), sum(r["real"].values())
        per.append(abs(p - q) / max(q, 1.0))
    out["median_rel_err_total"] = sorted(per)[len(per) // 2] if per else 0
    out["max_rel_err_total"] = max(per) if per else 0
    for k in KINDS:
        p = sum(r["pred"][k] for r in rows)
        q = sum(r["real"][k] for r in rows)
        out[f"{k}_pred_over_real"] = p / q if q else (0.0 if p == 0 else float("inf"))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="wan2.1-t2v-14b")
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--video", default="480p-21f")
    ap.add_argument("--target", default="v5e:2x4")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--only", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--dtype", default="", help="override the model dtype, e.g. bfloat16")
    a = ap.parse_args(argv)
    from aoizora.planning import strategies
    from aoizora.models import get_model, get_workload

    model = get_model(a.model, blocks=a.blocks or None)
    if a.dtype:
        model = model.replace(dtype=a.dtype)
    wl = get_workload(a.video, model=model)
    n = 1
    for d in a.target.partition(":")[2].split("x"):
        n *= int(d)
    cands = strategies.enumerate_candidates(model, wl, n)
    if a.only:
        cands = [c for c in cands if c.name in a.only.split(",")]
    if a.limit:
        cands = cands[: a.limit]
    rows = compare(cands, model, wl, a.target)
    s = summarize(rows)
    print(json.dumps(s, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "summary": s}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())

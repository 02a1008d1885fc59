"""libtpu's verdict on the residual-returning attention kernels the evaluation grids compile:
the ring steps of the ring form (tokamax's ring kernel) and of the Ulysses x ring form (jax's
splash kernel returning its logsumexp), one kernel program per distinct (kernel, generation,
batch per device, block_q, block_kv, block_kv_compute), compiled deviceless for the TPU
target under the scoped VMEM limit the planner compiles with (kernels.SCOPED_VMEM_KIB), and
libtpu's reported total where it refuses one. Writes tests/data/residual_vmem.json, the table
tests/python/test_kernels.py holds kernels.residual_vmem_bytes to.

The points: every candidate of the paper and production grids (evaluation/grid.py), the
README default and the two settings of issue 55 (Wan 2.1 14B and Wan 2.2 I2V A14B, 720p 81f,
v6e:2x4) whose form returns residuals, with the blocks the planner gives it
(candidate_filter.with_kernels: the searched blocks and MaxDiffusion's published ones), plus a short
ladder around the limit (EXTRA). Each compile is bench/splash_vmem.py --probe in a process of
its own (libtpu reads its flags once), on 2 devices of the slice: 2 query blocks and 2 key
blocks a device, the last key block padded by a lane tile (segment ids), the kernel vmapped
over the batch a device holds (1, or 2: the CFG pair unsplit; batch enters VMEM, heads do
not: they are a grid axis of the kernel). Lengths of whole blocks with no padding need no
more VMEM than this, so a verdict here is at least as strict as the program's.

    python bench/residual_vmem.py [--jobs 2] [--limit N]    (about 30-300 s a compile)
    python bench/residual_vmem.py --table    the table against kernels.residual_vmem_bytes
                                             and the confusion counts (docs/planner.md)
"""

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

from aoizora import _core
from aoizora.evaluation.grid import Setting, grid
from aoizora.models import get_model, get_workload
from aoizora.planning import candidate_filter, kernels
from aoizora.planning import strategies as S

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "residual_vmem.json")
# Beyond the grids: the refusals that set the planner's rule before (kernels.vmem_bytes's
# docstring) and a ladder of block_q around the limit.
EXTRA = [("splash", "tpu7x", 2, 8192, 1024, 512), ("splash", "tpu7x", 1, 8192, 1024, 512),
         ("tokamax_ring", "tpu7x", 1, 4736, 2560, 512),
         ("tokamax_ring", "v5e", 1, 4736, 2432, 2432),
         ("splash", "v6e", 1, 6144, 2048, 512), ("tokamax_ring", "v6e", 1, 6144, 2048, 512)]
# A whole program's verdict where it differs from the kernel program's: the issue-32
# TPU7x-8 plans (dp2-ring2-tp2, Wan 14B and A14B 720p; docs/results/video, commit 4c2066b)
# were refused at 100.61 MiB (31.05 of them spill slots), while the kernel alone compiles,
# at 2 x 2 blocks and at the plan's own lengths (37,800 tokens a device, 20 heads). The
# table counts the stricter verdict.
PROGRAM = {("tokamax_ring", "tpu7x", 1, 4736, 2560, 512): 100.61}
TOPOLOGY = {"v5e": "v5e:2x2", "v6e": "v6e:2x2", "tpu7x": "tpu7x:2x2x1"}
# The grid points compiled (a compile costs 1-5 minutes on the loaded 2-core machine that
# made the table, so not all 96): the README default's and issue 55's baselines, those near
# the limit by kernels.residual_vmem_bytes (the most used first, each kernel x generation x
# batch among them) and a few far below it. The rest are listed without a verdict.
SELECTED = [
    # the xDiT USP baselines of the README default and of issue 55's 720p settings
    ("splash", "v5e", 1, 2432, 4864, 4864), ("splash", "v6e", 1, 1024, 9472, 9472),
    ("splash", "v5e", 2, 5632, 1408, 1408), ("splash", "v5e", 2, 3328, 3328, 3328),
    ("splash", "v5e", 2, 4352, 2176, 2176), ("tokamax_ring", "v5e", 1, 3328, 3328, 3328),
    ("tokamax_ring", "v5e", 1, 4352, 2176, 2176), ("tokamax_ring", "v5e", 1, 2432, 4736, 4736),
    ("tokamax_ring", "v5e", 1, 512, 19840, 19840), ("splash", "v5e", 2, 1024, 11264, 512),
    ("splash", "v5e", 2, 512, 18944, 512), ("splash", "v6e", 2, 512, 18944, 512),
    ("splash", "v5e", 2, 4096, 2048, 512), ("splash", "v6e", 2, 4096, 2048, 512),
    ("splash", "v5e", 2, 1024, 9472, 9472), ("tokamax_ring", "v6e", 1, 1024, 9472, 9472),
    ("tokamax_ring", "tpu7x", 1, 4096, 2048, 512), ("tokamax_ring", "tpu7x", 1, 512, 18944, 512),
    ("splash", "tpu7x", 2, 4096, 2048, 512), ("splash", "tpu7x", 2, 1024, 9472, 9472),
    ("tokamax_ring", "tpu7x", 1, 4736, 1280, 1280), ("splash", "tpu7x", 2, 768, 9472, 9472),
    ("tokamax_ring", "tpu7x", 1, 2048, 2048, 512), ("splash", "v5e", 2, 2560, 2560, 512),
    ("tokamax_ring", "v5e", 1, 640, 10880, 10880), ("splash", "v5e", 2, 1280, 1280, 1280),
    ("tokamax_ring", "v5e", 1, 512, 512, 512), ("splash", "v5e", 1, 512, 512, 512),
    # predicted to compile by the bound, most used first
    ("tokamax_ring", "v5e", 1, 1024, 9472, 9472), ("tokamax_ring", "v6e", 1, 4096, 2048, 512),
    ("tokamax_ring", "v5e", 1, 2816, 2816, 2816), ("splash", "v5e", 2, 2816, 2816, 2816),
    ("splash", "v5e", 2, 4608, 1536, 512), ("splash", "v5e", 2, 2048, 5120, 512),
    ("tokamax_ring", "v6e", 1, 4736, 1280, 1280), ("splash", "v6e", 2, 1024, 9472, 9472),
    ("splash", "v5e", 1, 5120, 1280, 1280),
]
# Verdicts measured before with the same programs (bench/splash_vmem.py --kernel
# tokamax_ring: tests/python/test_kernels.py, LIBTPU_KERNEL_TOTAL_MIB, whole-kernel totals)
# or this script's first run: (key) -> libtpu's total MiB.
KNOWN = {("tokamax_ring", "v5e", 1, 2048, 512, 512): 12.28,
         ("tokamax_ring", "v5e", 1, 512, 2048, 2048): 6.93,
         ("tokamax_ring", "v5e", 1, 4096, 2048, 512): 49.94,
         ("tokamax_ring", "v6e", 1, 512, 18944, 512): 50.48,
         ("tokamax_ring", "v5e", 1, 4736, 2432, 2432): 69.10,
         ("splash", "tpu7x", 2, 8192, 1024, 512): 73.48,
         ("splash", "tpu7x", 1, 8192, 1024, 512): 60.41}


def settings() -> list:
    return grid("paper") + grid("production") + [
        Setting("wan2.1-t2v-14b", "720p", 81, "v6e:2x4"),
        Setting("wan2.2-i2v-a14b", "720p", 81, "v6e:2x4")]


def points() -> dict:
    """(kernel, generation, batch, bq, bkv, bkc) -> the (setting, candidate, heads) using it."""
    out: dict = {}
    for s in settings():
        cfg, w = get_model(s.model, blocks=2), get_workload(s.video, s.frames)
        topo = _core.make_topology(s.topology)
        run = SimpleNamespace(cfg=cfg, wl=w, target=SimpleNamespace(platform="tpu"),
                              stage2=SimpleNamespace(topology=topo),
                              skip=lambda name, kind, why: None, searched_of={})
        for c in candidate_filter.with_kernels(run, S.enumerate_candidates(cfg, w, topo.num_devices)):
            if not kernels.returns_residuals(c):
                continue
            shape = kernels.attention_shapes(c, cfg, w, c.kernel)
            # tokamax keeps m, l and the accumulator in true scratch: its VMEM does not
            # depend on the batch (one point); jax's kernel returns them as outputs
            batch = (1 if c.kernel == "tokamax_ring"
                     else min(2, w.batch // (c.data * c.fsdp)))
            key = (c.kernel, topo.spec["generation"], batch, c.block_q, c.block_kv,
                   c.block_kv_compute)
            out.setdefault(key, []).append((s.key, c.name, shape.heads))
    for key in EXTRA:
        out.setdefault(key, []).append(("ladder", "", 10))
    return out


def record(key, heads: int) -> dict:
    kernel, gen, batch, bq, bkv, bkc = key
    return {"kernel": kernel, "generation": gen, "batch": batch, "block_q": bq,
            "block_kv": bkv, "block_kv_compute": bkc, "head_dim": 128, "heads": heads}


def verdict(key, heads: int) -> dict:
    kernel, gen, batch, bq, bkv, bkc = key
    env = {**os.environ, "SPLASH_VMEM_LIMIT_KIB": str(kernels.SCOPED_VMEM_KIB),
           "SPLASH_VMEM_HEADS": str(heads), "SPLASH_VMEM_BATCH": str(batch)}
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, os.path.join(HERE, "splash_vmem.py"), "--probe",
                        "splash_ring" if kernel == "splash" else kernel, TOPOLOGY[gen],
                        f"{bq},{bkv},{bkc}"], env=env, capture_output=True, text=True,
                       timeout=900)
    got = (r.stdout.strip().splitlines() or ["?"])[-1]
    rec = {**record(key, heads), "fits": got == "fits",
           "compile_s": round(time.perf_counter() - t0, 1)}
    if got != "fits":
        words = got.split()
        rec["libtpu_mib"] = float(words[0]) if got[:1].isdigit() else None
        spill = [w for w in words if w.startswith("spill=")]
        if spill:
            rec["spill_mib"] = float(spill[0][6:])
        if not got[:1].isdigit() or "(" in got:
            rec["report"] = got
    return rec


def table(path: str = OUT) -> None:
    """Markdown: each compiled point, libtpu's verdict and total, the bound, the planner's
    call (predicted below the limit less the margin, else full compile); then the counts."""
    doc = json.load(open(path))
    limit = doc["scoped_vmem_limit_kib"] * 1024
    most = limit * (1 - kernels.RESIDUAL_VMEM_MARGIN)
    print("| kernel | gen | batch | block_q x kv / kv_compute | uses | libtpu | libtpu MiB "
          "| bound MiB | planner |")
    print("|---|---|---|---|---|---|---|---|---|")
    counts = {}
    for p in doc["points"]:
        bound = kernels.residual_vmem_bytes(p["kernel"], p["block_q"], p["block_kv"],
                                            p["block_kv_compute"], p["head_dim"],
                                            batch=p["batch"], generation=p["generation"])
        call = "predicted" if bound <= most else "full compile"
        fits = p["fits"] and p.get("program_fits", True)
        key = (call, "fits" if fits else "refused")
        counts[key] = counts.get(key, 0) + 1
        mib = p.get("libtpu_mib")
        print(f"| {p['kernel']} | {p['generation']} | {p['batch']} | {p['block_q']} x "
              f"{p['block_kv']} / {p['block_kv_compute']} | {p.get('used_by_count', '-')} | "
              f"{'fits' if fits else 'refused'} | {mib or p.get('program_libtpu_mib') or '-'} | "
              f"{bound / 2**20:.1f} | {call} |")
    print()
    print("| planner \\ libtpu | fits | refused |\n|---|---|---|")
    for call in ("predicted", "full compile"):
        print(f"| {call} | {counts.get((call, 'fits'), 0)} | {counts.get((call, 'refused'), 0)} |")
    print(f"\n{len(doc['not_compiled'])} grid points not compiled")


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--table"]:
        table()
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="at most this many compiles")
    ap.add_argument("--out", default=OUT)
    a = ap.parse_args(argv)
    pts = points()
    done = {}
    if os.path.exists(a.out):
        for r in json.load(open(a.out))["points"]:
            done[(r["kernel"], r["generation"], r["batch"], r["block_q"], r["block_kv"],
                  r["block_kv_compute"])] = r
    limit_mib = kernels.SCOPED_VMEM_KIB / 1024
    for key, mib in KNOWN.items():
        done.setdefault(key, {**record(key, min(h for _, _, h in pts.get(key, [(0, 0, 1)]))),
                              "fits": mib <= limit_mib, "libtpu_mib": mib, "known": True})
    for key, mib in PROGRAM.items():
        if key in done:
            done[key].update(program_libtpu_mib=mib, program_fits=mib <= limit_mib)
    todo = [k for k in dict.fromkeys(EXTRA + SELECTED) if k not in done]
    if a.limit:
        todo = todo[:a.limit]
    print(f"{len(pts)} points, {len(done)} done, {len(todo)} to compile", flush=True)

    def one(key):
        rec = verdict(key, min(h for _, _, h in pts[key]))
        rec["used_by"] = sorted({f"{s}:{c}" for s, c, _ in pts[key]})[:4]
        rec["used_by_count"] = len(pts[key])
        return key, rec

    for key in done:
        if key in pts and "used_by" not in done[key]:
            done[key].update(used_by=sorted({f"{s}:{c}" for s, c, _ in pts[key]})[:4],
                             used_by_count=len(pts[key]))
    write(a.out, done, pts)
    with ThreadPoolExecutor(a.jobs) as ex:
        for key, rec in ex.map(one, todo):
            done[key] = rec
            print(json.dumps({k: v for k, v in rec.items() if k != "used_by"}), flush=True)
            write(a.out, done, pts)


def write(path, done, pts):
    """The table: the compiled points, and the grid's points not compiled (no verdict)."""
    uncompiled = [{**record(k, min(h for _, _, h in pts[k])), "used_by_count": len(pts[k])}
                  for k in sorted(pts) if k not in done]
    doc = {"made_by": "bench/residual_vmem.py", "libtpu": "0.0.42.1",
           "scoped_vmem_limit_kib": kernels.SCOPED_VMEM_KIB,
           "how": "one kernel program per point, deviceless, under the limit: 2 devices of "
                  "a ring, 2 query and 2 key blocks a device, keys padded by a lane tile "
                  "(segment ids), vmapped over the batch; libtpu_mib is libtpu's reported "
                  "total where it refuses",
           "points": sorted(done.values(), key=lambda r: (
               r["kernel"], r["generation"], r["batch"], r["block_q"], r["block_kv"],
               r["block_kv_compute"])),
           "not_compiled": uncompiled}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


if __name__ == "__main__":
    main()

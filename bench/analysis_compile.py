"""The analysis compile against the full TPU compile: time, where the full compile spends it,
and whether the analysis sees the same program.

    PYTHONPATH=python .venv/bin/python bench/analysis_compile.py \
        [--model wan2.1-t2v-14b] [--video 720p-81f] [--topology v5e:4x4] [--candidates A B ...]

Per candidate (default: one per strategy kind, with the splash kernel and its searched
blocks, as the planner compiles them): the seconds of `optimized_hlo` (a child process
lowers, XLA runs its HLO passes and dumps the optimized module, the child is killed) and of
the full compile in this process; libtpu's own stage durations of that full compile (its
INFO log in /tmp/tpu_logs: HLO passes, backend passes, code generation); and the check the
planner relies on: identical collectives (kind, bytes, groups), Q2 and simulated step on
JAX's default order from either text. Wall times depend on the machine's load (printed).
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

# This bench reads libtpu's stage durations from its log, which jaxenv turns off by default.
os.environ.setdefault("TPU_LOG_DIR", "/tmp/tpu_logs")
from aoizora.compile import jaxenv  # noqa: E402,F401
from aoizora import _core
from aoizora.planning import kernels  # noqa: E402
from aoizora.compile import compiler as C  # noqa: E402
from aoizora.planning import strategies as S  # noqa: E402
from aoizora.errors import CompileError  # noqa: E402
from aoizora.models import get_model, get_workload  # noqa: E402
from aoizora.compile.optimized_hlo import optimized_hlo  # noqa: E402

PICKS = {8: ["dp2-ag4w", "dp2-uly4w", "dp2-usp2x2", "fsdp2-ring2-tp2", "tp8"],
         16: ["dp2-ag8w", "dp2-uly8w", "dp2-usp4x2w", "dp2-uly8"],
         4: ["dp2-ag2w", "dp2-uly2", "usp2x2", "fsdp2-ring2", "tp4"]}
STAGES = ("HLO_PASSES", "BACKEND_PASSES", "CODE_GENERATION")


def seconds(text: str) -> float:
    """libtpu's durations: '2m7.9s', '365.05ms', '1.09s'."""
    total = 0.0
    for value, unit in re.findall(r"([\d.]+)(ms|us|m|s)", text):
        total += float(value) * {"ms": 1e-3, "us": 1e-6, "m": 60.0, "s": 1.0}[unit]
    return total


def stage_seconds() -> list[dict[str, float]]:
    """The stage durations of each jit_step compile of this process, in order, from libtpu's
    INFO log (buffered by libtpu: read once the compiles are done)."""
    logs = sorted(glob.glob(f"/tmp/tpu_logs/*INFO*.{os.getpid()}"))
    if not logs:
        return []
    text = open(logs[-1]).read()
    out = []
    for part in text.split("Initial HLO module: jit_step")[1:]:
        part = part.split("Initial HLO module:")[0]
        found = re.findall(r"(\w+) stage duration: (\S+)", part)
        out.append({name: seconds(value) for name, value in found if name in STAGES})
    return out


def analysis(text: str, topology, n: int):
    g = _core.load_hlo(text)
    order = list(_core.default_placement(topology, [n]).device_of)
    return ([(str(c.kind), c.operand_bytes, c.result_bytes, [list(x) for x in c.groups])
             for c in g.collectives],
            _core.evaluate_q2(g, topology, order).seconds,
            _core.simulate(g, topology, order).step_seconds)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="wan2.1-t2v-14b")
    ap.add_argument("--video", default="720p-81f")
    ap.add_argument("--topology", default="v5e:4x4")
    ap.add_argument("--candidates", nargs="*")
    a = ap.parse_args()
    cfg, wl = get_model(a.model), get_workload(a.video)
    topology = _core.make_topology(a.topology)
    n = topology.num_devices
    by_name = {c.name: c for c in S.enumerate_candidates(cfg, wl, n)}
    names = a.candidates or [c for c in PICKS.get(n, []) if c in by_name]
    print(f"{a.model} {a.video} on {a.topology} ({os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.1f}); splash blocks as searched")
    rows = []
    for name in names:
        c = kernels.with_kernel(by_name[name], cfg, wl, "tpu", a.topology)
        t0 = time.perf_counter()
        quick = optimized_hlo(c, cfg, wl, a.topology)
        t_quick = time.perf_counter() - t0
        t0 = time.perf_counter()
        try:
            full = C.compile(c, cfg, wl, a.topology)
            same = "yes" if analysis(quick, topology, n) == analysis(full, topology, n) else "NO"
        except CompileError as e:    # the backend's own checks, after the optimized HLO
            same = f"full compile failed: {str(e).split(': ', 2)[-1][:70]}"
        rows.append((name, c, t_quick, time.perf_counter() - t0, same))
        print(f"  {name}: analysis {t_quick:.1f} s, full {rows[-1][3]:.1f} s, {same}", flush=True)
    time.sleep(35)   # libtpu flushes its INFO log every 30 s
    stages = stage_seconds()
    print(f"{'candidate':18} {'blocks':>16} {'analysis s':>10} {'full s':>8} {'ratio':>6} "
          f"{'HLO passes':>10} {'backend':>8} {'codegen':>8}  same analysis")
    ratios = []
    for i, (name, c, t_quick, t_full, same) in enumerate(rows):
        st = stages[i] if i < len(stages) else {}
        ratios.append(t_full / t_quick)
        blocks = f"{c.block_q}/{c.block_kv}/{c.block_kv_compute}"
        print(f"{name:18} {blocks:>16} {t_quick:10.1f} {t_full:8.1f} {t_full / t_quick:6.1f} "
              + " ".join(f"{st[k]:{w}.1f}" if k in st else f"{'-':>{w}}"
                         for k, w in zip(STAGES, (10, 8, 8)))
              + f"  {same}")
    print(f"median full / analysis: {statistics.median(ratios):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

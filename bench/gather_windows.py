"""What each async all-gather of a compiled candidate overlaps, simulated, beside Stage 1's Q1.

    python bench/gather_windows.py --candidate dp2-ag4 --model wan2.1-t2v-1.3b \
        --topology v5e:2x4 --video 480p --frames 21 [--trace out.json]

Lowers the candidate with its planner kernel, runs Stage 1 on the StableHLO, compiles it
(deviceless), simulates it on JAX's default order with a timeline and prints, for one trip
of the layer loop on chip 0, every all-gather from its start to its done (its priced time)
and the ops the compiled schedule runs between the two (what hides it) at their simulated
times, then the time the chip stood waiting at the done (exposed). Every figure is predicted
(Q1) or simulated.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile

from aoizora.compile import jaxenv  # noqa: F401
from aoizora import _core
from aoizora.compile import compiler
from aoizora.compile.optimized_hlo import optimized_hlo
from aoizora.inputs import validate
from aoizora.planning import kernels, stage2, strategies


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidate", default="dp2-ag4")
    ap.add_argument("--model", default="wan2.1-t2v-1.3b")
    ap.add_argument("--topology", default="v5e:2x4")
    ap.add_argument("--video", default="480p")
    ap.add_argument("--frames", type=int, default=21)
    ap.add_argument("--trip", type=int, default=1, help="which simulated trip of the loop")
    ap.add_argument("--trace", help="keep the Chrome trace here")
    a = ap.parse_args()
    cfg, wl = validate.workload(a.model, a.video, a.frames)
    st2 = stage2.Stage2.for_topology(a.topology)
    cands = {c.name: c for c in strategies.enumerate_candidates(cfg, wl, st2.num_devices)}
    c = kernels.with_kernel(cands[a.candidate], cfg, wl, "tpu", a.topology)
    r = _core.analyze_stablehlo(compiler.lower(c, cfg, wl, a.topology), topology=a.topology)
    print(f"Q1 {r.q1_seconds * 1e3:.2f} ms: compute {r.compute_seconds * 1e3:.2f}, barrier "
          f"{r.barrier_comm_seconds * 1e3:.2f}, exposed "
          f"{(r.q1_seconds - r.compute_seconds - r.barrier_comm_seconds) * 1e3:.2f}; "
          f"collective seconds by axis (ms) "
          f"{ {k: round(v * 1e3, 3) for k, v in r.comm_seconds_by_axis.items()} }")
    hlo = optimized_hlo(c, cfg, wl, a.topology)
    g = st2.load(hlo)
    p = st2.default_pair(c, g)
    path = a.trace or os.path.join(tempfile.mkdtemp(), "trace.json")
    sim = _core.simulate(g, st2.topology, p.device_of, trace=path)
    print(f"simulated {sim.step_seconds * 1e3:.2f} ms, compute bound "
          f"{sim.compute_bound_seconds * 1e3:.2f}")
    with open(path) as f:
        slices = sorted((e for e in json.load(f)["traceEvents"]
                         if e.get("ph") == "X" and e.get("pid") == 1 and e.get("tid") == 0),
                        key=lambda e: e["ts"])
    print_windows(slices, hlo, a.trip)
    return 0


def print_windows(slices: list[dict], hlo_text: str, trip: int) -> None:
    """Chip 0's waits at async all-gathers' dones (a `comm` slice named by the -start op) in
    one loop trip, each with the ops the compiled schedule runs between its start and its
    done (what hides it), at their simulated times."""
    order = re.findall(r"^\s*(?:ROOT )?%([\w.\-]+) = ", hlo_text, re.M)
    where = {n: i for i, n in enumerate(order)}
    waits = [e for e in slices if e["cat"] == "comm" and "collective-start" in e["name"]
             and e["name"] in where]
    per_trip = len({e["name"] for e in waits})
    for w in waits[trip * per_trip:(trip + 1) * per_trip]:
        start = w["name"]
        done = start.replace("start", "done")
        between = order[where[start] + 1:where.get(done, where[start] + 1)]
        ops = []
        for name in between:  # its latest run before the wait
            runs = [e for e in slices if e["name"] == name and e["cat"] == "compute"
                    and e["ts"] < w["ts"]]
            if runs and runs[-1]["dur"] > 0.05:
                ops.append(runs[-1])
        hidden = sum(e["dur"] for e in ops)
        print(f"\n{start} .. {done}: {hidden:.1f} us of compute between them, then "
              f"{w['dur']:.1f} us waiting at the done (start to done {hidden + w['dur']:.1f}):")
        for e in ops:
            print(f"  {e['name']:45s} {e['dur']:7.1f} us")


if __name__ == "__main__":
    sys.exit(main())

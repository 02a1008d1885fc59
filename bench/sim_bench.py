"""Speed of the flow-level simulator on one full Wan 2.1 14B forward (720p, 81 frames, all 40
blocks, CFG batch of 2) compiled for v5e:4x4 through libtpu (deviceless): wall time per
simulation and events per second, with repeated regions extrapolated from their steady
state (the default, max_iterations=3) and simulated iteration by iteration
(max_iterations=0). Goal: one forward in under 2 s.

    PYTHONPATH=build/sim/pyroot:python .venv/bin/python bench/sim_bench.py \
        [--candidates ag16w,dp2-usp4x2] [--unrolled] [--repeats 3]

The compiled HLO is cached under /tmp/aoizora_sim_bench (a compile takes one to several
minutes). Wall times are measured here; step times are simulated on the v5e model.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join("/tmp", "aoizora_sim_bench")
TOPOLOGY = "v5e:4x4"


def compiled_hlo(candidate_name: str, unrolled: bool) -> tuple[str, list[int]]:
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    from aoizora.compile import jaxenv  # noqa: F401
    from aoizora.compile import compiler
    from aoizora.planning import strategies
    from aoizora.models import get_model, get_workload

    model = get_model("wan2.1-t2v-14b")
    if unrolled:
        model = model.replace(scan=False)
    workload = get_workload("720p", 81)
    cands = {c.name: c for c in strategies.enumerate_candidates(model, workload, 16)}
    if candidate_name not in cands:
        raise SystemExit(f"unknown candidate {candidate_name}: e.g. {', '.join(list(cands)[:8])}")
    cand = cands[candidate_name]
    path = os.path.join(CACHE, f"wan14b_720p81_{candidate_name}_"
                               f"{'unrolled' if unrolled else 'scan'}.{TOPOLOGY.replace(':', '_')}.hlo")
    if not os.path.exists(path):
        os.makedirs(CACHE, exist_ok=True)
        t = time.perf_counter()
        text = compiler.compile(cand, model, workload, TOPOLOGY)
        print(f"compiled {candidate_name} ({'unrolled' if unrolled else 'scan'}) in "
              f"{time.perf_counter() - t:.0f} s", file=sys.stderr)
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
    return path, list(cand.mesh_shape)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidates", default="ag16w", help="comma-separated candidate names")
    ap.add_argument("--unrolled", action="store_true", help="also the unrolled (no scan) model")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    from aoizora import _core

    topology = _core.make_topology(TOPOLOGY)
    rows = []
    for name in args.candidates.split(","):
        for unrolled in ((False, True) if args.unrolled else (False,)):
            path, mesh = compiled_hlo(name, unrolled)
            t = time.perf_counter()
            graph = _core.load_hlo_file(path)
            parse_s = time.perf_counter() - t
            ops = sum(len(r.ops) for r in graph.regions)
            device_of = list(_core.default_placement(topology, mesh).device_of)
            for max_it in (3, 0):
                best = float("inf")
                for _ in range(args.repeats):
                    t = time.perf_counter()
                    r = _core.simulate(graph, topology, device_of, max_iterations=max_it)
                    best = min(best, time.perf_counter() - t)
                rows.append({
                    "program": f"{name} {'unrolled' if unrolled else 'scan'}",
                    "ops": ops, "collectives": len(graph.collectives), "parse_s": parse_s,
                    "mode": "extrapolated" if max_it else "full", "wall_s": best,
                    "events": r.events, "flows": r.flows, "runs": r.collectives,
                    "eps": r.events / best, "step_s": r.step_seconds,
                    "compute_s": r.compute_bound_seconds,
                })
    head = (f"{'program':<22}{'ops':>6}{'coll':>6}{'mode':>14}{'wall s':>9}{'events':>10}"
            f"{'events/s':>11}{'flows':>9}{'coll runs':>10}{'sim step s':>12}{'compute s':>11}")
    print(f"Wan 2.1 14B, 720p 81 frames, one forward (batch 2), {TOPOLOGY}, JAX default placement")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['program']:<22}{r['ops']:>6}{r['collectives']:>6}{r['mode']:>14}"
              f"{r['wall_s']:>9.3f}{r['events']:>10}{r['eps']:>11.3g}{r['flows']:>9}"
              f"{r['runs']:>10}{r['step_s']:>12.3f}{r['compute_s']:>11.3f}")
    print("wall s: best of", args.repeats, "(measured); sim step s: simulated on the v5e model.")


if __name__ == "__main__":
    main()

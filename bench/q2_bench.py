"""Speed of Q2 (the topology-aware placement cost) on real compiled Wan 2.1 14B graphs: the
two-block compile proxy at 720p, 81 frames (CFG batch of 2), compiled through libtpu
(deviceless) for v5e:4x4, v5e:16x16 and v5p:16x16x16. Goals: >= 100,000 Q2 evaluations/s on
v5e:4x4 (one core), 1,000 placements on v5e:16x16 and on v5p:16x16x16 in < 10 s each.

    PYTHONPATH=build/topo/pyroot:python .venv/bin/python bench/q2_bench.py [--evals 100000]

Compiled HLO is cached under /tmp/aoizora_q2_bench (compiles take minutes on big slices).
Wall times are measured here, single-threaded, with the placements' Python->C++ conversion
included; Q2 values are predictions on the hardware model.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join("/tmp", "aoizora_q2_bench")
# (topology, candidate, evaluations to time)
CASES = [("v5e:4x4", "ag8-tp2", 100_000), ("v5e:16x16", "ag128-tp2", 1_000),
         ("v5p:16x16x16", "ag2048-tp2", 1_000)]


def compiled_hlo(topology: str, candidate: str) -> tuple[str, list[int]]:
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    from aoizora.compile import jaxenv  # noqa: F401
    from aoizora.compile import compiler
    from aoizora.planning import strategies
    from aoizora.models import get_model, get_workload

    model = get_model("wan2.1-t2v-14b", blocks=2)
    workload = get_workload("720p", 81)
    n = 1
    for d in topology.split(":")[1].split("x"):
        n *= int(d)
    cands = {c.name: c for c in strategies.enumerate_candidates(model, workload, n)}
    cand = cands[candidate]
    path = os.path.join(CACHE, f"wan14b2_720p81_{candidate}.{topology.replace(':', '_')}.hlo")
    if not os.path.exists(path):
        os.makedirs(CACHE, exist_ok=True)
        t = time.perf_counter()
        text = compiler.compile(cand, model, workload, topology)
        print(f"compiled {candidate} for {topology} in {time.perf_counter() - t:.0f} s",
              file=sys.stderr)
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
    return path, list(cand.mesh_shape)


def load_graph(core, path: str):
    """The collective graph; works around the HLO parser not yet reading the iota device list
    of mesh replica groups without '<=' (`device_ids=([2048,2]T(1,0))`, which XLA prints for
    v5p:16x16x16) by rewriting it to the equivalent `[1,4096]<=[2048,2]T(1,0)`."""
    try:
        return core.load_hlo_file(path)
    except core.CoreError as e:
        if "device_ids" not in str(e):
            raise
        with open(path) as f:
            text = f.read()
        text = re.sub(r"device_ids=\(\[(\d+),(\d+)\]T\(([\d,]+)\)\)",
                      lambda m: f"device_ids=([1,{int(m.group(1)) * int(m.group(2))}]<="
                                f"[{m.group(1)},{m.group(2)}]T({m.group(3)}))", text)
        print(f"note: rewrote iota device_ids in {os.path.basename(path)} for the parser",
              file=sys.stderr)
        return core.load_hlo(text, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--evals", type=int, default=None, help="override evaluations per case")
    ap.add_argument("--cases", default=",".join(c[0] for c in CASES),
                    help="comma-separated topologies of CASES to run")
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    wanted = args.cases.split(",")
    rows = []
    for topology, candidate, evals in CASES:
        if topology not in wanted:
            continue
        path, mesh = compiled_hlo(topology, candidate)
        if args.compile_only:
            continue
        from aoizora import _core

        evals = args.evals or evals
        topo = _core.make_topology(topology)
        graph = load_graph(_core, path)
        q2 = _core.Q2Evaluator(graph, topo)
        rng = random.Random(0)
        n = topo.num_chips
        # Random permutations, plus JAX's default order and the axis orders, cycled.
        try:  # JAX refuses some meshes without axis splitting (v5p): then row-major first
            base = [list(_core.default_placement(topo, mesh).device_of)]
            baseline = "jax"
        except _core.CoreError:
            base = [list(range(topo.num_chips))]
            baseline = "row-major"
        base += [list(p.device_of) for p in _core.enumerate_axis_orders(topo, mesh, 200)]
        for _ in range(min(evals, 1000)):
            p = list(range(n))
            rng.shuffle(p)
            base.append(p)
        placements = [base[i % len(base)] for i in range(evals)]
        t, c = time.perf_counter(), time.process_time()
        values = q2.seconds_many(placements)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        rows.append({
            "topology": topology, "program": f"wan14b@2 {candidate}", "chips": n,
            "collectives": len(graph.collectives), "patterns": q2.num_patterns, "evals": evals,
            "wall": wall, "cpu": cpu, "rate": evals / wall, "cpu_rate": evals / max(cpu, 1e-9), "default_ms": values[0] * 1e3,
            "best_ms": min(values) * 1e3, "baseline": baseline,
        })
    if args.compile_only:
        return
    head = (f"{'topology':<14}{'program':<24}{'chips':>6}{'coll':>6}{'patt':>6}{'evals':>9}"
            f"{'wall s':>9}{'cpu s':>8}{'evals/s':>10}{'per cpu s':>11}{'baseline Q2 ms':>22}{'best Q2 ms':>12}")
    print("Q2 evaluation speed, Wan 2.1 14B two-block proxy, 720p 81 frames, batch 2")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['topology']:<14}{r['program']:<24}{r['chips']:>6}{r['collectives']:>6}"
              f"{r['patterns']:>6}{r['evals']:>9}{r['wall']:>9.3f}{r['cpu']:>8.3f}{r['rate']:>10.4g}"
              f"{r['cpu_rate']:>11.4g}"
              f"{r['baseline']:>11}{r['default_ms']:>11.2f}{r['best_ms']:>12.2f}")
    print("wall s, evals/s: measured wall clock, one thread; cpu s, per cpu s: this process's "
          f"CPU time (robust on a shared machine; load average now {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores). Q2 ms: predicted on the hardware model; baseline = JAX's default placement, or row-major "
          "where jax.make_mesh refuses the mesh; best = the best of the evaluated placements.")


if __name__ == "__main__":
    main()

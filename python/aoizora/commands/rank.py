"""`aoizora rank --hlo FILE --topology T [--mesh AxB] [--json]`: the placements of one compiled
HLO best first by the topology-aware cost Q2, with JAX's default placement and the ratio.
Q2 is a *predicted* ranking objective (a model of the fabric), not a measured latency.
The program must span the slice, and without --mesh it is ranked on its own mesh: both as
`simulate` does (compiled_program.py)."""

from __future__ import annotations

import json
import time

from aoizora.hardware import hardware_file
from aoizora.inputs.validate import int_arg


def register(sub) -> None:
    p = sub.add_parser("rank", help="placements of a compiled HLO, best first by Q2")
    p.add_argument("--hlo", required=True, metavar="FILE", help="compiled HLO text file")
    p.add_argument("--topology", required=True, metavar="T",
                   help="a slice such as v5e:4x4, or a topology JSON file")
    hardware_file.add_argument(p)
    p.add_argument("--mesh", metavar="AxB", help="the logical mesh shape the HLO was compiled "
                   "for (default: the program's own, read from its shardings)")
    p.add_argument("--top", type=int_arg("--top", 1), default=10, metavar="N",
                   help="show the N best (default 10)")
    p.add_argument("--search-iterations", type=int_arg("--search-iterations", 0, 10**8), default=2000, metavar="N",
                   help="local-search proposals from each of the best few (default 2000)")
    p.add_argument("--search-starts", type=int_arg("--search-starts", 0, 10**4), default=3, metavar="N",
                   help="local searches from the N best candidates (default 3, 0: none)")
    p.add_argument("--seed", type=int_arg("--seed", 0, 2**63 - 1), default=0, help="local-search seed (default 0)")
    p.add_argument("--max-axis-orders", type=int_arg("--max-axis-orders", 1, 10**7), default=2000, metavar="N",
                   help="cap on enumerated physical axis orders (default 2000)")
    p.add_argument("--json", action="store_true", help="print the ranking as JSON")
    p.set_defaults(run=run)


def _entry(topo, r, default_q2: float | None, rank: int | None = None) -> dict:
    d = {"name": r.name, "q2_seconds": r.q2,
         "device_coords": [list(c) for c in topo.coords_of(r.device_of)], "device_of": list(r.device_of)}
    if rank is not None:
        d["rank"] = rank
    if default_q2:
        d["speedup_vs_default"] = default_q2 / r.q2 if r.q2 > 0 else None
    return d


def run(args) -> int:
    from aoizora import _core
    from aoizora.compile import compiled_program
    from aoizora.inputs import topology_file, validate
    from aoizora.errors import UserError

    text, graph = compiled_program.load(args.hlo)
    topo = topology_file.load(args.topology, hardware=args.hardware)
    compiled_program.check_spans(graph.num_partitions, topo)
    mesh = compiled_program.mesh_shape(args.mesh, text, graph.num_partitions)
    unknown = validate.unknown_trip_counts(graph, args.hlo)
    t0 = time.perf_counter()
    try:
        ranking = _core.rank_placements(
            graph, topo, mesh, max_axis_orders=args.max_axis_orders,
            search_starts=args.search_starts, search_iterations=args.search_iterations,
            seed=args.seed)
    except _core.CoreError as e:
        raise UserError(str(e)) from None
    elapsed = time.perf_counter() - t0
    default = ranking.default
    dq2 = default.q2 if default is not None else None
    best = ranking.ranked[0]
    if args.json:
        out = {
            "hlo": args.hlo, "topology": topo.name, "hardware": args.hardware, "mesh": mesh,
            "num_partitions": graph.num_partitions, "objective": "Q2 (predicted seconds)",
            "default": _entry(topo, default, dq2) if default is not None else None,
            "default_error": ranking.default_error or None,
            "best_over_default": (dq2 / best.q2) if dq2 and best.q2 > 0 else None,
            "evaluated": ranking.evaluated, "planning_seconds": elapsed,
            "unknown_trip_count_loops": unknown,
            "ranked": [_entry(topo, r, dq2, i + 1) for i, r in enumerate(ranking.ranked[:args.top])],
        }
        print(json.dumps(out, indent=1))
        return 0
    from aoizora.terminal import echo

    mesh_s = "x".join(map(str, mesh))
    echo(f"{args.hlo} on {topo.name}, mesh {mesh_s}: {len(ranking.ranked)} distinct placements, "
          f"{ranking.evaluated} Q2 evaluations in {elapsed:.2f} s (predicted, model of {topo.name})")
    print(f"{'rank':>4}  {'Q2 ms':>10}  {'vs default':>10}  placement")
    for i, r in enumerate(ranking.ranked[:args.top]):
        ratio = f"{dq2 / r.q2:.3f}x" if dq2 and r.q2 > 0 else "-"
        print(f"{i + 1:>4}  {r.q2 * 1e3:>10.4f}  {ratio:>10}  {r.name}")
    if default is not None:
        echo(f"default (jax.make_mesh): Q2 {dq2 * 1e3:.4f} ms ({default.name}); "
              f"best / default: {dq2 / best.q2:.3f}x")
    else:
        echo(f"default (jax.make_mesh): none, JAX refuses this mesh: {ranking.default_error}")
    coords = " ".join("(" + ",".join(map(str, c)) + ")" for c in topo.coords_of(best.device_of))
    echo(f"best device coords in mesh order: {coords}")
    return 0

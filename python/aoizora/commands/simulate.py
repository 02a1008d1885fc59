"""`aoizora simulate --hlo FILE --topology T [--placement default|best|row-major|FILE]
[--trace FILE] [--json]`: flow-level simulation of a compiled HLO on a TPU slice under one
placement (the C++ simulator, aoizora._core.simulate). Figures are *simulated on a model* of
the hardware, never measured. The program must span the slice, whatever the placement, and
without --mesh default/best take its own mesh: both as `rank` does (compiled_program.py).

A placement FILE is JSON: the chip coords of the logical devices in mesh order
(`[[x, y, z], ...]`, i.e. [d.coords for d in mesh.devices.flat]), or an object with such a
list under "device_coords" or "coords" (a plan.json's "choice" works too).
"""

from __future__ import annotations

import json
import os
import sys

from aoizora.hardware import hardware_file
from aoizora.inputs.validate import float_arg, int_arg


def register(sub) -> None:
    p = sub.add_parser("simulate", help="flow-level simulation of a compiled HLO on a slice")
    p.add_argument("--hlo", required=True, metavar="FILE", help="compiled HLO text file")
    p.add_argument("--topology", required=True, metavar="T",
                   help="a slice such as v5e:4x4, or a topology JSON file")
    hardware_file.add_argument(p)
    p.add_argument("--placement", default="default", metavar="default|best|row-major|FILE",
                   help="JAX's default device order (default), Q2's best, row-major chip order, "
                        "or a JSON file of device coords in mesh order")
    p.add_argument("--mesh", metavar="AxB", help="the logical mesh shape the HLO was compiled "
                   "for, used by --placement default/best (e.g. 2x8; default: the program's "
                   "own, read from its shardings)")
    p.add_argument("--trace", metavar="FILE", help="write a Chrome/Perfetto trace here")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--hop-latency", type=float_arg("--hop-latency", 0, 1), default=None, metavar="S",
                   help="seconds per link hop (default: the topology's)")
    p.add_argument("--overhead", type=float_arg("--overhead", 0, 1), default=None, metavar="S",
                   help="fixed seconds per collective (default: the hardware profile's, per kind)")
    p.add_argument("--max-iterations", type=int_arg("--max-iterations", 0, 10**6), default=None, metavar="N",
                   help="iterations of a repeated region simulated before steady-state "
                        "extrapolation (default 3; 0 simulates every iteration)")
    p.set_defaults(run=run)


def _coords_from_json(path: str) -> list[tuple[int, ...]]:
    from aoizora.inputs import validate
    from aoizora.errors import UserError

    try:
        data = json.loads(validate.read_text(path, "--placement", "placement JSON file"))
    except json.JSONDecodeError as e:
        raise UserError(f"{path}:{e.lineno}:{e.colno}: placement file is not JSON: {e.msg}") from None
    if isinstance(data, dict):
        for key in ("device_coords", "coords", "choice"):
            if key in data:
                data = data[key]
                if key == "choice" and isinstance(data, dict):
                    data = data.get("device_coords")
                break
    if not isinstance(data, list) or not data or not all(
            isinstance(c, list) and 1 <= len(c) <= 3
            and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in c)
            for c in data):
        raise UserError(f"{path}: expected a list of chip coords [[x, y, z], ...] in mesh order "
                        "(or an object with 'device_coords')")
    return [tuple(c) + (0,) * (3 - len(c)) for c in data]


def _placement(core, args, graph, topo, mesh) -> tuple[str, list[int], list[int] | None]:
    """(name, device_of, mesh shape used or None)."""
    from aoizora.errors import UserError

    how = args.placement
    n = graph.num_partitions
    try:
        if how == "row-major":
            return "row-major", list(range(n)), None
        if how == "default":
            p = core.default_placement(topo, mesh)
            return p.name, list(p.device_of), mesh
        if how == "best":
            best = core.rank_placements(graph, topo, mesh).ranked[0]
            return f"best by Q2: {best.name}", list(best.device_of), mesh
        coords = _coords_from_json(how)
        p = core.placement_from_coords(topo, coords, os.path.basename(how))
        return os.path.basename(how), list(p.device_of), None
    except core.CoreError as e:
        raise UserError(f"--placement {how}: {e}") from None


def _simulate(core, graph, topo, device_of, args):
    """The simulation; its trace, when asked for, written atomically."""
    from aoizora.atomic import Batch

    options = {}
    if args.hop_latency is not None:
        options["hop_latency"] = args.hop_latency
    if args.overhead is not None:
        options["collective_overhead"] = args.overhead
    if args.max_iterations is not None:
        options["max_iterations"] = args.max_iterations
    if not args.trace:
        return core.simulate(graph, topo, device_of, **options)
    out = []
    with Batch() as batch:
        batch.produce(args.trace, lambda tmp: out.append(
            core.simulate(graph, topo, device_of, trace=tmp, **options)))
    return out[0]


def run(args) -> int:
    from aoizora import _core
    from aoizora.compile import compiled_program
    from aoizora.inputs import topology_file, validate
    from aoizora.errors import UserError

    text, graph = compiled_program.load(args.hlo)
    validate.output_files({"--trace": args.trace})
    topo = topology_file.load(args.topology, hardware=args.hardware)
    compiled_program.check_spans(graph.num_partitions, topo)
    mesh = compiled_program.mesh_shape(args.mesh, text, graph.num_partitions)
    unknown = validate.unknown_trip_counts(graph, args.hlo)
    name, device_of, mesh = _placement(_core, args, graph, topo, mesh)
    if len(device_of) != graph.num_partitions:
        raise UserError(f"the placement has {len(device_of)} devices but {args.hlo} was compiled "
                        f"for {graph.num_partitions}")
    try:
        result = _simulate(_core, graph, topo, device_of, args)
    except _core.CoreError as e:
        raise UserError(str(e)) from None
    d = result.to_dict()
    d = {"hlo": args.hlo, "topology": args.topology, "hardware": args.hardware, "placement": name, "mesh_shape": mesh,
         "device_of": device_of, **d, "trace": args.trace, "unknown_trip_count_loops": unknown}
    if args.json:
        json.dump(d, sys.stdout, indent=1)
        print()
        return 0
    _print(d)
    return 0


def _print(d: dict) -> None:
    from aoizora.terminal import echo

    step = d["step_seconds"]
    mesh = "x".join(map(str, d["mesh_shape"])) if d["mesh_shape"] else None
    where = f"placement {d['placement']}" + (f", mesh {mesh}" if mesh else "")
    echo(f"{d['hlo']} on {d['topology']} ({where}), simulated on the model:")
    print(f"  step        {step * 1e3:12.3f} ms")
    print(f"  compute-only{d['compute_bound_seconds'] * 1e3:12.3f} ms  (lower bound)")
    chips = [c for c in d["chips"] if c["chip"] in set(d["device_of"])]
    if chips and step > 0:
        for key in ("compute", "comm", "idle"):
            vals = [c[key] / step * 100 for c in chips]
            print(f"  {key:<8} {min(vals):6.1f}% .. {max(vals):5.1f}% of the step across chips")
    util = d["link_utilization"]
    busy = sorted(range(len(util)), key=lambda i: (-util[i], i))[:5]
    if busy and util[busy[0]] > 0:
        echo("  busiest links: " + ", ".join(f"#{i} {util[i] * 100:.1f}%" for i in busy
                                               if util[i] > 0))
    if d["critical_path"]:
        print("  critical path:")
        for c in d["critical_path"][:8]:
            echo(f"    {c['seconds'] * 1e3:10.3f} ms  {c['kind']:<18} {c['name']}",
                 hang=" " * 20)
    note = " (repeated regions extrapolated from their steady state)" if d["extrapolated"] else ""
    echo(f"  {d['events']} events, {d['flows']} flows, {d['collectives']} collective runs{note}")
    if d.get("trace"):
        echo(f"  trace: {d['trace']}")

"""`aoizora simulate --hlo FILE --topology T [--placement default|best|row-major|FILE]
[--trace FILE] [--json]`: flow-level simulation of a compiled HLO on a TPU slice under one
placement (the C++ simulator, aoizora._core.simulate). Figures are *simulated on a model* of
the hardware, never measured.

A placement FILE is JSON: the chip coords of the logical devices in mesh order
(`[[x, y, z], ...]`, i.e. [d.coords for d in mesh.devices.flat]), or an object with such a
list under "device_coords" or "coords" (a plan.json's "choice" works too).
"""

from __future__ import annotations

import json
import os
import sys


def register(sub) -> None:
    p = sub.add_parser("simulate", help="flow-level simulation of a compiled HLO on a slice")
    p.add_argument("--hlo", required=True, metavar="FILE", help="compiled HLO text file")
    p.add_argument("--topology", required=True, metavar="T",
                   help="a slice such as v5e:4x4, or a topology JSON file")
    p.add_argument("--placement", default="default", metavar="default|best|row-major|FILE",
                   help="JAX's default device order (default), Q2's best, row-major chip order, "
                        "or a JSON file of device coords in mesh order")
    p.add_argument("--mesh", metavar="AxB", help="the logical mesh shape the HLO was compiled "
                   "for (needed by --placement default/best; e.g. 2x8)")
    p.add_argument("--trace", metavar="FILE", help="write a Chrome/Perfetto trace here")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--hop-latency", type=float, default=None, metavar="S",
                   help="seconds per link hop (default: the topology's)")
    p.add_argument("--overhead", type=float, default=None, metavar="S",
                   help="fixed seconds per collective (default 1e-6)")
    p.add_argument("--max-iterations", type=int, default=None, metavar="N",
                   help="iterations of a repeated region simulated before steady-state "
                        "extrapolation (default 3; 0 simulates every iteration)")
    p.set_defaults(run=run)


def _coords_from_json(path: str) -> list[tuple[int, ...]]:
    from aoizora.errors import UserError

    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise UserError(f"cannot read placement file {path}: {e.strerror}") from None
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
            isinstance(c, list) and 1 <= len(c) <= 3 and all(isinstance(x, int) for x in c)
            for c in data):
        raise UserError(f"{path}: expected a list of chip coords [[x, y, z], ...] in mesh order "
                        "(or an object with 'device_coords')")
    return [tuple(c) + (0,) * (3 - len(c)) for c in data]


def _grid_dims(topology: str) -> tuple[int, int, int] | None:
    """(x, y, z) chips of a catalog name such as v5e:4x4; None for a JSON file."""
    if os.path.exists(topology) or ":" not in topology:
        return None
    from aoizora.tpu import split_name

    dims = split_name(topology)[1]
    return tuple(dims) + (1,) * (3 - len(dims))


def _chip_of_coords(core, topology: str, coords) -> list[int]:
    """Chip ids of device coords (x fastest, as topo::Topology numbers its chips)."""
    from aoizora.errors import UserError

    if hasattr(core, "placement_from_coords") and hasattr(core, "make_topology"):
        try:
            return list(core.placement_from_coords(core.make_topology(topology), coords).chip_of)
        except core.CoreError as e:
            raise UserError(str(e)) from None
    dims = _grid_dims(topology)
    if dims is None:
        raise UserError("coords placements on topology files need the topology bindings")
    out = []
    for c in coords:
        if any(not 0 <= c[d] < dims[d] for d in range(3)):
            raise UserError(f"chip coords {list(c)} are outside {topology}")
        out.append(c[0] + dims[0] * (c[1] + dims[1] * c[2]))
    if len(set(out)) != len(out):
        raise UserError("the placement names a chip twice")
    return out


def _placement(core, args, graph) -> tuple[str, list[int]]:
    from aoizora.errors import UserError

    how = args.placement
    n = graph.num_partitions
    if how == "row-major":
        return "row-major", list(range(n))
    if how in ("default", "best"):
        mesh = [int(x) for x in args.mesh.split("x")] if args.mesh else [n]
        fn = getattr(core, "default_placement" if how == "default" else "rank_placements", None)
        if fn is None:
            raise UserError(f"--placement {how} needs aoizora._core."
                            f"{'default_placement' if how == 'default' else 'rank_placements'}, "
                            "which this build lacks: use --placement row-major or FILE")
        topo = core.make_topology(args.topology)
        try:
            if how == "default":
                p = fn(topo, mesh)
            else:
                p = fn(graph, topo)[0]
        except core.CoreError as e:
            raise UserError(str(e)) from None
        chip_of = list(getattr(p, "chip_of", p))
        return getattr(p, "name", how), chip_of
    return os.path.basename(how), _chip_of_coords(core, args.topology, _coords_from_json(how))


def run(args) -> int:
    from aoizora import _core
    from aoizora.errors import UserError

    try:
        graph = _core.load_hlo_file(args.hlo)
    except _core.CoreError as e:
        raise UserError(str(e)) from None
    name, chip_of = _placement(_core, args, graph)
    if len(chip_of) != graph.num_partitions:
        raise UserError(f"the placement has {len(chip_of)} devices but {args.hlo} was compiled "
                        f"for {graph.num_partitions}")
    options = {}
    if args.hop_latency is not None:
        options["hop_latency"] = args.hop_latency
    if args.overhead is not None:
        options["collective_overhead"] = args.overhead
    if args.max_iterations is not None:
        options["max_iterations"] = args.max_iterations
    if args.trace:
        options["trace"] = args.trace
    try:
        result = _core.simulate(graph, args.topology, chip_of, **options)
    except _core.CoreError as e:
        raise UserError(str(e)) from None
    d = result.to_dict()
    d = {"hlo": args.hlo, "topology": args.topology, "placement": name, "chip_of": chip_of,
         **d, "trace": args.trace}
    if args.json:
        json.dump(d, sys.stdout, indent=1)
        print()
        return 0
    _print(d)
    return 0


def _print(d: dict) -> None:
    step = d["step_seconds"]
    print(f"{d['hlo']} on {d['topology']} (placement {d['placement']}), simulated on the model:")
    print(f"  step        {step * 1e3:12.3f} ms")
    print(f"  compute-only{d['compute_bound_seconds'] * 1e3:12.3f} ms  (lower bound)")
    chips = [c for c in d["chips"] if c["chip"] in set(d["chip_of"])]
    if chips and step > 0:
        for key in ("compute", "comm", "idle"):
            vals = [c[key] / step * 100 for c in chips]
            print(f"  {key:<8} {min(vals):6.1f}% .. {max(vals):5.1f}% of the step across chips")
    util = d["link_utilization"]
    busy = sorted(range(len(util)), key=lambda i: (-util[i], i))[:5]
    if busy and util[busy[0]] > 0:
        print("  busiest links: " + ", ".join(f"#{i} {util[i] * 100:.1f}%" for i in busy
                                               if util[i] > 0))
    if d["critical_path"]:
        print("  critical path:")
        for c in d["critical_path"][:8]:
            print(f"    {c['seconds'] * 1e3:10.3f} ms  {c['kind']:<18} {c['name']}")
    note = " (repeated regions extrapolated from their steady state)" if d["extrapolated"] else ""
    print(f"  {d['events']} events, {d['flows']} flows, {d['collectives']} collective runs{note}")
    if d.get("trace"):
        print(f"  trace: {d['trace']}")

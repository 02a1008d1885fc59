"""`aoizora topology T [--hardware FILE] [--json] [--links]`: chips, links, wraparound and per-chip figures of a
catalog slice (v5e:2x4, v5p:4x4x4, ...) or a topology JSON file, and which of the profile's
figures are fitted, derived or nominal (field_basis.py); `aoizora topology --list`
lists the catalog: each slice's chips, JAX devices (TPU7x: two per chip) and whether libtpu
compiles for it deviceless (compile_target.compile_target_for, the planner's own test; read
from the generation table, nothing is compiled)."""

from __future__ import annotations

import json

from aoizora.hardware import field_basis, hardware_file


def register(sub) -> None:
    p = sub.add_parser("topology", help="chips, links, wraparound and bandwidths of a slice")
    p.add_argument("topology", nargs="?", metavar="T",
                   help="a slice such as v5e:4x4, or a topology JSON file")
    hardware_file.add_argument(p)
    p.add_argument("--json", action="store_true", help="print everything as JSON")
    p.add_argument("--links", action="store_true", help="list every directed link")
    p.add_argument("--list", action="store_true",
                   help="list the catalog's slices: chips, devices, deviceless TPU compile")
    p.set_defaults(run=run)


def _fmt(x: float, unit: str) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.4g} {prefix}{unit}"
    return f"{x:.4g} {unit}"


def _figures_from(hardware: str | None, generation: str) -> str:
    if hardware:
        return f"hardware profile {hardware}"
    if generation == "custom":
        return "the topology file's spec"
    return f"the shipped {generation} profile (profiles/{generation}.json)"


def _catalog_row(topo) -> dict:
    """name, chips, devices, deviceless (bool) and why_not ("" when it compiles)."""
    from aoizora.compile.compile_target import compile_target_for
    from aoizora.errors import UserError

    try:
        compile_target_for(topo)
        why_not = ""
    except UserError as e:
        why_not = str(e)
    return {"name": topo.name, "chips": topo.num_chips, "devices": topo.num_devices,
            "deviceless": not why_not, "why_not": why_not}


def run(args) -> int:
    from aoizora import _core
    from aoizora.inputs import topology_file
    from aoizora.errors import UserError

    if args.list and args.topology:
        raise UserError(f"--list lists the whole catalog: leave out {args.topology!r}, or "
                        "leave out --list to describe it")
    if args.list:
        rows = [_catalog_row(_core.make_topology(n)) for n in _core.catalog_names()]
        if args.json:
            print(json.dumps(rows, indent=1))
            return 0
        from aoizora.terminal import echo

        print(f"{'slice':16} {'chips':>6} {'devices':>8}  deviceless TPU compile (libtpu)")
        for r in rows:
            echo(f"{r['name']:16} {r['chips']:>6} {r['devices']:>8}  "
                 + ("yes" if r["deviceless"] else f"no: {r['why_not']}"), hang=" " * 34)
        return 0
    if not args.topology:
        raise UserError("name a topology (e.g. v5e:4x4) or pass --list")
    topo = topology_file.load(args.topology, "topology", hardware=args.hardware)
    if args.json:
        print(json.dumps({**topo.to_dict(), "hardware": args.hardware,
                          "hardware_basis": field_basis.of_profile(topo.spec["generation"],
                                                                   args.hardware)},
                         indent=1))
        return 0
    from aoizora.terminal import echo

    s = topo.spec
    dims = "x".join(str(d) for d in topo.dims)
    wrap = ", ".join(a for a, w in zip("xyz", topo.wrap) if w) or "none"
    cores = topo.cores_per_chip
    devices = f", {topo.num_devices} devices ({cores} TensorCores per chip)" if cores > 1 else ""
    echo(f"{topo.name}: {topo.num_chips} chips ({dims}){devices}, {topo.num_links} directed "
         f"links, wraparound: {wrap}")
    echo(f"  chip: {s['device_kind'] or s['generation']}, {_fmt(s['peak_flops'], 'FLOP/s')} bf16, "
         f"HBM {_fmt(s['hbm_bytes'], 'B')} at {_fmt(s['hbm_bandwidth'], 'B/s')}, "
         f"MXU {s['mxu_size']}x{s['mxu_size']} at {100 * s['mxu_efficiency']:.4g} % of its peak")
    echo(f"  link: {_fmt(s['link_bandwidth'], 'B/s')} one way, {s['hop_latency'] * 1e6:.3g} us per hop")
    if s["intra_chip_link"]:
        icl = s["intra_chip_link"]
        echo(f"  between the cores of a chip: {_fmt(icl['bandwidth'], 'B/s')} one way, "
              f"{icl['latency'] * 1e6:.3g} us; both cores share the chip's ICI links")
    echo(f"  figures: {_figures_from(args.hardware, s['generation'])}")
    echo(f"  basis: {field_basis.sentence(field_basis.of_profile(s['generation'], args.hardware))}")
    echo("  routing: " + ("dimension order (x, y, z), the shorter way round a wrapped axis"
                          if topo.is_grid else "fewest hops"))
    if topo.num_chips <= 64:
        echo("  chips (id: x,y,z): " + "  ".join(
            f"{i}:{','.join(map(str, c))}" for i, c in enumerate(topo.chips)))
    if cores > 1 and topo.num_devices <= 64:
        echo("  devices (id: x,y,z,core): " + "  ".join(
            f"{i}:{','.join(map(str, c))}" for i, c in enumerate(topo.devices)))
    if args.links:
        for l in topo.links:
            echo(f"  link {l['id']}: {l['src']} -> {l['dst']}  axis {'xyzc'[l['dim']] if l['dim'] >= 0 else '-'}"
                 f"{'+' if l['dir'] > 0 else '-'}{'  (wraparound)' if l['wraparound'] else ''}  "
                 f"{_fmt(l['bandwidth'], 'B/s')}")
    return 0

"""`aoizora inspect --hlo FILE [--json]`: the collective graph and compute totals of a
compiled HLO (an XLA dump or `compiled.as_text()`), as the C++ front end reads it."""

from __future__ import annotations

import json
import sys


def register(sub) -> None:
    p = sub.add_parser("inspect", help="collectives and compute totals of a compiled HLO")
    p.add_argument("--hlo", required=True, metavar="FILE", help="compiled HLO text file")
    p.add_argument("--json", action="store_true", help="print the graph summary as JSON")
    p.set_defaults(run=run)


def summarize(graph) -> dict:
    """A plain-data summary of an `aoizora._core.CollectiveGraph`."""
    regions = []
    for r in graph.regions:
        regions.append({"name": r.name, "repeat": r.repeat, "ops": len(r.ops),
                        "flops": r.flops, "trip_count_known": r.trip_count_known})
    collectives = []
    for c in graph.collectives:
        ops = graph.regions[c.region].ops
        # A collective completed in a later region (across a nested loop) overlaps the rest of its own.
        end = c.done_op if c.done_region < 0 else len(ops)
        window = [ops[i].name for i in range(c.start_op + 1, end)]
        collectives.append({
            "kind": c.kind, "name": c.name, "opcode": c.opcode, "groups": c.groups,
            "source_target_pairs": [list(p) for p in c.source_target_pairs],
            "operand_bytes": c.operand_bytes, "result_bytes": c.result_bytes,
            "async": c.async_, "repeat": c.repeat, "region": c.region,
            "overlapped_ops": window,
            "overlapped_flops": sum(ops[i].flops for i in range(c.start_op + 1, end)),
        })
    return {
        "num_partitions": graph.num_partitions,
        "replica_count": graph.replica_count,
        "device_count_source": graph.device_count_source,
        "total_flops": graph.total_flops,
        "static_flops": graph.static_flops,
        "total_bytes": graph.total_bytes,
        "collective_bytes_by_kind": graph.collective_bytes_by_kind(),
        "loops": [{"name": lp.name, "trip_count": lp.trip_count,
                   "trip_count_known": lp.trip_count_known, "parent": lp.parent,
                   "regions": [lp.first_region, lp.last_region]} for lp in graph.loops],
        "regions": regions,
        "collectives": collectives,
    }


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n}"


def _groups(c: dict) -> str:
    if c["source_target_pairs"]:
        pairs = c["source_target_pairs"]
        text = " ".join(f"{a}->{b}" for a, b in pairs[:8])
        return text + (f" and {len(pairs) - 8} more pairs" if len(pairs) > 8 else "")
    g = c["groups"]
    text = " ".join("{" + ",".join(map(str, grp)) + "}" for grp in g[:4])
    return text + (f" and {len(g) - 4} more groups" if len(g) > 4 else "")


def run(args) -> int:
    from aoizora import _core
    from aoizora.inputs import validate
    from aoizora.errors import UserError

    validate.hlo_text(args.hlo)
    try:
        graph = _core.load_hlo_file(args.hlo)
    except _core.CoreError as e:
        raise UserError(f"cannot read the HLO: {e}") from None
    summary = summarize(graph)
    if args.json:
        json.dump(summary, sys.stdout, indent=1)
        print()
        return 0
    from aoizora.terminal import echo

    out = sys.stdout
    echo(f"{args.hlo}: {summary['num_partitions']} partitions, "
         f"{len(summary['collectives'])} collectives, {len(summary['regions'])} regions",
         file=out)
    if summary["device_count_source"] != "header":
        echo(f"  device count {summary['device_count_source']}: {summary['replica_count']} "
             f"replica(s) x {summary['num_partitions']} partition(s) (the HLO header does not "
             f"give them)", file=out)
    print(f"  FLOPs per device: {summary['total_flops']:.4g} per run "
          f"({summary['static_flops']:.4g} with loop bodies once)", file=out)
    print(f"  HBM bytes per device: {_bytes(summary['total_bytes'])}", file=out)
    for r in summary["regions"]:
        known = "" if r["trip_count_known"] else " (trip count unknown)"
        echo(f"  region {r['name']}: x{r['repeat']}{known}, {r['ops']} ops, "
             f"{r['flops']:.4g} FLOPs", file=out)
    print("  collectives:", file=out)
    # Two lines each: the name and what it moves, then its groups (a long list wraps
    # beneath, never past the terminal's width).
    for c in summary["collectives"]:
        mode = "async" if c["async"] else "sync"
        overlap = f", overlaps {len(c['overlapped_ops'])} ops" if c["async"] else ""
        echo(f"    {c['kind']:<18} {c['name']}: {_bytes(c['operand_bytes'])} -> "
             f"{_bytes(c['result_bytes'])} x{c['repeat']} {mode}{overlap}", file=out,
             hang=" " * 8)
        echo(f"      {'pairs' if c['source_target_pairs'] else 'groups'}: {_groups(c)}",
             file=out, hang=" " * 8)
    print("  collective bytes by kind (operand bytes x repeat):", file=out)
    for kind, n in sorted(summary["collective_bytes_by_kind"].items()):
        print(f"    {kind:<20} {_bytes(n)}", file=out)
    return 0

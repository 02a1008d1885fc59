"""`aoizora measure`, for the user who has a TPU:

    aoizora measure collectives -o m.json [--platform tpu|cpu] [--devices N] [--kinds ...]
        [--sizes 1KiB..64MiB] [--repeats R] [--json]
    aoizora measure plan plan.json [--platform tpu|cpu] [--repeats R] [--trace DIR] [--json]

`collectives` times each collective kind on each group shape of the local slice and writes
the measurements file `aoizora calibrate` fits a profile to; `plan` runs a plan's forward
step and each of its baselines with random weights and sets the measured time beside the
simulated one. With --platform cpu the same code runs on CPU devices: a check of the harness,
not a TPU measurement, and the output says so (docs/hardware-profiles.md).
"""

from __future__ import annotations

import json


def register(sub) -> None:
    from aoizora.hardware.measurements import KINDS
    from aoizora.inputs.validate import int_arg

    p = sub.add_parser("measure", help="time collectives or a plan on this machine's devices "
                                       "(a TPU; CPU devices as a harness check)")
    what = p.add_subparsers(dest="what", metavar="WHAT", required=True)
    c = what.add_parser("collectives", help="time each collective on each group shape of the "
                                            "local slice; writes what `aoizora calibrate` reads")
    c.add_argument("-o", "--out", required=True, metavar="FILE",
                   help="where to write the measurements (aoizora.measurements/1)")
    c.add_argument("--devices", type=int_arg("--devices", 1, 4096), default=None,
                   help="devices to use (CPU: 4, 8, 16, 32 or 64, default 8; TPU: the slice)")
    c.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS), metavar="KIND",
                   help=f"collectives to time (default all: {', '.join(KINDS)})")
    c.add_argument("--sizes", default=None,
                   help="bytes per device: a range of powers of 4 such as 1KiB..64MiB, or a "
                        "list such as 1KiB,16MiB (default 1KiB..64MiB on a TPU, 1KiB..4MiB on "
                        "CPU)")
    c.set_defaults(run=run_collectives, repeats_default=10)
    pl = what.add_parser("plan", help="run a plan's forward step and each baseline with random "
                                      "weights: measured beside simulated")
    pl.add_argument("plan", metavar="PLAN", help="a plan.json written by `aoizora plan`")
    pl.add_argument("--trace", metavar="DIR", default=None,
                    help="write a jax.profiler (XProf) trace of the run into this folder")
    pl.set_defaults(run=run_plan, repeats_default=5)
    for q in (c, pl):
        q.add_argument("--platform", choices=("tpu", "cpu"), default="tpu",
                       help="the devices: this machine's TPU (default), or CPU devices (a "
                            "harness check, not a TPU measurement)")
        q.add_argument("--repeats", type=int_arg("--repeats", 1, 100_000), default=None,
                       help="timed calls after one warm-up; the median is reported "
                            f"(default {q.get_default('repeats_default')})")
        q.add_argument("--json", action="store_true", help="print the result as JSON")
        q.add_argument("--quiet", action="store_true", help="no progress display")


def _progress(args):
    from aoizora.progress import RichProgress

    return RichProgress(enabled=not args.quiet)


def run_collectives(args) -> int:
    from aoizora.inputs import validate
    from aoizora.measure import platform, sizes

    validate.output_files({"-o": args.out})
    size_list = sizes.parse_sizes(args.sizes or (sizes.DEFAULT_TPU if args.platform == "tpu"
                                                 else sizes.DEFAULT_CPU))
    platform.prepare(args.platform, args.devices)
    from aoizora.atomic import write_atomic
    from aoizora.measure import collectives

    with _progress(args) as progress:
        doc = collectives.measure(args.platform, args.devices, list(dict.fromkeys(args.kinds)),
                                  size_list, args.repeats or args.repeats_default, progress)
    write_atomic(args.out, json.dumps(doc, indent=1) + "\n")
    if args.json:
        print(json.dumps({"out": args.out, **doc}, indent=1))
    else:
        print_collectives(doc, args.out)
    return 0


def _us(s: float) -> str:
    return f"{s * 1e6:10.1f}"


def print_collectives(doc: dict, out: str) -> None:
    from aoizora.measure.sizes import fmt

    prov = doc["provenance"]
    print(f"measured on {prov['measured_on']}; jax {prov['jax']}, jaxlib {prov['jaxlib']}, "
          f"libtpu {prov['libtpu'] or '-'}; {prov['date']}")
    if prov["platform"] != "tpu":
        print("CPU timings are a harness check, not a TPU measurement: do not fit a TPU "
              "profile to them")
    print(f"median over {prov['repeats']} calls after a warm-up, dispatch included (an "
          f"elementwise call: {prov['dispatch_floor_s'] * 1e6:.1f} us)")
    print(f"\n{'kind':19} {'group':7} {'bytes/dev':>9} {'median us':>10} {'min us':>10} "
          f"{'max us':>10}")
    for p in doc["points"]:
        print(f"{p['kind']:19} {p['group']['name']:7} {fmt(p['bytes_per_device']):>9} "
              f"{_us(p['seconds'])} {_us(p['min_seconds'])} {_us(p['max_seconds'])}")
    for s in doc["skipped"]:
        print(f"skipped {s['id']}: {s['why']}")
    print(f"wrote {out} ({len(doc['points'])} points; `{calibrate_command(out, prov)}` fits "
          "a profile to them" + (", marked a harness check" if prov["platform"] != "tpu"
                                 else "") + ")")


def calibrate_command(out: str, provenance: dict) -> str:
    """The `aoizora calibrate` command line that fits the measurements file `out`: calibrate
    wants -o, and refuses CPU timings unless --harness-check."""
    import shlex

    return (f"aoizora calibrate {shlex.quote(out)} -o profile.json"
            + (" --harness-check" if provenance["platform"] != "tpu" else ""))


def run_plan(args) -> int:
    from aoizora import plan_schema
    from aoizora.inputs import validate
    from aoizora.measure import platform

    plan = plan_schema.load(args.plan, "PLAN")
    if args.trace:
        validate.output_folder(args.trace, "--trace")
    need = len(plan.choice.device_coords)
    platform.prepare(args.platform, need)
    devs = platform.devices(args.platform, need,
                            f"the plan ({plan.topology.get('name', '?')}, {need} devices)")
    from aoizora.measure import plan_run

    repeats = args.repeats or args.repeats_default
    with _progress(args) as progress:
        result = plan_run.run(plan, args.platform, devs, repeats, args.trace, progress)
    report = {
        "plan": args.plan, "model": plan.model.get("name"), "workload": plan.workload_text(),
        "topology": plan.topology.get("name"), "generation": plan.topology.get("generation"),
        "repeats": repeats, "trace": args.trace,
        "provenance": platform.provenance(args.platform, devs[:need],
                                          plan.topology.get("name", "?")),
        "kernel_substitutions": result.substitutions, "notes": result.notes,
        "rows": [r.to_dict() for r in result.rows]}
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print_plan_report(report)
    return 0


def _ms(s) -> str:
    return "-" if s is None else f"{s * 1e3:.3f}"


def print_plan_report(report: dict) -> None:
    """The table of `measure plan`: each pair measured beside simulated, then what ran
    instead of the plan, notes, and where the trace went."""
    from rich.console import Console
    from rich.table import Table

    prov = report["provenance"]
    t = Table(title=f"{report['model']}, {report['workload']} on {report['topology']}: "
                    f"measured on {prov['measured_on']}; simulated on the "
                    f"{report['generation']} model")
    for col in ("", "sharding", "placement", "kernel run", "simulated ms", "measured ms",
                "measured / simulated", "compile s"):
        t.add_column(col)
    for r in report["rows"]:
        ratio = r["measured_over_simulated"]
        t.add_row(r["label"], r["candidate"], r["placement"], r["kernel"],
                  _ms(r["simulated_s"]), "failed" if r["error"] else _ms(r["measured_s"]),
                  "-" if ratio is None else f"{ratio:.2f}",
                  "-" if r["compile_s"] is None else f"{r['compile_s']:.1f}")
    Console(width=160).print(t)
    print(f"measured: median of {report['repeats']} calls after a warm-up, random weights; "
          f"jax {prov['jax']}, jaxlib {prov['jaxlib']}, libtpu {prov['libtpu'] or '-'}")
    if prov["platform"] != "tpu":
        print("CPU timings are a harness check, not a TPU measurement: they time XLA's CPU "
              "runtime, not the chips the plan was simulated on")
    for s in report["kernel_substitutions"]:
        print(f"substituted: {s}")
    for n in report["notes"]:
        print(f"note: {n}")
    for r in report["rows"]:
        if r["same_run_as"]:
            print(f"{r['label']}: the same program on the same devices as "
                  f"{r['same_run_as']}, run once")
        if r["error"]:
            print(f"{r['label']} failed: {r['error']}")
    if report["trace"]:
        print(f"wrote an XProf trace to {report['trace']} (open it with xprof, or "
              "TensorBoard's profile plugin)")

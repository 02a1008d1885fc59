"""`aoizora serve --model M --video V --frames F --topology T[,T2...] [--latency-bound S]
[--objective throughput|cost] [--prices FILE] [--batch B[,B2...]] [--steps N] [--json]`: the
frontier of latency per video against videos per hour and cost per video over the splits of
each slice into replicas, each replica shape planned by the planner (serving/survey.py;
docs/serving.md). With --latency-bound or --objective, the pick: the split that serves the
most videos per hour (or, --objective cost, the cheapest per video) within the bound (any
latency without one), and why.

Under load (`--rate R/h [--p99 S] [--arrivals poisson|FILE.csv] [--batch-wait T] [--requests
N] [--warmup W] [--seed K] [--load-chart PNG]`): every split and batch fed one stream of
requests through the queue simulator (serving/load.py): capacity, utilisation, p50/p90/p99
latency, cost per video at that rate, and with --p99 the cheapest configuration within it.

Exit 0; 1 when no split meets the latency bound or no configuration the p99 bound (the
tables are still printed); 2 on bad input, before any work."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

from aoizora.commands.plan import DEFAULTS as PLAN_DEFAULTS

# As `plan`'s: the same command line without --topology plans the same slice.
DEFAULTS = {"model": PLAN_DEFAULTS["model"], "video": PLAN_DEFAULTS["video"],
            "topology": PLAN_DEFAULTS["topology"]}


def register(sub) -> None:
    from aoizora.compile import executor
    from aoizora.inputs.validate import float_arg, int_arg

    p = sub.add_parser("serve", help="latency against throughput and cost over the ways to "
                                     "split a slice into replicas")
    p.add_argument("--model", default=DEFAULTS["model"],
                   help=f"model preset (default {DEFAULTS['model']})")
    p.add_argument("--video", help=f"480p, 720p or tiny (default {DEFAULTS['video']}, or the "
                                   "model's own size)")
    p.add_argument("--frames", type=int_arg("--frames", 1, 100_001),
                   help="4k+1 frames such as 21 or 81 (default 21; tiny has 9)")
    p.add_argument("--topology", default=DEFAULTS["topology"], metavar="T[,T2...]",
                   help="catalog slices to split, comma-separated (default "
                        f"{DEFAULTS['topology']}), e.g. v5e:4x4,v6e:2x4,tpu7x:2x2x2")
    p.add_argument("--batch", default="1", metavar="B[,B2...]",
                   help="videos per replica call, each batch planned as its own replica "
                        "plan (aoizora plan --batch B); under load, batch B is simulated "
                        "only with every size 1..B given (default 1)")
    p.add_argument("--steps", type=int_arg("--steps", 1, 10_000), default=30,
                   help="denoising steps, where a plan has no seconds per video (default 30)")
    p.add_argument("--latency-bound", type=float_arg("--latency-bound", 1e-9), metavar="S",
                   help="pick the best split within S seconds per video")
    p.add_argument("--objective", choices=("throughput", "cost"), default=None,
                   help="what the pick maximises within the bound (without --latency-bound, "
                        "over every split): videos per hour (default) or the lowest cost "
                        "per video; either --objective or --latency-bound asks for a pick")
    p.add_argument("--prices", metavar="FILE",
                   help="a price table replacing the shipped one (serving/prices.json)")
    p.add_argument("--top-k", type=int_arg("--top-k", 1, 1000), default=None,
                   help="shardings Stage 1 keeps per replica plan (default: from recall)")
    p.add_argument("--workers", type=int_arg("--workers", 1, 256), default=None,
                   help="local compile processes, 1 to 256 (default: one per two cores)")
    executor.add_argument(p)
    p.add_argument("--compile-target", choices=("tpu", "cpu"), default="tpu",
                   help="compile for each replica's TPU via libtpu (default), or CPU devices")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    p.add_argument("--json", action="store_true", help="print the rows and the pick as JSON")
    p.add_argument("--chart", metavar="PNG",
                   help="also draw the frontiers of every slice on one chart (matplotlib)")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    _register_load(p)
    p.set_defaults(run=run)


def _register_load(p) -> None:
    """The options of serving under load (serving/load.py, queue_sim.py)."""
    from aoizora.inputs.validate import float_arg, int_arg
    from aoizora.serving import load

    p.add_argument("--rate", metavar="R/h",
                   help="simulate every split serving R requests per hour (also R/min, R/s): "
                        "capacity, utilisation, p50/p90/p99 latency, cost per video")
    p.add_argument("--p99", type=float_arg("--p99", 1e-9), metavar="S",
                   help="pick the cheapest configuration whose simulated p99 latency is at "
                        "most S seconds at --rate")
    p.add_argument("--arrivals", default="poisson", metavar="poisson|FILE.csv",
                   help="Poisson arrivals at --rate (default), or a CSV of arrival times in "
                        "seconds, one a line (the trace sets the rate)")
    p.add_argument("--batch-wait", type=float_arg("--batch-wait", 0.0, 1e9), default=0.0,
                   metavar="T", help="seconds a batch waits to fill (default 0: serve what "
                                     "is queued at once)")
    p.add_argument("--requests", type=int_arg("--requests", 100, 10_000_000), default=None,
                   help=f"requests simulated (default {load.REQUESTS:,}; a trace: all of "
                        "its lines)")
    p.add_argument("--warmup", type=int_arg("--warmup", 0, 10_000_000), default=None,
                   help="first requests served and not measured (default a tenth)")
    p.add_argument("--seed", type=int_arg("--seed", 0, 2**63 - 1), default=0,
                   help="seed of the Poisson arrivals (default 0)")
    p.add_argument("--load-chart", metavar="PNG",
                   help="draw simulated p99 latency against the rate, per configuration")


def load_of(args):
    """The stream under load (load.Load) the options ask for, or None without --rate or a
    trace; checked before any work (UserError, one line)."""
    from aoizora.errors import UserError
    from aoizora.serving import load

    if args.arrivals == "poisson" and args.rate is None:
        for flag, given in (("--p99", args.p99), ("--load-chart", args.load_chart),
                            ("--requests", args.requests), ("--warmup", args.warmup)):
            if given is not None:
                raise UserError(f"{flag} needs --rate R/h (or --arrivals FILE.csv)")
        return None
    return load.stream(args.rate, args.arrivals, args.requests, args.warmup, args.seed,
                       args.batch_wait)


def request_of(args):
    """The survey's Request from the command line, checked (UserError, one line)."""
    from aoizora.errors import UserError
    from aoizora.models import default_video
    from aoizora.serving import prices
    from aoizora.serving.survey import Request

    try:
        batches = tuple(int(b) for b in args.batch.split(","))
    except ValueError:
        raise UserError(f"--batch {args.batch!r}: expected whole numbers such as 1 or "
                        "1,2,4") from None
    video = args.video or default_video(args.model, DEFAULTS["video"])
    topologies = tuple(t.strip() for t in args.topology.split(",") if t.strip())
    return Request(args.model, video, args.frames, topologies, prices.load(args.prices),
                   batches, args.steps)


def check_cost(request, by_slice) -> None:
    """--objective cost needs a price for a generation it can pick from: UserError if none
    of the slices' generations has one."""
    from aoizora.errors import UserError

    gens = list(dict.fromkeys(ss[0].generation for ss in by_slice.values()))
    if not any(request.prices.usd_per_chip_hour(g) is not None for g in gens):
        raise UserError(f"--objective cost: the price table {request.prices.path} has no "
                        f"price for {', '.join(gens)} ({request.prices.why_missing(gens[0])})")


def run(args) -> int:
    from aoizora.compile import executor
    from aoizora.compile.cache import Cache
    from aoizora.planning.planner import Settings
    from aoizora.serving import frontier, survey

    from aoizora.inputs import validate

    request = request_of(args)
    validate.output_files({"--chart": args.chart, "--load-chart": args.load_chart})
    stream = load_of(args)
    by_slice = survey.check(request)
    wants_pick = args.latency_bound is not None or args.objective is not None
    objective = args.objective or "throughput"
    if objective == "cost":
        check_cost(request, by_slice)
    jobs_on = executor.from_args(args)
    try:
        settings = Settings(top_k=args.top_k, workers=args.workers,
                            cache=None if args.no_cache else Cache(),
                            compile_target=args.compile_target, executor=jobs_on)
        result = survey.survey(request, settings, progress_for=_progress(args),
                               log=(lambda text: None) if args.quiet else log)
    finally:
        jobs_on.close()
    chosen = (frontier.pick(result.rows, args.latency_bound, objective) if wants_pick
              else None)
    if args.chart:
        from aoizora.serving import chart

        chart.draw(result.rows, args.chart, f"serve {request.model}, {request.video}"
                   + (f", {request.frames} frames" if request.frames else ""))
        log(f"wrote {args.chart}")
    under = _under_load(result, request, stream, args)
    if args.json:
        doc = as_json(result, chosen, args)
        if under is not None:
            from aoizora.serving import load

            doc["load"] = load.as_json(stream, *under, args.p99)
        print(json.dumps(doc, indent=1))
    else:
        print_survey(result, request, chosen, args)
        if under is not None:
            _print_load(stream, *under, args.p99)
    picks = [chosen] + ([under[1]] if under is not None else [])
    return 1 if any(p is not None and p.row is None for p in picks) else 0


def _under_load(result, request, stream, args):
    """(load rows, the pick under --p99 or None) of the survey's rows serving `stream`, and
    the load chart where asked; None without a stream."""
    if stream is None:
        return None
    from aoizora.serving import load

    rows = load.under_load(result.rows, stream, request.prices)
    chosen = None if args.p99 is None else load.pick(rows, args.p99)
    if args.load_chart:
        from aoizora.serving import load_chart

        load_chart.draw(result.rows, stream, request.prices, args.load_chart,
                        f"serve {request.model}, {request.video} under load", args.p99)
        log(f"wrote {args.load_chart}")
    return rows, chosen


def _print_load(stream, rows, chosen, bound_s, out=None) -> None:
    from rich.console import Console

    from aoizora import terminal
    from aoizora.serving import load_table

    out = out or sys.stdout
    console = Console(file=out, width=terminal.width(out))
    print("", file=out)
    for line in load_table.lines(rows, stream, chosen, bound_s, console):
        print(line, file=out)


def log(text: str) -> None:
    print(f"serve: {text}", file=sys.stderr, flush=True)


def _progress(args):
    from aoizora.progress import RichProgress

    return lambda shape: RichProgress(enabled=not args.quiet)


def as_json(result, chosen, args) -> dict:
    from aoizora.serving import frontier

    on = {k: [r.split + " on " + r.topology for r in frontier.frontier(result.rows, k)]
          for k in frontier.OBJECTIVES}
    return {"rows": [asdict(r) for r in result.rows], "frontier": on,
            "replicas": {k: asdict(v) for k, v in result.replicas.items()},
            "pick": None if chosen is None else {
                "bound_s": args.latency_bound, "objective": args.objective or "throughput",
                "row": None if chosen.row is None else asdict(chosen.row), "why": chosen.why},
            "notes": result.notes,
            "note": "latencies simulated on the model of each chip; none is measured"}


# The table's columns, in order; a column in _BENEATH leaves the table for lines beneath it
# where the terminal is too narrow to hold every word whole, the first one first.
_COLUMNS = ("slice", "split", "chips", "replica plan", "replicas", "s / video\n[90 %]",
            "videos\nper hour", "USD /\nvideo", "frontier")
_RIGHT = ("chips", "s / video\n[90 %]", "videos\nper hour", "USD /\nvideo")
_BENEATH = ("replica plan", "frontier", "replicas")


def _cells(r, on: list[str]) -> dict[str, str]:
    from aoizora.terminal import whole

    return {"slice": r.topology,
            "split": r.split + (f", batch {r.batch}" if r.batch != 1 else ""),
            "chips": str(r.chips), "replica plan": r.plan or r.why_not,
            # the same, each name whole where it goes beneath the table
            "replica plan beneath": " @ ".join(map(whole, r.plan.split(" @ "))) or r.why_not,
            "replicas": r.pricing.partition(":")[0] or "-",
            "s / video\n[90 %]": _num(r.latency_s, ".4g") + (
                "" if r.latency_interval_s is None else
                " [{:.3g}-{:.3g}]".format(*r.latency_interval_s)),
            "videos\nper hour": _num(r.videos_per_hour, ",.1f"),
            "USD /\nvideo": _num(r.usd_per_video, ".3g"), "frontier": ", ".join(on) or "-"}


def _table(title: str, cells: list[dict[str, str]], columns):
    from rich import box
    from rich.table import Table
    from rich.text import Text

    t = Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for col in columns:
        t.add_column(col, justify="right" if col in _RIGHT else "left")
    for c in cells:
        t.add_row(*(Text(c[col]) for col in columns))
    return t


def print_survey(result, request, chosen, args, out=None) -> None:
    """The rows at the terminal's width (terminal.py), every figure and name whole: the
    columns that do not fit listed beneath, a line a row; the notes and the pick."""
    from rich.console import Console

    from aoizora import terminal
    from aoizora.serving import frontier

    out = out or sys.stdout
    console = Console(file=out, width=terminal.width(out))
    marks = {k: {id(r) for r in frontier.frontier(result.rows, k)} for k in frontier.OBJECTIVES}
    cells = [_cells(r, [k for k in frontier.OBJECTIVES if id(r) in marks[k]])
             for r in result.rows]
    frames = f", {request.frames} frames" if request.frames else ""
    title = (f"serve {request.model}, {request.video}{frames}: latency per video against "
             "videos per hour and cost (simulated)")
    table, beneath, _ = terminal.fit_columns(lambda cols: _table(title, cells, cols),
                                             _COLUMNS, _BENEATH, console)
    console.print(table)
    lines = []
    for col in beneath:
        lines.append(f"{col}:")
        for c in (c for c in cells if c[col] != "-"):
            lines.append(f"  {c['slice']} {c['split']}: {c.get(col + ' beneath', c[col])}")
    lines += [f"note: {note}" for note in result.notes]
    lines += [f"note: {r.split} on {r.topology}: {r.pricing}" for r in result.rows
              if r.pricing.startswith("together")]   # the one-word column's detail
    if chosen is not None:
        bound = ("no --latency-bound" if args.latency_bound is None
                 else f"--latency-bound {args.latency_bound:g} s")
        lines.append(f"pick ({bound}, --objective {args.objective or 'throughput'}): "
                     f"{chosen.why}")
    for line in terminal.lines("\n".join(lines), console.width):
        print(line, file=out)


def _num(x, fmt: str) -> str:
    return "-" if x is None else f"{x:{fmt}}"

"""`aoizora plan-many SETTINGS.yaml [--executor local|ray|ray://HOST:PORT] [--out-dir DIR]`:
plans every setting of a settings file (settings_file.py), each plan written to
DIR/<setting>.json as it completes, then a summary table (or --json). Rerun after an
interruption, it keeps the plans this code already wrote and says so (plan_many.py).
Exit 0 when every setting has a plan, 1 when one could not be planned (its row says why),
75 when the executor was lost under a setting (with --keep-going, listed at the end): the
same command resumes, keeping the plans written."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict


def register(sub) -> None:
    from aoizora.compile import executor
    from aoizora.inputs.validate import int_arg

    p = sub.add_parser("plan-many", help="plan a list of settings (YAML) over one executor")
    p.add_argument("settings", metavar="SETTINGS.yaml",
                   help="a list of settings: model, topology, and optionally video, frames, "
                        "top_k, hardware (docs/planner.md)")
    p.add_argument("--out-dir", default="plans", help="where the plans go (plans/)")
    executor.add_argument(p)
    p.add_argument("--concurrent", type=int_arg("--concurrent", 1, 256), default=None,
                   help="settings planned at once, with Ray only (default: one per 8 of the "
                        "cluster's CPUs, at least 1)")
    p.add_argument("--workers", type=int_arg("--workers", 1, 256), default=None,
                   help="local compile processes, 1 to 256 (default: one per two cores)")
    p.add_argument("--compile-target", choices=("tpu", "cpu"), default="tpu",
                   help="compile for each slice's TPU via libtpu (default), or for CPU devices")
    p.add_argument("--force", action="store_true", help="plan again the settings planned before")
    p.add_argument("--keep-going", action="store_true",
                   help="when the executor is lost under a setting (a Ray node or cluster "
                        "gone), go on with the next, listing it at the end (exit 75), rather "
                        "than stop")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    p.add_argument("--json", action="store_true", help="print the summary rows as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(run=run)


def run(args) -> int:
    from aoizora.compile import executor
    from aoizora.inputs import settings_file, validate
    from aoizora.planning import plan_many
    from aoizora.compile.cache import Cache
    from aoizora.errors import ExecutorLost, UserError
    from aoizora.planning.planner import Settings

    requests = settings_file.load(args.settings)
    validate.output_folder(args.out_dir, "--out-dir")
    if args.concurrent and args.concurrent > 1 and args.executor == "local":
        raise UserError("--concurrent: several settings at once need --executor ray (local "
                        "processes of one setting already use this machine's cores)")
    jobs_on = executor.from_args(args)
    try:
        concurrent = args.concurrent or (max(1, jobs_on.cpus // 8) if jobs_on.remote else 1)
        log(f"{len(requests)} settings, {concurrent} at once, jobs on {jobs_on.description}")
        settings = Settings(workers=args.workers, cache=None if args.no_cache else Cache(),
                            compile_target=args.compile_target, executor=jobs_on)
        rows = plan_many.run(requests, args.out_dir, settings, concurrent=concurrent,
                             force=args.force, keep_going=args.keep_going,
                             progress_for=_progress(args, concurrent), log=log)
    finally:
        jobs_on.close()
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=1))
    else:
        print_table(rows)
    lost = [r.key for r in rows if r.status == "lost"]
    if lost:
        log(f"{len(lost)} setting(s) lost with the executor: {', '.join(lost)}; the same "
            "command plans them, keeping the plans written")
        return ExecutorLost.exit_code
    return 0 if all(r.path for r in rows) else 1


def log(text: str) -> None:
    print(f"plan-many: {text}", file=sys.stderr, flush=True)


def _progress(args, concurrent: int):
    """Each setting's progress: the planner's phases when one runs at a time, else its
    notes (skipped candidates) as lines naming the setting."""
    from contextlib import nullcontext

    from aoizora.planning.planner import Progress
    from aoizora.progress import RichProgress

    class Notes(Progress):
        def __init__(self, key: str):
            self.key = key

        def note(self, text: str) -> None:
            log(f"{self.key}: {text}")

    if concurrent == 1:
        return lambda r: RichProgress(enabled=not args.quiet)
    return lambda r: nullcontext(Notes(r.key))


# The table's columns, in order; those in _BENEATH leave it, the first first, for lines
# beneath where the terminal is too narrow to hold every word whole.
_COLUMNS = ("setting", "status", "sharding", "placement", "simulated\nms/fwd", "vs\nexisting",
            "90 %, P", "planning\ns", "cached\njobs", "skipped")
_BENEATH = ("placement", "sharding", "90 %, P", "cached\njobs", "skipped")


def _cells(r) -> dict[str, str]:
    from aoizora.terminal import whole

    return {"setting": r.key, "status": r.status, "sharding": r.candidate or "-",
            "placement": whole(r.placement or "-"),
            "simulated\nms/fwd": _num(r.simulated_s, 1e3, ".3f"),
            "vs\nexisting": _num(r.speedup_vs_existing, 1, ".3f", "x"),
            "90 %, P": "-" if r.speedup_interval is None else
            f"{r.speedup_interval[0]:.2f}-{r.speedup_interval[1]:.2f} P{r.p_faster:.2f}",
            "planning\ns": _num(r.planning_s, 1, ".1f"),
            "cached\njobs": f"{r.cache_hits}/{r.jobs}" if r.jobs is not None else "-",
            "skipped": "-" if r.skipped is None else str(r.skipped)}


def _table(cells: list[dict[str, str]], columns):
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from aoizora.terminal import whole

    t = Table(title="plan-many (latencies simulated, planning time measured)",
              box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for col in columns:
        t.add_column(col, justify="left" if col in _COLUMNS[:4] else "right")
    for c in cells:
        t.add_row(*(Text(c[col].replace(whole(" "), " ")) for col in columns))
    return t


def print_table(rows, out=None) -> None:
    """The summary at the terminal's width (terminal.py): every setting's name and figures
    whole; the columns that do not fit listed beneath, one line a setting (every column,
    where not even the names fit beside the figures)."""
    from rich.console import Console

    from aoizora import terminal

    out = out or sys.stdout
    console = Console(file=out, width=terminal.width(out))
    cells = [_cells(r) for r in rows]
    table, beneath, fits = terminal.fit_columns(lambda cols: _table(cells, cols), _COLUMNS,
                                                _BENEATH, console)
    lines = []
    if not fits:   # not even the names fit beside the figures: a line a setting, no table
        beneath = list(_COLUMNS[1:])
    else:
        console.print(table)
    if beneath:
        lines.append(", ".join(b.replace("\n", " ") for b in beneath) + ":")
        lines += [f"  {c['setting']}: " + ", ".join(c[col] for col in beneath) for c in cells]
    lines += [f"{r.key}: {r.status}: {r.reason}" for r in rows
              if r.status in ("no-fit", "error", "lost")]
    for line in terminal.lines("\n".join(lines), console.width):
        print(line, file=out)


def _num(x, scale: float, fmt: str, unit: str = "") -> str:
    return "-" if x is None else f"{x * scale:{fmt}}{unit}"

"""`aoizora eval --grid paper --out DIR [--jobs N] [--only SUBSTRING] [--oracle/--no-oracle]
[--json]`: runs the paper's evaluation grid (or part of it), one JSON
per setting under DIR/settings (written as soon as the setting is done, so the grid resumes
where it stopped), then the table, CSV and plots under DIR. Every latency is simulated."""

from __future__ import annotations

import argparse
import json
import sys

from aoizora.inputs.validate import int_arg


def register(sub) -> None:
    from aoizora.compile import executor

    p = sub.add_parser("eval", help="evaluate AoiZora on the paper's grid (simulated)")
    p.add_argument("--grid", default="paper", help="paper (36 settings), production (TPU7x and v6e, 8) or tiny (tests)")
    p.add_argument("--jobs", type=int_arg("--jobs", 1, 256), default=1,
                   help="local compile processes, 1 to 256 (default 1; with --executor ray "
                        "the cluster's CPUs decide)")
    executor.add_argument(p)
    p.add_argument("--only", action="append", metavar="SUBSTRING",
                   help="run only settings whose key contains it (repeat to narrow), "
                        "e.g. --only 14b_v5e-2x4_480p-21f")
    # No default: the repository's docs/results holds the shipped results, and a default
    # there would overwrite them from the repository root.
    p.add_argument("--out", required=True, metavar="DIR",
                   help="the folder to write into (made if missing): one JSON per setting "
                        "under DIR/settings, then the table, CSV and plots")
    p.add_argument("--oracle", action=argparse.BooleanOptionalAction, default=False,
                   help="compile every fitting candidate for the oracle and recall (slow: "
                        "tens of compiles per setting)")
    p.add_argument("--top-k", type=int_arg("--top-k", 1, 1000), default=None,
                   help="Stage 1 K (default: planner's)")
    p.add_argument("--exhaustive", action=argparse.BooleanOptionalAction, default=True,
                   help="simulate every device order of the decision's sharding on slices of "
                        "at most 8 devices (default on; 8! = 40,320 simulations)")
    p.add_argument("--force", action="store_true", help="re-evaluate settings already done")
    p.add_argument("--list", action="store_true", help="list the settings and exit")
    p.add_argument("--report-only", action="store_true",
                   help="only rewrite the table, CSV and plots from the JSONs there")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(run=run)


def run(args) -> int:
    from aoizora.inputs import validate
    from aoizora.errors import UserError
    from aoizora.evaluation import grid, runner, tables

    validate.output_folder(args.out, "--out")
    if args.report_only and not runner.load_results(args.out):
        raise UserError(f"--report-only: no results under {args.out}: run the grid first "
                        "(leave out --report-only)")
    settings = grid.select(grid.grid(args.grid), args.only)
    if not settings:
        raise UserError(f"no setting of grid {args.grid} matches {args.only}")
    if args.list:
        for s in settings:
            done = runner.load_result(runner.setting_path(args.out, s))
            print(f"{s.key:40s} {grid.half(s):4s} {done['status'] if done else 'todo'}")
        return 0

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    if not args.report_only:
        from aoizora.compile.executor import check_name, make_executor

        jobs_on = make_executor(check_name(args.executor))
        try:
            runner.run_grid(settings, args.out, oracle=args.oracle, workers=args.jobs,
                            force=args.force, top_k=args.top_k, exhaustive=args.exhaustive,
                            log=log, executor=jobs_on)
        finally:
            jobs_on.close()
    written = runner.write_outputs(args.out)
    results = runner.load_results(args.out)
    mine = {s.key for s in settings}
    if args.json:
        print(json.dumps([r for r in results if r["key"] in mine], indent=1))
        return 0
    print(tables.markdown_table([r for r in results if r["key"] in mine]), end="")
    print("wrote " + ", ".join(written))
    return 0

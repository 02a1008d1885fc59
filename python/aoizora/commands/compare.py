"""`aoizora compare`: the plan against each baseline (simulated latency, speedup), for a
saved plan or by planning (from the cache when it was planned before)."""

from __future__ import annotations

import json

from aoizora.commands.plan import (WORKLOAD_FLAGS, add_workload_args, comparison_rows,
                                   print_comparison, run_planner)


def register(sub) -> None:
    p = sub.add_parser("compare", help="compare a plan with the baselines (simulated)")
    add_workload_args(p)
    p.add_argument("--plan", help="a saved plan.json to compare instead of planning")
    p.set_defaults(run=run)


def _saved_plan(args):
    """The plan file, checked against its schema; no planning options beside it."""
    from aoizora import plan_schema
    from aoizora.errors import UserError

    given = [f"--{k.replace('_', '-')}" for k in WORKLOAD_FLAGS if getattr(args, k) is not None]
    if given:
        raise UserError(f"--plan compares the saved plan as it is: leave out {', '.join(given)} "
                        "(or leave out --plan to plan anew)")
    return plan_schema.load(args.plan)


def run(args) -> int:
    plan = _saved_plan(args) if args.plan else run_planner(args).plan
    if args.json:
        rows = [{"label": label, "sharding": cand, "placement": place, "simulated_s": sec,
                 "speedup": speed} for label, cand, place, sec, speed in comparison_rows(plan)]
        print(json.dumps(rows, indent=2))
    else:
        print_comparison(plan)
    return 0

"""`aoizora compare`: the plan against each baseline (simulated latency, speedup), for a
saved plan or by planning (from the cache when it was planned before)."""

from __future__ import annotations

import json

from aoizora.commands.plan import add_workload_args, comparison_rows, print_comparison, run_planner


def register(sub) -> None:
    p = sub.add_parser("compare", help="compare a plan with the baselines (simulated)")
    add_workload_args(p)
    p.add_argument("--plan", help="a saved plan.json to compare instead of planning")
    p.set_defaults(run=run)


def run(args) -> int:
    from aoizora.plan import Plan

    plan = Plan.load(args.plan) if args.plan else run_planner(args).plan
    if args.json:
        rows = [{"label": label, "sharding": cand, "placement": place, "simulated_s": sec,
                 "speedup": speed} for label, cand, place, sec, speed in comparison_rows(plan)]
        print(json.dumps(rows, indent=2))
    else:
        print_comparison(plan)
    return 0

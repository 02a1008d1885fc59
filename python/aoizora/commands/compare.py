"""`aoizora compare`: the plan against each baseline (simulated latency, speedup, seconds per
video), for a saved plan or by planning (from the cache when it was planned before). --json:
one object per row, speedup a number (the row's simulated step over the plan's; null without
one), video_s the row's simulated seconds per video and video_parts its split (null when the
plan has none)."""

from __future__ import annotations

import json

from aoizora.commands.plan import WORKLOAD_FLAGS, add_workload_args, run_planner
from aoizora.plan_summary import comparison_rows, print_comparison, print_video


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
    if args.json:  # speedup: a number, the row's simulated step over the plan's (or null)
        rows = [{"label": r.label, "sharding": r.sharding, "placement": r.placement,
                 "simulated_s": r.simulated_s, "speedup": r.speedup, "video_s": r.video_s,
                 "video_parts": _parts(plan, r.tag),
                 # the plan's speedup across joint draws of the model (confidence.py)
                 "speedup_drawn": r.drawn, "tie": r.tie}
                for r in comparison_rows(plan)]
        print(json.dumps(rows, indent=2))
    else:
        print_comparison(plan)
        print_video(plan)
    return 0


def _parts(plan, tag: str) -> dict | None:
    """A row's seconds per video by part (plan.json's video), None when not priced."""
    v = plan.video if tag == "AoiZora" else plan.video.get("baselines", {}).get(tag, {})
    return v.get("parts")

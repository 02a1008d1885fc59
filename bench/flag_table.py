"""Each compiler flag set on a plan's own sharding and placement: the table of
docs/results/compiler_flags.md.

    python bench/flag_table.py PLAN.json [--sets search|all|NAME,NAME] [--workers N]
        [--json OUT.json]

The plan's sharding is compiled (XLA's optimized HLO, deviceless, cached) under each set, in
worker processes started with the set's LIBTPU_INIT_ARGS, and simulated on the plan's
placement and on Stage 2's best for that program: the same code as `aoizora plan --flags
search` (planning/flag_search.py), one sharding, the sets asked for. `search`: the plan's
generation's search sets; `all`: the whole catalogue (none, both published sets, each flag
alone). Every figure is simulated, none measured.
"""

from __future__ import annotations

import argparse
import json
import sys

from aoizora.compile import compile_flags
from aoizora.compile.batch import run_jobs
from aoizora.compile.cache import Cache
from aoizora.compile.executor import LocalExecutor
from aoizora.compile.jobs import Job
from aoizora.models import get_model, get_workload
from aoizora.plan_format import Plan
from aoizora.planning import flag_search
from aoizora.planning.stage2 import Pair, Stage2
from aoizora.planning.strategies import Candidate


def _sets(which: str, generation: str) -> list:
    if which == "search":
        return compile_flags.search_sets(generation)
    if which == "all":
        return list(compile_flags.catalogue().values())
    return [compile_flags.lookup("none")] + [compile_flags.lookup(n) for n in which.split(",")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("plan")
    ap.add_argument("--sets", default="search")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", help="write the search record here")
    args = ap.parse_args(argv)
    with open(args.plan) as f:
        plan = Plan.from_dict(json.load(f))
    c = Candidate.from_dict(plan.choice.strategy)
    cfg = get_model(plan.model["name"])
    wl = get_workload(plan.workload["video"], plan.workload["frames"], model=cfg)
    topo = plan.topology
    stage2 = Stage2.for_topology(topo["name"])
    target = topo["compile_target"]["name"]
    best = Pair(c, plan.choice.placement, list(plan.choice.chip_ids), plan.choice.q2_s or 0.0)
    sets = _sets(args.sets, topo["generation"])
    executor = LocalExecutor()
    cache = Cache()

    def run_batch(name, jobs):
        print(f"{name}: {len(jobs)} jobs", file=sys.stderr, flush=True)
        return run_jobs(jobs, workers=args.workers, cache=cache, executor=executor,
                        progress=lambda d, t, o: print(f"  {d}/{t} {o.name} {o.seconds:.1f} s"
                                                       f"{' cached' if o.cached else ''}",
                                                       file=sys.stderr, flush=True))
    try:
        chosen, record = flag_search.search(
            stage2, best, [best], topo["generation"],
            make_job=lambda cand, flags: Job("analyze", cand, cfg, wl, target, flags=flags),
            run_batch=run_batch, budget=len(sets), shardings=1, sets=sets)
    finally:
        executor.close()
    flags = flag_search.record("search", chosen, record)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(flags, f, indent=1)
    print(f"{plan.model['name']} {plan.workload['video']} {plan.workload['frames']}f on "
          f"{topo['name']}: {c.name} @ {plan.choice.placement} (simulated)")
    print("| flag set | simulated step (ms) | exposed comm. (ms) | best placement's step (ms) "
          "| what changed in the compiled program |")
    print("|---|---:|---:|---:|---|")
    for r in record["rows"]:
        at = r["plan_placement"]
        words = "(the base)" if r["changes"] is None else r["changes"]["words"]
        print(f"| {r['flag_set']} | {at['simulated_s'] * 1e3:.3f} | "
              f"{at['exposed_comm_s'] * 1e3:.3f} | {r['best']['simulated_s'] * 1e3:.3f} | "
              f"{words} |")
    for why in record["failed"]:
        print(f"failed: {why}")
    print(f"chosen: {chosen.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

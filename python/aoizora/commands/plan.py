"""`aoizora plan`: the main job. Chooses the sharding and the placement, writes the plan,
and optionally the HTML report and a Perfetto trace of the chosen plan."""

from __future__ import annotations

import json
import sys


def add_workload_args(p, *, default_model="wan2.1-t2v-1.3b") -> None:
    p.add_argument("--model", default=default_model,
                   help=f"model preset (default {default_model})")
    p.add_argument("--video", default="480p", help="480p or 720p (default 480p)")
    p.add_argument("--frames", type=int, default=21, help="21, 41 or 81 (default 21)")
    p.add_argument("--topology", default="v5e:2x4",
                   help="slice name such as v5e:2x4, v5e:4x4, v4:2x2x2, or a JSON file")
    p.add_argument("--top-k", type=int, default=None,
                   help="shardings kept by Stage 1 (default: K from measured recall)")
    p.add_argument("--workers", type=int, default=None, help="compile processes")
    p.add_argument("--oracle", action="store_true",
                   help="also simulate every fitting sharding x every placement")
    p.add_argument("--compile-target", choices=("tpu", "cpu"), default="tpu",
                   help="compile for the slice's TPU via libtpu (default), or for CPU devices "
                        "(XLA's CPU pipeline: not the TPU's programs; only when asked)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    p.add_argument("--json", action="store_true", help="print the plan as JSON on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress display")


def register(sub) -> None:
    p = sub.add_parser("plan", help="choose the sharding and the placement of a model")
    add_workload_args(p)
    p.add_argument("--out", default="plan.json", help="where to write the plan (plan.json)")
    p.add_argument("--report", help="write a self-contained HTML report here")
    p.add_argument("--trace", help="write a Perfetto/Chrome trace of the chosen plan here")
    p.set_defaults(run=run)


def run_planner(args):
    from aoizora.cache import Cache
    from aoizora.planner import Settings, plan
    from aoizora.progress import RichProgress

    settings = Settings(top_k=args.top_k, workers=args.workers, oracle=args.oracle,
                        cache=None if args.no_cache else Cache(),
                        compile_target=args.compile_target)
    with RichProgress(enabled=not args.quiet) as progress:
        return plan(args.model, args.video, args.frames, args.topology, settings, progress)


def comparison_rows(plan) -> list[tuple[str, str, str, float | None, str]]:
    """(label, sharding, placement, simulated seconds, plan speedup) per row."""
    best = plan.choice.simulated_s
    rows = [("AoiZora", plan.choice.candidate, plan.choice.placement, best, "1.000x")]
    for tag, b in plan.baselines.items():
        speed = f"{b.simulated_s / best:.3f}x" if best and b.simulated_s else "-"
        rows.append((tag, b.candidate, b.placement, b.simulated_s, speed))
    return rows


def print_comparison(plan, out=sys.stdout) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{plan.model['name']} {plan.workload['video']} {plan.workload['frames']} "
                    f"frames on {plan.topology['name']} (simulated on the "
                    f"{plan.topology['generation']} model)")
    for col in ("", "sharding", "placement", "simulated ms / forward", "AoiZora speedup"):
        t.add_column(col)
    for label, cand, place, sec, speed in comparison_rows(plan):
        t.add_row(label, cand, place, "-" if sec is None else f"{sec * 1e3:.2f}", speed)
    Console(file=out).print(t)


def run(args) -> int:
    from aoizora.report import write_report

    result = run_planner(args)
    plan = result.plan
    plan.save(args.out)
    if args.report:
        write_report(args.report, plan, result.placements)
    if args.trace:
        from aoizora.stage2 import Stage2

        best = result.pairs[0]
        Stage2(result.topology).write_trace(best, result.graph, args.trace)
    if args.json:
        print(json.dumps(plan.to_dict(), indent=2))
        return 0
    c = plan.choice
    target = plan.topology.get("compile_target", {})
    if target.get("platform") == "cpu":
        print(f"compiled for {target['devices']} CPU devices (--compile-target cpu), not the TPU")
    print(f"plan: {c.candidate}  mesh {'x'.join(map(str, c.mesh_shape))} "
          f"({', '.join(c.axis_names)})  placement {c.placement}")
    print(f"      device coords in mesh order: {[tuple(x) for x in c.device_coords]}")
    print_comparison(plan)
    d = plan.planning.get("decision")
    if plan.planning.get("pooling_changed_choice") and d:
        print(f"note: Stage 1 + Stage 2 chose {d['candidate']} @ {d['placement']} "
              f"({d['simulated_s'] * 1e3:.2f} ms simulated); the baseline "
              f"{plan.planning.get('chosen_from')} simulates faster, so the plan keeps it")
    for s in result.skipped:
        print(f"skipped: {s}")
    decision = plan.planning.get("decision_seconds")
    print(f"planning took {plan.planning['seconds']:.1f} s (measured"
          + (f"; the decision {decision:.1f} s, the rest compiling and simulating the baselines"
             if decision is not None else "")
          + f"; {plan.planning['cache_hits']}/{plan.planning['jobs']} compiler jobs from cache)")
    wrote = [args.out] + [p for p in (args.report, args.trace) if p]
    print("wrote " + ", ".join(wrote))
    return 0

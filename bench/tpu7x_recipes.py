"""MaxDiffusion's recipes on a slice, on the device order MaxDiffusion gets (jax's default)
and on the best placement Stage 2 finds for the same sharding, beside the plan's choice:
simulated seconds per forward and, in words, where each mesh axis runs (on TPU7x: which
logical groups share a chip).

    PYTHONPATH=build/dev/pyroot:python .venv/bin/python bench/tpu7x_recipes.py \\
        --model wan2.1-t2v-14b --video 720p --frames 81 --topology tpu7x:2x2x1

Runs the planner (served from the compile cache after an `aoizora plan` of the same
setting), then ranks and simulates each recipe's placements. Every figure is simulated on
the hardware model, none measured.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from aoizora.inputs import validate
from aoizora.planning import planner, strategies  # noqa: E402
from aoizora.compile.cache import Cache  # noqa: E402
from aoizora.planning.placement import axis_groups_on_chips  # noqa: E402

RECIPES = (strategies.MAXDIFFUSION_DEFAULT, strategies.MAXDIFFUSION_CFG,
           strategies.MAXDIFFUSION_RING, strategies.MAXDIFFUSION_ULYSSES,
           strategies.MAXDIFFUSION_USP)
SIMULATED_PLACEMENTS = 4  # the best few by Q2 are simulated (as the planner judges pairs)


def words(stage2, pair) -> str:
    c = pair.candidate
    groups = axis_groups_on_chips(c.mesh_shape, c.axis_names, stage2.coords(pair.device_of))
    return "; ".join(f"{a}: {g}" for a, g in groups.items())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="wan2.1-t2v-14b")
    ap.add_argument("--video", default="720p")
    ap.add_argument("--frames", type=int, default=81)
    ap.add_argument("--topology", default="tpu7x:2x2x1")
    args = ap.parse_args()
    r = planner.plan(args.model, args.video, args.frames, args.topology,
                     settings=planner.Settings(cache=Cache()))
    stage2, plan = r.stage2, r.plan
    cfg, wl = validate.workload(args.model, args.video, args.frames)
    recipes = strategies.baseline_shardings(cfg, wl, stage2.num_devices)
    print(f"{args.model} {args.video} {args.frames}f on {args.topology} "
          f"(simulated ms per forward)")
    c = plan.choice
    print(f"plan: {c.candidate} on {c.placement}: {c.simulated_s * 1e3:.2f} ms; "
          f"{'; '.join(f'{a}: {g}' for a, g in c.extra.get('axis_groups', {}).items())}")
    print(f"{'recipe':34s} {'sharding':14s} {'jax default':>12s} {'best placement':>15s} "
          f"{'gain':>6s}  where the axes run (default | best)")
    for tag in RECIPES:
        cand = recipes.get(tag)
        graph = r.graphs.get(cand.name) if cand else None
        if graph is None:
            print(f"{tag:34s} (not legal, or does not fit, here)")
            continue
        name = cand.name
        default = stage2.simulate(stage2.default_pair(cand, graph), graph)
        ranked = stage2.rank(cand, graph)[:SIMULATED_PLACEMENTS]
        best = min((stage2.simulate(p, graph) for p in ranked), key=lambda p: p.simulated)
        if default.simulated <= best.simulated:
            best = default
        print(f"{tag:34s} {name:14s} {default.simulated * 1e3:12.2f} {best.simulated * 1e3:15.2f} "
              f"{default.simulated / best.simulated:6.3f}  {words(stage2, default)} | "
              f"{best.placement}: {words(stage2, best)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

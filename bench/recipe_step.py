"""Where one sharding's forward goes, outside a plan: compiles one named candidate of one
setting for the TPU target (through the compile cache) and simulates it on JAX's default
device order, on the shipped profile and on each --hardware file: the step, its compute and
exposed communication by kind, and the time of its FLOPs at peak.

    PYTHONPATH=build/dev/pyroot:python .venv/bin/python bench/recipe_step.py \\
        --model wan2.1-t2v-14b --video 480p --frames 81 --topology v6e:2x4 \\
        --candidate dp2-ag4w --mesh 2x4 [--blocks 512 512 512] [--hardware FILE ...]

Every figure is simulated on the model of the chip, never measured.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def main() -> int:
    from aoizora.compile import jaxenv  # noqa: F401
    from aoizora.planning.recipe import compile_candidate, default_order_split

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="wan2.1-t2v-14b")
    ap.add_argument("--video", default="480p")
    ap.add_argument("--frames", type=int, default=81)
    ap.add_argument("--topology", default="v6e:2x4")
    ap.add_argument("--candidate", default="dp2-ag4w")
    ap.add_argument("--mesh", default="2x4", help="the candidate's mesh shape, e.g. 2x2x2")
    ap.add_argument("--blocks", type=int, nargs=3, metavar=("Q", "KV", "KV_COMPUTE"))
    ap.add_argument("--hardware", nargs="*", default=[], metavar="FILE")
    args = ap.parse_args()
    text = compile_candidate(args.model, args.video, args.frames, args.topology,
                             args.candidate, args.blocks)
    mesh = [int(x) for x in args.mesh.split("x")]
    print(f"{args.model} {args.video} {args.frames}f, {args.candidate} on {args.topology} "
          f"(JAX default order), seconds per forward, simulated")
    print(f"{'profile':32} {'step':>8} {'compute':>8} {'share':>6} {'at peak':>8}  exposed")
    for hw in [None] + args.hardware:
        s = default_order_split(text, args.topology, mesh, hw)
        f = s["forward_s"]
        comm = ", ".join(f"{k} {v:.4f}" for k, v in f.items() if k != "compute" and v >= 1e-4)
        print(f"{hw or 'shipped':32} {s['step_s']:8.4f} {f['compute']:8.4f} "
              f"{100 * f['compute'] / s['step_s']:5.1f}% {s['peak_flops_s']:8.4f}  {comm}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

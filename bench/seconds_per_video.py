"""Seconds per video on a slice, by part: the stages around the loop (the text encoder, the
image conditioning of I2V presets, the VAE decode) each under every sharding offered
(aoizora.pipeline.plan_video, as the planner prices them), compiled for the slice's TPU
(deviceless, cached) and simulated; with --plan, steps x its step and its reshards. Every
figure is simulated, none measured.

    .venv/bin/python bench/seconds_per_video.py --model wan2.1-t2v-1.3b --video 480p \
        --frames 21 --topology v5e:2x4 --steps 30 [--plan plan.json] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

from aoizora.compile import jaxenv  # noqa: F401  (environment before jax)


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.3f} ms" if s < 1 else f"{s:.3f} s"


def table(video, pair) -> str:
    """The parts of one video (with a plan's pair), then every stage option tried."""
    lines = []
    if pair is not None:
        parts, stages = video.parts(pair), video.stages
        rows = [("part", "seconds (simulated)", "sharding / how")]
        te, vae = stages.text_encoder, stages.vae_decode
        rows.append(("text encoding (2 prompts)", _ms(parts["text_encoder_s"]),
                     te.sharding if te else "none priced"))
        if "conditioning_s" in parts:
            rows.append(("image conditioning", _ms(parts["conditioning_s"]), ", ".join(
                p.sharding for p in stages.conditioning().values() if p)))
        rows.append((f"{video.steps} steps x transformer step", _ms(parts["denoising_s"]),
                     f"{video.steps} x {_ms(pair.simulated)}, {pair.candidate.name} (plan)"))
        rows.append(("VAE decode (1 video)", _ms(parts["vae_decode_s"]),
                     vae.sharding if vae else "none priced"))
        for r in video.reshards(pair):
            rows.append((f"reshard: {r.name}", _ms(r.seconds),
                         f"{r.max_chip_bytes / 2**20:.2f} MiB to the busiest chip "
                         f"(array {r.array_bytes / 2**20:.2f} MiB)"))
        rows.append(("total per video", _ms(video.seconds(pair)), ""))
        lines = _columns(rows) + [""]
    opts = [("stage", "sharding", "simulated", "compiled / why not")]
    for p in video.stages.options:
        opts.append((p.stage, p.sharding, _ms(p.simulated_s), p.compiled if p.error is None
                     else (p.error if not p.compiled else f"{p.compiled}: {p.error}")[:90]))
    return "\n".join(lines + ["every sharding tried (JAX's default device order):"]
                     + _columns(opts))


def _columns(rows) -> list[str]:
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = ["  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip() for r in rows]
    out.insert(1, "  ".join("-" * x for x in w))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="wan2.1-t2v-1.3b")
    ap.add_argument("--video", default="480p")
    ap.add_argument("--frames", type=int, default=None)
    ap.add_argument("--topology", default="v5e:2x4")
    ap.add_argument("--steps", type=int, default=None,
                    help="denoising steps (default: the preset's MaxDiffusion run)")
    ap.add_argument("--plan", default=None, help="a plan.json for this setting")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from aoizora.compile.cache import Cache
    from aoizora.models import get_model, get_workload
    from aoizora.pipeline import plan_video
    from aoizora.planning.stage2 import Stage2

    model = get_model(args.model)
    workload = get_workload(args.video, args.frames, model=model)
    plan = json.load(open(args.plan)) if args.plan else None
    stage2 = Stage2.for_topology(args.topology)
    steps = plan_video.steps_for(model, args.steps)
    t = time.perf_counter()
    stages = plan_video.price_stages(model, workload, stage2, cache=Cache(),
                                     workers=args.workers)
    wall = time.perf_counter() - t
    video = plan_video.VideoModel(model, workload, stage2, steps[0], stages, steps[1],
                                  steps[2])
    pair = plan_video.plan_pair(plan) if plan else None
    if args.json:
        print(json.dumps({"stages": [dataclasses.asdict(o) for o in stages.options],
                          **({"video": video.of_pair(pair)} if pair else {}),
                          "steps": steps[0], "wall_s": wall}, indent=1))
        return 0
    print(f"{model.name}, {workload.name}, {args.topology}, {steps[0]} steps ({steps[1]}; "
          f"all simulated; stages priced in {wall:.0f} s wall)")
    print(table(video, pair))
    return 0


if __name__ == "__main__":
    sys.exit(main())

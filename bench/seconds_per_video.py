"""Seconds per video on a slice, by part: the text encoder and the VAE decode each under
every sharding offered (aoizora.pipeline), compiled for the slice's TPU (deviceless, cached)
and simulated; steps x the transformer step from a plan.json's choice.simulated_s; the
reshards between stages. Every figure is simulated, none measured.

    .venv/bin/python bench/seconds_per_video.py --model wan2.1-t2v-1.3b --video 480p \
        --frames 21 --topology v5e:2x4 --steps 30 [--plan plan.json] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

from aoizora import jaxenv  # noqa: F401  (environment before jax)


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.3f} ms" if s < 1 else f"{s:.3f} s"


def table(price, steps: int) -> str:
    rows = [("part", "seconds (simulated)", "sharding / how")]
    te, vae = price.text_encoder, price.vae_decode
    rows.append(("text encoding (2 prompts)", _ms(te and te.simulated_s),
                 te.sharding if te else "none priced"))
    step = price.transformer_step_s
    rows.append((f"{steps} steps x transformer step",
                 _ms(None if step is None else steps * step),
                 f"{steps} x {_ms(step)}, {price.transformer_sharding} (plan.json)"
                 if step is not None else "missing: no --plan given"))
    rows.append(("VAE decode (1 video)", _ms(vae and vae.simulated_s),
                 vae.sharding if vae else "none priced"))
    for r in price.reshards:
        rows.append((f"reshard: {r.name}", _ms(r.seconds),
                     f"{r.max_chip_bytes / 2**20:.2f} MiB to the busiest chip "
                     f"(array {r.array_bytes / 2**20:.2f} MiB)"))
    total = price.total_s
    rows.append(("total per video", _ms(total), "" if total is not None else
                 "missing a part (above)"))
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * x for x in w))
    opts = [("stage", "sharding", "simulated", "compiled / why not")]
    for p in price.options:
        opts.append((p.stage, p.sharding, _ms(p.simulated_s), p.compiled if p.error is None
                     else (p.error if not p.compiled else f"{p.compiled}: {p.error}")[:90]))
    w2 = [max(len(r[i]) for r in opts) for i in range(4)]
    sub = ["  ".join(c.ljust(w2[i]) for i, c in enumerate(r)).rstrip() for r in opts]
    sub.insert(1, "  ".join("-" * x for x in w2))
    return "\n".join(lines + ["", "every sharding tried (JAX's default device order):"] + sub
                     + [f"note: {n}" for n in price.notes])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="wan2.1-t2v-1.3b")
    ap.add_argument("--video", default="480p")
    ap.add_argument("--frames", type=int, default=None)
    ap.add_argument("--topology", default="v5e:2x4")
    ap.add_argument("--steps", type=int, default=30,
                    help="denoising steps (MaxDiffusion's Wan 1.3B config: 30; 14B: 50)")
    ap.add_argument("--plan", default=None, help="a plan.json for this setting")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from aoizora.cache import Cache
    from aoizora.models import get_model, get_workload
    from aoizora.pipeline import seconds_per_video

    model = get_model(args.model)
    workload = get_workload(args.video, args.frames, model=model)
    plan = json.load(open(args.plan)) if args.plan else None
    t = time.perf_counter()
    price = seconds_per_video(model, workload, args.topology, args.steps, plan,
                              cache=Cache(), workers=args.workers)
    wall = time.perf_counter() - t
    if args.json:
        print(json.dumps({**dataclasses.asdict(price), "total_s": price.total_s,
                          "reshard_s": price.reshard_s, "wall_s": wall}, indent=1))
        return 0
    print(f"{model.name}, {workload.name}, {args.topology}, {args.steps} steps "
          f"(all simulated; priced in {wall:.0f} s wall)")
    print(table(price, args.steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())

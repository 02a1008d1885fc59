"""Seconds per video of saved plans, as the markdown sections of docs/results/video.

One section per plan.json: the plan and its stages' shardings, then one row per baseline
(text encoding, conditioning, denoising, VAE decode, reshards, seconds per video, and the
row's seconds over the plan's), all from the plan's `video` record (simulated, never
measured), and the planning time the plan recorded (measured).

    python bench/video_table.py runs/*.plan.json >> docs/results/video/README.md
"""

from __future__ import annotations

import json
import os
import sys


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def _row(label: str, v: dict, plan_s: float, bold: bool = False) -> str:
    p = v["parts"]
    total = f"**{v['seconds']:.3f}**" if bold else f"{v['seconds']:.3f}"
    return (f"| {label} | {_ms(p['text_encoder_s'])} | {_ms(p.get('conditioning_s', 0.0))} | "
            f"{p['denoising_s']:.3f} s | {_ms(p['vae_decode_s'])} | {_ms(p['reshard_s'])} | "
            f"{total} | {v['seconds'] / plan_s:.3f}x |")


def section(path: str) -> str:
    with open(path) as f:
        plan = json.load(f)
    v, choice = plan["video"], plan["choice"]
    stages = ", ".join(f"{k} `{s['sharding']}`" for k, s in v["stages"].items())
    switch = (f", the expert switch at step {v['expert_switch_step']}"
              if v.get("expert_switch_step") is not None else "")
    wl = plan["workload"]
    out = [f"### {os.path.basename(path)}", "",
           f"{plan['model']['name']}, {wl['video']} {wl['frames']} frames on "
           f"{plan['topology']['name']}: plan `{choice['candidate']}` on "
           f"`{choice['placement']}`; {v['steps']} steps "
           f"({v['steps_source']}){switch}; stages: {stages}.", "",
           "| row | text encoding | conditioning | denoising | VAE decode | reshards | "
           "s / video | vs plan |",
           "|---|---|---|---|---|---|---|---|",
           _row(f"**AoiZora plan** `{choice['candidate']}`", v, v["seconds"], bold=True)]
    for tag, b in v["baselines"].items():
        cand = plan["baselines"].get(tag, {}).get("candidate", "?")
        out.append(_row(f"{tag} `{cand}`", b, v["seconds"]))
    pl = plan["planning"]
    out += ["", f"changed_choice: {v.get('changed_choice')}; planning {pl['seconds']:.1f} s in "
            f"all, decision {pl['decision_seconds']:.1f} s (measured, shared machine).", ""]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    for path in argv:
        print(section(path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

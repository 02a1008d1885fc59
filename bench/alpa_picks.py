"""Which sharding the Alpa-style baseline picks, per setting, from Stage 1 alone (lowering,
no compile): the pick and the runners-up with their alpha-beta cost (compute + comm, ms),
and Stage 1's Q1 best for comparison.

    PYTHONPATH=python:build/dev/pyroot .venv/bin/python bench/alpa_picks.py \
        [--model wan2.1-t2v-1.3b] [--video 480p-21f] [--topology v5e:2x2 v5e:2x4 v5e:4x4]

Lowering goes through the cache ($AOIZORA_CACHE); figures are predicted, not measured.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

from aoizora.compile import jaxenv  # noqa: E402,F401
from aoizora.planning import baselines, stage1, strategies  # noqa: E402
from aoizora.compile.cache import Cache  # noqa: E402
from aoizora.compile.batch import run_jobs  # noqa: E402
from aoizora.compile.jobs import Job  # noqa: E402
from aoizora.models import get_model, get_workload  # noqa: E402
from aoizora.planning.stage2 import Stage2  # noqa: E402


def setting_rows(model: str, video: str, frames: int, topology: str, shown: int = 3):
    cfg, wl = get_model(model), get_workload(video, frames)
    st2 = Stage2.for_topology(topology)
    cands = strategies.enumerate_candidates(cfg, wl, st2.num_chips)
    outs = run_jobs([Job("lower", c, cfg, wl, st2.compile_target) for c in cands],
                    workers=1, cache=Cache())
    s1 = [stage1.analyze(c, o.text, st2.topology.name) for c, o in zip(cands, outs) if o.ok]
    fit = [r for r in s1 if r.fits]
    link, alpha = st2.topology.link_bandwidth, st2.topology.hop_latency
    cost = {r.candidate.name: baselines.alpa_cost(r, link, alpha) for r in fit}
    ranked = sorted(fit, key=lambda r: (cost[r.candidate.name], r.candidate.name))
    q1_best = min(fit, key=lambda r: (r.q1_seconds, r.candidate.name)) if fit else None
    picks = [f"{r.candidate.name} {cost[r.candidate.name] * 1e3:.3f} "
             f"({(cost[r.candidate.name] - r.compute_seconds) * 1e3:.3f})" for r in ranked[:shown]]
    return [f"{model} {topology} {video} {frames}f", f"{len(fit)}/{len(s1)}",
            "; ".join(picks) or "none fits", q1_best.candidate.name if q1_best else "-"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="wan2.1-t2v-1.3b")
    ap.add_argument("--video", default="480p-21f", help="<resolution>-<frames>f")
    ap.add_argument("--topology", nargs="+", default=["v5e:2x2", "v5e:2x4", "v5e:4x4"])
    args = ap.parse_args()
    video, frames = args.video.rsplit("-", 1)
    print("| setting | fitting | Alpa-style pick, runners-up: ms (of which comm) | Q1 best |")
    print("|---|---|---|---|")
    for topo in args.topology:
        print("| " + " | ".join(setting_rows(args.model, video, int(frames.rstrip("f")), topo))
              + " |", flush=True)


if __name__ == "__main__":
    main()

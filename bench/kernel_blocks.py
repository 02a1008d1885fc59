"""The splash kernel's block search for Wan 2.1 T2V 14B at 720p 81 frames, on the attention
shape of the sharding the shipped plans chose (docs/results/v6e, docs/results/tpu7x): the
blocks choose_blocks picks, the resource that bounds them, and MaxDiffusion's hand-tuned
blocks (kernels.PUBLISHED_BLOCKS) and default (512s) priced by the same kernel model.
Every time is predicted by the model (compute/splash_kernel.h), not measured.

    PYTHONPATH=python:build/py/pyroot .venv/bin/python bench/kernel_blocks.py
"""

from __future__ import annotations

import dataclasses
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

from aoizora.planning import kernels              # noqa: E402
from aoizora.planning import strategies as S      # noqa: E402
from aoizora.models import get_model, get_workload  # noqa: E402

# (slice, a plan's chosen sharding, MaxDiffusion's tuned profile for that slice or None):
# the shipped plans' choices, and the ring the v6e plan of docs/results/kernel_blocks.md
# chose (tokamax's ring kernel, the splash kernel at every ring step; no tuned profile).
CASES = (("v6e:2x4", "dp2-uly4w", ("v6e", 8, "maxdiffusion-data2-ulysses")),
         ("v6e:2x4", "dp2-ring4w", None),
         ("tpu7x:2x2x1", "dp2-usp2x2", ("tpu7x", 8, "maxdiffusion-data2-ulysses2-ring")))


def rows():
    cfg, w = get_model("wan2.1-t2v-14b"), get_workload("720p", 81)
    by_name = {c.name: c for c in S.enumerate_candidates(cfg, w, 8)}
    for topology, name, tuned_key in CASES:
        device = kernels.DeviceFigures.of_topology(topology)
        shape = kernels.attention_shapes(by_name[name], cfg, w)
        best, legal = kernels.choose_blocks(shape, device)
        tuned = ([("MaxDiffusion tuned", kernels.price_blocks(
            shape, kernels.PUBLISHED_BLOCKS[tuned_key], device))] if tuned_key else [])
        priced = [("searched", best), *tuned,
                  ("MaxDiffusion default", kernels.price_blocks(shape, (512,) * 3, device))]
        yield topology, name, shape, legal, priced


def step_us(shape, c, device) -> str:
    """One grid step's MXU / VPU-EUP / DMA / fixed seconds, in us (compute/splash_kernel.h)."""
    from aoizora import _core

    d = _core.splash_kernel_cost(shape.heads, c.q_pad, c.kv_pad, shape.head_dim,
                                 shape.head_dim, *c.blocks, 2, dataclasses.asdict(device))
    return " / ".join(f"{d[k] * 1e6:.3f}" for k in
                      ("step_mxu", "step_vector", "step_dma", "step_overhead"))


def main() -> None:
    print("predicted by the kernel model (compute/splash_kernel.h), not measured")
    print("| slice | sharding: one call | blocks | grid steps / call | per step, us: MXU / "
          "VPU-EUP / DMA / fixed | bound | kernel ms, one layer | vs searched |")
    print("|---|---|---|---|---|---|---|---|")
    for topology, name, shape, legal, priced in rows():
        call = (f"{name}: {shape.heads} heads x {shape.q_len} x {shape.kv_len}"
                + (f", {shape.calls} calls" if shape.calls > 1 else ""))
        base = priced[0][1].seconds
        device = kernels.DeviceFigures.of_topology(topology)
        for label, c in priced:
            b = "/".join(map(str, c.blocks))
            print(f"| {topology} | {call} | {label} {b} | {c.steps} | "
                  f"{step_us(shape, c, device)} | {c.bound} | "
                  f"{c.seconds * 1e3:.2f} | {c.seconds / base:.3f}x |")
        print(f"<!-- {topology}: {legal} legal triples -->")


if __name__ == "__main__":
    main()

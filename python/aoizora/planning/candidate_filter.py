"""The candidates a plan considers: every legal sharding (strategies.py) less the ones it
cannot plan, each with its attention kernel, plus the published MaxDiffusion recipes.

enumerate_candidates(run, model) is the entry: UserError when nothing is left; each candidate
left out is a Skip in run (kind RING or KERNEL). Deterministic: the order is strategies'.
"""

from __future__ import annotations

import time
from dataclasses import replace

from aoizora.errors import UserError
from aoizora.models.base import FunctionSpec
from aoizora.planning import kernels, strategies
from aoizora.planning.run_state import KERNEL, RING, Run, Skip

# The longest ring a candidate may have (ring steps; the ring and Ulysses x ring forms). The
# ring is unrolled, one kernel call and a permute of the K and V per step, each permute
# naming every device pair: the lowered text grows with the square of the ring, and a
# 10,000-device slice's ring outgrows memory before its lowering ends (sizes measured:
# docs/results/code_history.md).
MAX_RING_STEPS = 512


def enumerate_candidates(run: Run, model: str) -> list:
    """Every candidate the plan lowers, in strategies' order. Raises UserError when no
    sharding is legal, none has a short enough ring, or none can run the kernel."""
    t0 = time.perf_counter()
    run.progress.phase("enumerate shardings")
    if isinstance(run.cfg, FunctionSpec):
        candidates = strategies.function_candidates(run.cfg, run.stage2.num_devices)
    else:
        candidates = strategies.enumerate_candidates(run.cfg, run.wl, run.stage2.num_devices,
                                                     run.settings.runtime)
    if not candidates:
        raise UserError(f"no legal sharding of {model} over {run.stage2.num_devices} devices")
    candidates = bounded_rings(run, candidates)
    if not candidates:
        raise UserError(f"no sharding of {model} over {run.stage2.num_devices} devices has a "
                        f"ring of at most {MAX_RING_STEPS} steps")
    candidates = with_kernels(run, candidates)
    if not candidates:
        raise UserError(f"no sharding of {model} can run the attention kernel of "
                        f"{run.target.platform}: " + "; ".join(run.skipped[:2]))
    run.lap("enumerate", t0)
    return candidates


def bounded_rings(run: Run, candidates: list) -> list:
    """The candidates whose ring has at most MAX_RING_STEPS steps; the others are Skips of
    kind RING, said in one line (a baseline among them is then not compared)."""
    long = [c for c in candidates if c.ring > MAX_RING_STEPS]
    if long:
        run.skips += [Skip(c.name, RING, f"a ring of {c.ring} steps, over the "
                           f"{MAX_RING_STEPS} planned (its unrolled program grows with the "
                           "square of the ring)") for c in long]
        longest = max(c.ring for c in long)
        run.progress.note(f"left out {len(long)} of {len(candidates)} shardings whose ring "
                          f"has more than {MAX_RING_STEPS} steps (longest {longest}; the "
                          "unrolled program grows with the square of the ring)")
    return [c for c in candidates if c.ring <= MAX_RING_STEPS]


def with_kernels(run: Run, candidates: list) -> list:
    """Each candidate with the attention kernel of the compile target and its searched block
    sizes (kernels.py), plus, for a MaxDiffusion recipe whose published blocks differ, the
    recipe as MaxDiffusion runs it (its blocks, its baseline tags; run.searched_of names
    its searched twin). A candidate whose shards cannot run the kernel is a Skip of kind
    KERNEL."""
    platform = run.target.platform
    spec = run.stage2.topology.spec
    device = kernels.DeviceFigures.of(spec) if platform == "tpu" else None
    out = []
    for c in candidates:
        try:
            searched = kernels.with_kernel(c, run.cfg, run.wl, platform, device)
            recipes = published_recipes(run, c, searched, spec["generation"])
        except kernels.KernelUnsupported as e:
            run.skip(c.name, KERNEL, str(e))
            continue
        moved = {t for r in recipes for t in r.baselines}
        run.searched_of.update((r.name, searched.name) for r in recipes)
        out.append(replace(
            searched, baselines=tuple(t for t in c.baselines if t not in moved)))
        out.extend(recipes)
    return out


def published_recipes(run: Run, bare, searched, generation: str) -> list:
    """The MaxDiffusion recipes among `bare`'s baseline tags whose published blocks
    (kernels.published_blocks) differ from the searched ones: one candidate per block
    triple, named <sharding>-b<q>x<kv>x<kv_compute>, carrying those tags. tokamax's ring
    kernel takes its blocks from the same flash_block_sizes in MaxDiffusion, so a ring
    recipe runs its published blocks as a splash recipe does."""
    if searched.kernel not in kernels.SPLASH_KERNELS:
        return []
    tags_of: dict[tuple, list[str]] = {}
    for tag in bare.baselines:
        if tag.startswith("maxdiffusion"):
            blocks = kernels.published_blocks(generation, bare.n_chips, tag)
            tags_of.setdefault(blocks, []).append(tag)
    out = []
    for blocks, tags in tags_of.items():
        recipe = kernels.with_kernel(bare, run.cfg, run.wl, run.target.platform,
                                     kernels.DeviceFigures.of(run.stage2.topology.spec),
                                     blocks=blocks)
        b = (recipe.block_q, recipe.block_kv, recipe.block_kv_compute)
        if b != (searched.block_q, searched.block_kv, searched.block_kv_compute):
            out.append(replace(recipe, name=f"{bare.name}-b{b[0]}x{b[1]}x{b[2]}",
                                           baselines=tuple(tags)))
    return out

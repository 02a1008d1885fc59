"""The baselines' own pairs: each existing deployment's sharding (baselines.py) compiled,
on JAX's default device order, simulated, for the plan to be compared with and pooled.

baseline_pairs(run, ...) gives tag -> simulated Pair. A baseline that cannot be compared
is never fatal: one JAX's default order cannot lay out is on Stage 2's best placement
(run.no_default_order); one with no figures is in run.failed_baselines with why; a
MaxDiffusion recipe whose published blocks fail is shown by its searched twin
(run.failed_recipes).
"""

from __future__ import annotations

import time
from dataclasses import replace

from aoizora import _core
from aoizora.planning import baselines, compile_policy
from aoizora.planning.run_state import Run
from aoizora.planning.stage2 import NoDefaultOrder, Pair


def baseline_pairs(run: Run, s1: list, base_cands: dict, pool: list[Pair],
                   ranked: list[Pair]) -> dict[str, Pair]:
    """The baselines on JAX's default order, simulated: their shardings not in the Top-K are
    compiled after the decision; a pair the decision already simulated is not run again."""
    t0 = time.perf_counter()
    base_cands = dict(base_cands)
    compile_policy.compile_candidates(
        run, "compile the baselines",
        [c for c in dict.fromkeys(base_cands.values()) if c.name not in run.graphs])
    compile_policy.compile_in_full(run, "full compile of the baselines",
                                   compile_policy.unpredicted(run, base_cands.values()))
    twins = stand_ins(run, s1, base_cands)
    compile_policy.compile_candidates(
        run, "compile the searched blocks of failed recipes",
        [c for c in dict.fromkeys(twins.values()) if c.name not in run.graphs])
    compile_policy.compile_in_full(run, "full compile of the searched blocks",
                                   compile_policy.unpredicted(run, twins.values()))
    run.failed_recipes = {tag: run.skip_reason(base_cands[tag].name) for tag in twins}
    base_cands.update((t, c) for t, c in twins.items() if c.name in run.graphs)
    for tag, c in base_cands.items():
        if c.name not in run.graphs:
            run.failed_baselines[tag] = {"candidate": c.name, "why": run.skip_reason(c.name)}
    q1_of = {r.candidate.name: r.q1_seconds for r in s1}
    pairs = {tag: baseline_pair(run, tag, c, q1_of.get(c.name), ranked)
             for tag, c in base_cands.items() if c.name in run.graphs}
    out = simulate_baselines(run, {t: p for t, p in pairs.items() if p}, pool)
    run.lap("baselines", t0)
    return out


def baseline_pair(run: Run, tag: str, c, q1: float | None,
                  ranked: list[Pair]) -> Pair | None:
    """The baseline `tag` (sharding `c`, compiled) on JAX's default order. When JAX has no
    default order for its mesh on this slice (a deployment that builds its mesh with
    create_device_mesh or jax.make_mesh fails there too), the sharding on Stage 2's best
    placement by Q2 instead, JAX's reason in run.no_default_order. None, with the reason in
    run.failed_baselines, when the core cannot price the sharding's program."""
    graph = run.graphs[c.name]
    try:
        return run.stage2.default_pair(c, graph, q1=q1)
    except NoDefaultOrder as e:
        run.no_default_order[tag] = e.why
        run.progress.note(f"{tag}: not deployable with JAX's default order on this slice: "
                          f"{e.why}")
    except _core.CoreError as e:
        run.failed_baselines[tag] = {"candidate": c.name, "why": f"Q2 failed: {e}"}
        return None
    try:  # a Top-K sharding's placements are ranked already
        own = ([p for p in ranked if p.candidate.name == c.name]
               or run.stage2.rank(c, graph, q1=q1))
    except _core.CoreError as e:
        run.failed_baselines[tag] = {"candidate": c.name, "why": f"no placement ranked: {e}"}
        return None
    return replace(own[0], tag=c.name)


def simulate_baselines(run: Run, base_pairs: dict[str, Pair],
                       pool: list[Pair]) -> dict[str, Pair]:
    """Each baseline pair simulated (a pair the decision judged is taken from it); one the
    simulator refuses is listed in run.failed_baselines and left out."""
    judged = {(p.candidate.name, tuple(p.device_of)): p for p in pool}
    run.progress.phase("simulate the baselines", len(base_pairs))
    out = {}
    for tag, p in base_pairs.items():
        twin = judged.get((p.candidate.name, tuple(p.device_of)))
        if twin is not None:
            p.simulated, p.sim, p.split = twin.simulated, twin.sim, twin.split
        elif p.simulated is None:
            try:
                run.stage2.simulate(p, run.graphs[p.candidate.name])
            except _core.CoreError as e:
                run.failed_baselines[tag] = {"candidate": p.candidate.name,
                                             "why": f"simulation failed: {e}"}
        if p.simulated is not None:
            out[tag] = p
        run.progress.advance(p.candidate.name)
    return out


def stand_ins(run: Run, s1: list, base_cands: dict) -> dict:
    """tag -> the searched-blocks twin of each MaxDiffusion recipe whose published blocks
    did not compile or load (TPU7x-8's published v7x blocks need more VMEM than the chip
    has): the recipe's sharding as it can run, shown in its place and named as a stand-in."""
    fits = {r.candidate.name: r.candidate for r in s1 if r.fits}
    return {tag: fits[run.searched_of[c.name]] for tag, c in base_cands.items()
            if c.name not in run.graphs and run.searched_of.get(c.name) in fits}


def existing_tag(base_pairs: dict[str, Pair], no_default: dict[str, str]) -> str | None:
    """The baseline "existing" repeats: the fastest deployable one (not the Alpa-style
    pick, not one JAX's default order cannot lay out)."""
    existing = [tag for tag in base_pairs if tag != baselines.ALPA and tag not in no_default]
    return min(existing, key=lambda tag: base_pairs[tag].simulated) if existing else None

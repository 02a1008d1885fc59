"""Where one simulated forward goes: compute and exposed communication by collective kind,
for the whole forward and for one transformer block.

Exposed communication is the time the simulator's critical path spends in a collective:
communication that no compute hides. The critical path of a run covers it end to end
(`SimResult.critical_path_seconds == step_seconds`), so compute plus every kind adds up to
the simulated step. Simulate with `top_contributors=-1` to keep every contributor; a split
built from a truncated critical path is refused (it would not add up).

A block is one trip of the block loop: the outermost while loop with the most trips (the
transformer blocks under `lax.scan`). Its figures are the critical path time of the ops in
that loop's regions (nested loops included) divided by its trip count; a program without a
loop has no block figures (None).

    split(sim, graph) -> dict, JSON-ready, seconds:
        {"forward_s": {"compute": s, "all-gather": s, ...}, "step_s": s,
         "block_s": {...} | None, "blocks": trips | None, "block_loop": name | None}

Figures are simulated on the model of the chip, never measured.
"""

from __future__ import annotations

from typing import Any

COMPUTE = "compute"


def block_loop(graph) -> int | None:
    """Index into graph.loops of the block loop (outermost, most trips), or None."""
    outer = [i for i, lp in enumerate(graph.loops) if lp.parent < 0 and lp.trip_count > 1]
    if not outer:
        return None
    return max(outer, key=lambda i: (graph.loops[i].trip_count, -i))


def _names_in_regions(graph, first: int, last: int) -> set[str]:
    """Op and collective names of regions [first, last]: the labels the simulator's
    critical path uses (compute ops by name, collectives by their own name)."""
    names = {op.name for r in graph.regions[first:last + 1] for op in r.ops}
    names |= {c.name for c in graph.collectives if first <= c.region <= last}
    return names


def _by_kind(contributors, keep=lambda name: True) -> dict[str, float]:
    out: dict[str, float] = {}
    for c in contributors:
        if keep(c.name):
            out[c.kind] = out.get(c.kind, 0.0) + c.seconds
    # compute first, then collective kinds by name: the same order in every plan
    return {k: out[k] for k in sorted(out, key=lambda k: (k != COMPUTE, k))}


def split(sim, graph) -> dict[str, Any]:
    """The split of one simulation (see the module docstring). Raises ValueError when the
    critical path does not cover the step (a truncated contributor list)."""
    forward = _by_kind(sim.critical_path)
    total = sum(forward.values())
    step = sim.step_seconds
    if abs(total - step) > 1e-6 * max(step, 1e-12):
        raise ValueError(f"the critical path covers {total:.6g} s of a {step:.6g} s step: "
                         "simulate with top_contributors=-1")
    out: dict[str, Any] = {"forward_s": forward, "step_s": step, "block_s": None,
                           "blocks": None, "block_loop": None}
    i = block_loop(graph)
    if i is not None:
        lp = graph.loops[i]
        names = _names_in_regions(graph, lp.first_region, lp.last_region)
        block = _by_kind(sim.critical_path, lambda n: n in names)
        out["block_s"] = {k: v / lp.trip_count for k, v in block.items()}
        out["blocks"] = int(lp.trip_count)
        out["block_loop"] = lp.name
    return out

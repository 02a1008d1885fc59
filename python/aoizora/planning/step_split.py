"""Where one simulated forward goes: compute and exposed communication by collective kind,
for the whole forward and for one transformer block.

Exposed communication is the time the simulator's critical path spends in a collective:
communication that no compute hides. The critical path of a run covers it end to end
(`SimResult.critical_path_seconds == step_seconds`), so compute plus every kind adds up to
the simulated step. Simulate with `top_contributors=-1` to keep every contributor. Where the
critical path falls short of the step (seen on a 16-device TPU7x run of Wan 14B: 0.981 s of
0.994 s, not yet explained), the gap is recorded as "unattributed" with a note.

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
UNATTRIBUTED = "unattributed"


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
    """The split of one simulation (see the module docstring). When the critical path does
    not cover the step (a truncated contributor list, or a gap in the simulator's critical
    path), the difference is its own entry, UNATTRIBUTED, and "note" says so: the split still
    adds up to the step, and the gap is shown, not hidden or fatal."""
    forward = _by_kind(sim.critical_path)
    total = sum(forward.values())
    step = sim.step_seconds
    out: dict[str, Any] = {"forward_s": forward, "step_s": step, "block_s": None,
                           "blocks": None, "block_loop": None}
    if abs(total - step) > 1e-6 * max(step, 1e-12):
        forward[UNATTRIBUTED] = step - total
        out["note"] = (f"the simulator's critical path covers {total:.6g} s of the "
                       f"{step:.6g} s step; the rest is shown as {UNATTRIBUTED!r}")
    i = block_loop(graph)
    if i is not None:
        lp = graph.loops[i]
        names = _names_in_regions(graph, lp.first_region, lp.last_region)
        block = _by_kind(sim.critical_path, lambda n: n in names)
        out["block_s"] = {k: v / lp.trip_count for k, v in block.items()}
        out["blocks"] = int(lp.trip_count)
        out["block_loop"] = lp.name
    return out

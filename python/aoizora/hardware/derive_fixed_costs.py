"""The rule for a generation without collective points: its fixed per-collective costs
(collective_latency, per kind) are derived from the closest fitted generation instead of
kept at the nominal 1 us, which every fitted generation exceeded by microseconds; and its
hop latency from the closest generation that fitted one.

    needed(points, generation) -> bool: no used (not held-out) collective point of
        `generation` among `points`, so the fit cannot set its fixed costs.
    shipped() -> the shipped profile dicts of every catalog generation (the default source).
    closest(doc, fitted, has=_fitted_costs) -> the profile dict among `fitted` (profiles of
        other generations for which `has` is true: at least one fitted fixed cost, or, with
        _fitted_hop, a fitted hop latency) whose ICI is most like `doc`'s, or None.
    derive(doc, fitted) -> [field]: sets every fixed cost of `doc` that is nominal to the
        source's figure (the same kind where the source fitted it, else the mean of the
        kinds it fitted), and a nominal hop_latency to that of the closest generation that
        fitted one (HOP_RULE); records basis "derived" with the rule and the source, and
        the source strings; returns the fields changed ([] when no fitted generation is
        given).
    describe(doc) -> "its fixed costs derived from v5e and its hop latency from v4": what
        `doc` derived, for a label ("" when nothing).

Why this rule (docs/hardware-profiles.md): the fixed cost is the launch, synchronisation and
DMA set-up of one collective, paid once whatever the bytes (the per-step cost is
hop_latency). It is set by the chip's DMA engines and how a collective is synchronised over
the ICI, so it is taken from the generation built the same way: the same torus rank (2-D:
v5e, v6e; 3-D: v4, v5p, TPU7x) and TensorCores per chip (TPU7x's two cores synchronise over
the die-to-die link as well), ties going to the nearest link bandwidth. For v6e that is v5e,
its predecessor in the same line. No fitted generation measured two XLA collective kinds (v4's
permute points are single DMAs), so the data cannot tell a kind's cost from a generation's;
one figure per generation is the simplest rule they allow. The hop latency is what one ICI
hop adds to a transfer (the router and the link), a property of the interconnect, not of a
collective: it is taken from the
closest generation whose points separated it (points that differ in hops), by the same
closeness.
"""

from __future__ import annotations

import math

from aoizora.hardware import field_basis

RULE = ("fixed per-collective cost of the closest fitted generation (same torus rank and "
        "TensorCores per chip, then the nearest link bandwidth): its figure for the same kind "
        "where it fitted one, else the mean of the kinds it fitted")
HOP_RULE = ("hop latency of the closest generation that fitted one (same torus rank and "
            "TensorCores per chip, then the nearest link bandwidth): the per-hop delay of "
            "the ICI, fitted where points differ in hops")


def needed(points, generation: str) -> bool:
    from aoizora.hardware.fit_parameters import WHOLE_PROGRAMS

    return not any(p.generation == generation and not p.held_out
                   and p.kind not in WHOLE_PROGRAMS for p in points)


def _fitted_hop(doc: dict) -> bool:
    return "hop_latency" in ((doc.get("provenance") or {}).get("fitted_parameters") or [])


def _fitted_costs(doc: dict) -> dict[str, float]:
    """kind -> the fixed cost a fit set in `doc` (its fitted_parameters)."""
    names = (doc.get("provenance") or {}).get("fitted_parameters") or []
    return {n.split(".", 1)[1]: float(doc["collective_latency"][n.split(".", 1)[1]])
            for n in names if n in field_basis.FIXED_COSTS}


def torus_rank(generation: str) -> int:
    """Axes of the generation's slices in the catalog (2: v5e, v6e; 3: v4, v5p, TPU7x)."""
    from aoizora import _core

    for name in _core.catalog_names():
        gen, _, dims = name.partition(":")
        if gen == generation:
            return len(dims.split("x"))
    return 0


def shipped() -> list[dict]:
    from aoizora import _core
    from aoizora.hardware import hardware_file

    gens = sorted({n.partition(":")[0] for n in _core.catalog_names()})
    return [hardware_file.shipped(g) for g in gens]


def closest(doc: dict, fitted: list[dict], has=_fitted_costs) -> dict | None:
    mine = (torus_rank(doc["generation"]), doc.get("cores_per_chip", 1))
    pool = [f for f in fitted if f["generation"] != doc["generation"] and has(f)]
    if not pool:
        return None
    return min(pool, key=lambda f: (torus_rank(f["generation"]) != mine[0],
                                    f.get("cores_per_chip", 1) != mine[1],
                                    abs(math.log(f["link_bandwidth"] / doc["link_bandwidth"])),
                                    f["generation"]))


def derive(doc: dict, fitted: list[dict]) -> list[str]:
    return _derive_costs(doc, fitted) + _derive_hop(doc, fitted)


def _basis(doc: dict) -> dict:
    prov = doc.setdefault("provenance", {})
    return prov.setdefault("basis", field_basis.all_nominal(doc))


def _derive_costs(doc: dict, fitted: list[dict]) -> list[str]:
    src = closest(doc, fitted)
    if src is None:
        return []
    costs = _fitted_costs(src)
    mean = sum(costs.values()) / len(costs)
    basis = _basis(doc)
    changed = []
    for kind in field_basis.KINDS:
        name = f"collective_latency.{kind}"
        if basis[name]["basis"] != field_basis.NOMINAL:
            continue
        own = kind in costs
        doc["collective_latency"][kind] = costs[kind] if own else mean
        basis[name] = {"basis": field_basis.DERIVED, "rule": RULE,
                       "from": f"{src['generation']} collective_latency." + (
                           kind if own else "/".join(sorted(costs)))}
        changed.append(name)
    if changed:
        doc["provenance"].setdefault("sources", {})["collective_latency"] = (
            f"derived from {src['generation']}'s fitted fixed costs "
            f"({', '.join(f'{k} {v * 1e6:.4g} us' for k, v in sorted(costs.items()))}) by the "
            f"rule: {RULE}; no collective point of {doc['generation']} to fit them to")
    return changed


def _derive_hop(doc: dict, fitted: list[dict]) -> list[str]:
    src = closest(doc, fitted, has=_fitted_hop)
    if src is None:
        return []
    basis = _basis(doc)
    if basis["hop_latency"]["basis"] != field_basis.NOMINAL:
        return []
    doc["hop_latency"] = float(src["hop_latency"])
    basis["hop_latency"] = {"basis": field_basis.DERIVED, "rule": HOP_RULE,
                            "from": f"{src['generation']} hop_latency"}
    doc["provenance"].setdefault("sources", {})["hop_latency"] = (
        f"derived from {src['generation']}'s fitted hop latency ({src['hop_latency'] * 1e6:.4g} "
        f"us) by the rule: {HOP_RULE}; no point of {doc['generation']} differs in hops")
    return ["hop_latency"]


def describe(doc: dict) -> str:
    """What the profile derived, by source: for the base's label."""
    derived = field_basis.summary(doc)["derived"]
    costs = sorted({d["from"].split()[0] for d in derived if d["field"] != "hop_latency"})
    hop = [d["from"].split()[0] for d in derived if d["field"] == "hop_latency"]
    parts = ([f"its fixed costs derived from {', '.join(costs)}"] if costs else []) + (
        [f"its hop latency {'from' if costs else 'derived from'} {hop[0]}"] if hop else [])
    return " and ".join(parts)

"""How each field of a hardware profile was obtained (provenance.basis, topo/profile.h):
`fitted` by `aoizora calibrate` to measured points of its generation, `derived` from fitted
generations by a stated rule (derive_fixed_costs.py), or `nominal` (the vendor's or
REFERENCE.md's figure, or the simulator's former constant).

    fields(doc) -> [str]: the fields a profile's basis covers, in the profile's order (the C++
        core's basis_fields: collective_latency per kind, intra_chip_link on two-core chips).
    stated(doc) -> {field: {"basis", ["from", "rule"]}} or None when the profile states none
        (a user's profile from before the field existed).
    all_nominal(doc) -> the basis of a profile nothing was fitted to: every field nominal.
    after_fit(base, fitted) -> the basis of a fit's result: the base's (all nominal when it
        states none) with the figures the fit set (`fitted`, parameter names) fitted.
    summary(doc) -> {"stated": bool, "fitted": [...], "derived": [{"field", "from", "rule"}],
        "nominal": [...]}: what plan.json, `aoizora topology --json` and the report record.
    sentence(summary) -> one line for people.
    of_profile(generation, hardware=None) -> summary of the profile in use: the file
        `hardware`, else the shipped profile of `generation` (not stated for a topology
        file's own figures, generation "custom").
"""

from __future__ import annotations

FITTED, DERIVED, NOMINAL = "fitted", "derived", "nominal"
_FIGURES = ("peak_flops", "hbm_bytes", "hbm_bandwidth", "mxu_size", "mxu_efficiency",
            "link_bandwidth", "hop_latency", "vector_ops_per_second",
            "transcendentals_per_second", "grid_step_seconds")
KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute",
         "collective-broadcast")
FIXED_COSTS = tuple(f"collective_latency.{k}" for k in KINDS)


def fields(doc: dict) -> list[str]:
    out = list(_FIGURES) + list(FIXED_COSTS) + ["cores_per_chip"]
    return out + (["intra_chip_link"] if doc.get("intra_chip_link") else [])


def stated(doc: dict) -> dict | None:
    prov = doc.get("provenance") or {}
    return prov.get("basis") or None


def all_nominal(doc: dict) -> dict:
    return {f: {"basis": NOMINAL} for f in fields(doc)}


def after_fit(base: dict, fitted) -> dict:
    basis = {f: dict(b) for f, b in (stated(base) or all_nominal(base)).items()}
    for name in fitted:
        basis[name] = {"basis": FITTED}
    return basis


def summary(doc: dict) -> dict:
    basis = stated(doc)
    if basis is None:
        return {"stated": False, "fitted": [], "derived": [], "nominal": []}
    order = fields(doc)
    names = sorted(basis, key=lambda f: order.index(f) if f in order else len(order))
    return {"stated": True,
            "fitted": [f for f in names if basis[f]["basis"] == FITTED],
            "derived": [{"field": f, "from": basis[f]["from"], "rule": basis[f]["rule"]}
                        for f in names if basis[f]["basis"] == DERIVED],
            "nominal": [f for f in names if basis[f]["basis"] == NOMINAL]}


def sentence(s: dict) -> str:
    if not s["stated"]:
        return ("the profile does not say which of its figures are fitted, derived or "
                "nominal: treat every one as nominal")
    by_source: dict[str, list[str]] = {}   # one clause per source, not one per field
    for d in s["derived"]:
        by_source.setdefault(d["from"], []).append(_short(d["field"]))
    derived = "; ".join(f"{', '.join(f)} from {src}" for src, f in by_source.items())
    parts = [f"fitted: {', '.join(s['fitted']) or 'none'}"]
    parts += [f"derived: {derived}"] if derived else []
    parts += [f"nominal: {', '.join(s['nominal'])}"] if s["nominal"] else []
    return "; ".join(parts)


def _short(name: str) -> str:
    """collective_latency.all-gather -> all-gather latency."""
    return f"{name.split('.', 1)[1]} latency" if name in FIXED_COSTS else name


def of_profile(generation: str, hardware: str | None = None) -> dict:
    import json

    from aoizora import _core   # not hardware_file: it imports fitted_profile, which imports this

    if hardware:
        with open(hardware, encoding="utf-8") as f:
            return summary(json.load(f))
    try:
        return summary(json.loads(_core.hardware_profile(generation)))
    except _core.CoreError:   # a topology file's own chip figures: no profile to state it
        return summary({})

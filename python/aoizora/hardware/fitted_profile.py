"""The profile `aoizora calibrate` writes: the base profile with the fitted figures, and a
provenance that says what was fitted, to which points, when, and how well.

    document(fit, measurements_file, measured_on=None, harness_check=False) -> dict in the
        aoizora.hardware/1 format, with provenance: fitted true, note, fitted_to (the ids of
        the points used), fitted_on (the fit's UTC date), fitted_parameters, residuals (id ->
        {"before", "after"}, the relative error (simulated - measured) / measured on the base
        and the fitted profile), basis (field -> fitted, derived or nominal: the base's, with
        the figures this fit set fitted; field_basis.py), and, for every fitted figure, its
        source. measured_on: where
        the file says its points were timed (None: published points). harness_check: the
        points are CPU-device timings (`aoizora measure --platform cpu`); the note then opens
        with HARNESS_CHECK.
    harness_check(doc) -> bool: the profile document was fitted to CPU-device timings.
    write(path, doc) -> None: the document as indented JSON, written atomically once the C++
        core's check (topo/profile.h) has read it back.

The profile format has no field for "harness check" (topo/profile.h refuses unknown
provenance keys), so the mark is the note's first words, HARNESS_CHECK; hardware_file.check
reads it and every command that loads such a profile says so.
"""

from __future__ import annotations

import json
import os
import tempfile

from aoizora import atomic
from aoizora.hardware import field_basis
from aoizora.hardware.fit_parameters import WHOLE_PROGRAMS
from aoizora.hardware.fit_parameters import describe as _value

HARNESS_CHECK = "HARNESS CHECK, not a TPU profile: fitted to CPU-device timings"


def harness_check(doc: dict) -> bool:
    prov = doc.get("provenance") if isinstance(doc, dict) else None
    note = prov.get("note") if isinstance(prov, dict) else None
    return isinstance(note, str) and note.startswith(HARNESS_CHECK)


def _points_phrase(n: int, generation: str, measured_on: str | None, harness: bool) -> str:
    if harness:
        return f"{n} CPU-device timings standing in for {generation}"
    if measured_on:
        return f"{n} points of {generation} measured on {measured_on}"
    return f"{n} published measurements of {generation}"


def document(fit, measurements_file: str, measured_on: str | None = None,
             harness_check: bool = False) -> dict:
    doc = json.loads(json.dumps(fit.profile))
    used = [p.id for p in fit.points if p.used]
    fitted = [p for p in fit.parameters if p.fitted]
    kept = [p for p in fit.parameters if not p.fitted]
    prov = dict(doc.get("provenance") or {})
    sources = dict(prov.get("sources") or {})
    points = _points_phrase(len(used), fit.generation, measured_on, harness_check)
    where = (f"fitted by `aoizora calibrate` on {fit.date} to {points} "
             f"({os.path.basename(measurements_file)}: {', '.join(used)})")
    latency_parts = []
    for p in fitted:
        line = f"{where}; base {fit.base_label}: {_value(p.unit, p.base)}"
        if p.name.startswith("collective_latency."):
            latency_parts.append(f"{p.name.split('.', 1)[1]}: {line}")
        else:
            sources[p.name] = line
    if latency_parts:
        old = sources.get("collective_latency", "")
        sources["collective_latency"] = "; ".join(latency_parts) + (
            f"; other kinds: {old}" if old else "")
    before, after = fit.rms_log("before_s"), fit.rms_log("after_s")
    note = (f"Fitted to {points} by least squares on log time (simulator as the model): "
            f"{', '.join(f'{p.name} {_value(p.unit, p.value)}' for p in fitted)}. "
            f"Kept from the base ({fit.base_label}): "
            f"{'; '.join(f'{p.name}: {p.reason}' for p in kept) or 'every other figure'}. "
            f"RMS error of log time {before:.3f} before, {after:.3f} after. Not fitted: "
            + ("" if any(p.kind in WHOLE_PROGRAMS for p in fit.points if p.used) else
               "the compute figures (no whole program among the points), ")
            + ("" if any(p.kind not in WHOLE_PROGRAMS for p in fit.points if p.used) else
               "the link and latency figures (no collective point among the points: a whole "
               "program's time cannot tell a slower link from slower matmuls), ")
            + "peak FLOP/s and HBM bandwidth (the vendor's figures) and the attention kernel's "
            "vector, EUP and grid-step figures (nominal, each by its stated rule)." +
            "".join(f" Note: {n}." for n in fit.notes if "kept at the base value" not in n))
    note += _derived_note(doc)
    if harness_check:
        note = (f"{HARNESS_CHECK} (aoizora measure --platform cpu), a check of the "
                "measurement harness; its figures describe no TPU. " + note)
    prov.update({
        "fitted": True, "note": note, "fitted_to": used, "fitted_on": fit.date,
        "fitted_parameters": [p.name for p in fitted], "sources": sources,
        "basis": field_basis.after_fit(doc, [p.name for p in fitted]),
        "residuals": {p.id: {"before": round(p.error_before, 4),
                             "after": round(p.error_after, 4)}
                      for p in fit.points if p.used},
    })
    doc["provenance"] = prov
    return doc


def _derived_note(doc: dict) -> str:
    """The base's derived figures (derive_fixed_costs.py), which the fit kept."""
    derived = field_basis.summary(doc)["derived"]
    if not derived:
        return ""
    by_rule: dict[str, list[dict]] = {}   # one clause per rule, naming its fields and sources
    for d in derived:
        by_rule.setdefault(d["rule"], []).append(d)
    return " Derived before the fit, not fitted: " + "; ".join(
        f"{', '.join(d['field'] for d in ds)} (from "
        f"{', '.join(sorted({d['from'] for d in ds}))}; rule: {rule})"
        for rule, ds in by_rule.items()) + "."


def write(path: str, doc: dict) -> None:
    from aoizora import _core

    text = json.dumps(doc, indent=2) + "\n"
    with tempfile.TemporaryDirectory(prefix="aoizora-profile-") as folder:
        tmp = os.path.join(folder, "profile.json")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        _core.check_hardware_profile(tmp)
    atomic.write_atomic(path, text)

"""Error bands: how far a simulated latency may lie from the real one, per chip generation,
for communication and for compute apart, taken from the calibration's out-of-sample
residuals (leave_one_out.py: each point predicted by the fit to the other points alone).

A residual is e = (predicted - real) / real. A generation's band for a part is
B = max |e| over its residuals of that part: collective points for communication, whole
programs (a step or a video) for compute. A held-out point (never fitted to) counts as a
residual too: the fit to every used point predicts it without having seen it. The real time
of a part predicted at t then lies in [t / (1 + B), t / (1 - B)] (bounds()), if the part errs
no worse than the worst residual did.

A generation with no residual of a part (no point of that kind, or its only point, which
cannot be left out) takes the largest band of that part among the generations that have one;
its basis says so ("derived", with "from" and "rule"), as field_basis.py does for profile
fields. A generation the file does not know (a topology file's "custom") is derived likewise.

    write(path, rows, data) -> None: the residuals file (aoizora.loo-residuals/1) from
        bench/fidelity.py --leave-one-out's rows; bench/fidelity.py --record writes it.
    read(path=RESIDUALS) -> [dict]: its residual rows; UserError on an unreadable file.
    of_residuals(rows) -> {generation: Bands} for every generation among the rows.
    for_generation(generation, rows=None) -> Bands (rows: the shipped file's by default).

Pure functions of the rows; deterministic. Who uses them: intervals.py, the planner.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from aoizora.errors import UserError
from aoizora.hardware.field_basis import KINDS

SCHEMA = "aoizora.loo-residuals/1"
RESIDUALS = os.path.join(os.path.dirname(__file__), "loo_residuals.json")
COMMUNICATION, COMPUTE = "communication", "compute"
OWN, DERIVED = "residuals", "derived"
DERIVED_RULE = ("no residual of its own for this part: the largest band of that part among "
                "the generations that have one")


def part_of(kind: str) -> str:
    """The part a residual of point kind `kind` measures: a collective's is communication, a
    whole program's (a step or a video, mostly compute) is compute."""
    return COMMUNICATION if kind in KINDS else COMPUTE


@dataclass(frozen=True)
class Band:
    rel: float                        # B: the largest |relative error|, a fraction (0.11)
    basis: str                        # OWN: this generation's residuals; DERIVED: others'
    worst: str = ""                   # the residual's point that sets it (id)
    points: tuple[str, ...] = ()      # the residuals it is the largest of (ids)
    source: str = ""                  # DERIVED: the generation it is taken from
    rule: str = ""                    # DERIVED: the rule

    def bounds(self, seconds: float) -> tuple[float, float]:
        """[low, high] for a part predicted at `seconds`: seconds / (1 + B), seconds / (1 - B);
        high is infinite for B >= 1 (the part may be any slower)."""
        high = seconds / (1 - self.rel) if self.rel < 1 else float("inf")
        return seconds / (1 + self.rel), high

    def record(self) -> dict:
        out = {"rel": self.rel, "basis": self.basis, "worst": self.worst,
               "points": list(self.points)}
        return out | ({"from": self.source, "rule": self.rule} if self.basis == DERIVED else {})


@dataclass(frozen=True)
class Bands:
    generation: str
    communication: Band
    compute: Band
    notes: tuple[str, ...] = field(default=())

    def record(self) -> dict:
        return {"generation": self.generation, COMMUNICATION: self.communication.record(),
                COMPUTE: self.compute.record(), "notes": list(self.notes)}


def write(path: str, rows: list[dict], data: str) -> None:
    """The residuals file: one row per point of bench/fidelity.py --leave-one-out (id,
    generation, kind, left_out_error_pct or None, why_not, held_out)."""
    from aoizora.atomic import write_atomic

    keep = ("id", "generation", "kind", "left_out_error_pct", "why_not", "held_out")
    doc = {"schema": SCHEMA, "data": data,
           "made_by": "bench/fidelity.py --leave-one-out --record FILE (do not edit)",
           "points": [{k: r.get(k) for k in keep} for r in rows]}
    write_atomic(path, json.dumps(doc, indent=1) + "\n")


def read(path: str = RESIDUALS) -> list[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise UserError(f"cannot read the leave-one-out residuals {path}: {e}") from None
    if doc.get("schema") != SCHEMA:
        raise UserError(f"{path}: not {SCHEMA}: found {doc.get('schema')!r}")
    return doc["points"]


def _own(rows: list[dict], generation: str, part: str) -> Band | None:
    mine = [r for r in rows if r["generation"] == generation and part_of(r["kind"]) == part
            and r.get("left_out_error_pct") is not None]
    if not mine:
        return None
    worst = max(mine, key=lambda r: abs(r["left_out_error_pct"]))
    return Band(abs(worst["left_out_error_pct"]) / 100, OWN, worst["id"],
                tuple(r["id"] for r in mine))


def of_residuals(rows: list[dict]) -> dict[str, Bands]:
    """Every generation's bands (module doc), in the rows' order of generations."""
    gens = list(dict.fromkeys(r["generation"] for r in rows))
    own = {(g, part): _own(rows, g, part) for g in gens for part in (COMMUNICATION, COMPUTE)}
    return {g: _bands(g, own, rows) for g in gens}


def _derived(own: dict, part: str) -> Band:
    have = [(g, b) for (g, p), b in own.items() if p == part and b is not None]
    if not have:
        raise UserError(f"no generation has a leave-one-out residual of {part}: no band")
    g, b = max(have, key=lambda gb: gb[1].rel)
    return Band(b.rel, DERIVED, b.worst, b.points, g, DERIVED_RULE)


def _bands(generation: str, own: dict, rows: list[dict]) -> Bands:
    comm = own.get((generation, COMMUNICATION)) or _derived(own, COMMUNICATION)
    comp = own.get((generation, COMPUTE)) or _derived(own, COMPUTE)
    alone = [r["id"] for r in rows if r["generation"] == generation and r.get("why_not")]
    notes = tuple(f"{i} cannot be left out ({next(r['why_not'] for r in rows if r['id'] == i)})"
                  for i in alone)
    return Bands(generation, comm, comp, notes)


def for_generation(generation: str, rows: list[dict] | None = None) -> Bands:
    """`generation`'s bands; one the rows do not know gets the derived band of each part."""
    rows = read() if rows is None else rows
    bands = of_residuals(rows)
    if generation in bands:
        return bands[generation]
    own = {(g, part): getattr(b, part) for g, b in bands.items()
           for part in (COMMUNICATION, COMPUTE) if getattr(b, part).basis == OWN}
    return Bands(generation, _derived(own, COMMUNICATION), _derived(own, COMPUTE),
                 (f"{generation}: no calibration point of its own",))

"""Leave-one-out: how well a generation's fit predicts a point it was not fitted to.

    run(measurements, base, generation, date="") -> [Row], one per point of `generation` the
        fit uses (held-out points are no part of it), in file order. For each, the profile is
        fitted by calibrate.fit (the same fit, parameters and rules as `aoizora calibrate`)
        to all those points (in-sample) and to all but that one, which calibrate.fit then
        simulates on the profile it fitted without it (the leave-one-out prediction). A
        generation with one point cannot leave it out: its row says so and has no
        leave-one-out figure. UserError when the generation has no point to fit.
        checks=True adds a row per held-out point of `generation` after them (Row.held_out
        says why it is held out): the fit to every used point never saw it, so that fit's
        prediction is its leave-one-out figure as well.

The left-out point is marked held out for its fit, which calibrate.fit never fits to: the
fit that predicts it has not seen it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from aoizora.hardware import calibrate, hosts
from aoizora.hardware.measurements import Measurements

LEFT_OUT = "left out for leave-one-out"


@dataclass
class Row:
    id: str
    generation: str
    kind: str
    measured_s: float
    in_sample_s: float           # simulated on the profile fitted to every point
    left_out_s: float | None     # simulated on the profile fitted without this point
    why_not: str = ""            # why there is no leave-one-out figure
    held_out: str = ""           # a held-out check (never fitted to): why it is held out

    @property
    def in_sample_error(self) -> float:
        return (self.in_sample_s - self.measured_s) / self.measured_s

    @property
    def left_out_error(self) -> float | None:
        if self.left_out_s is None:
            return None
        return (self.left_out_s - self.measured_s) / self.measured_s


def _without(m: Measurements, point_id: str) -> Measurements:
    """The same measurements with one point held out (never fitted to, simulated as a check)."""
    def mark(p):
        return dataclasses.replace(p, held_out=LEFT_OUT) if p.id == point_id else p
    return Measurements([mark(p) for p in m.points], [mark(p) for p in m.programs],
                        m.provenance)


def run(m: Measurements, base: dict, generation: str, date: str = "",
        checks: bool = False) -> list[Row]:
    whole = calibrate.fit(m, base, generation, "leave-one-out base", date)
    used = [p for p in whole.points if p.used]
    rows = []
    for p in used:
        row = Row(p.id, generation, p.kind, p.measured_s, p.after_s, None)
        if len(used) == 1:
            row.why_not = "the generation's only point: nothing left to fit without it"
        else:
            # A host figure fitted with this point (hardware/hosts.json) saw it: the fit
            # without it takes the nominal host instead.
            with hosts.not_fitted_to(p.id):
                fit = calibrate.fit(_without(m, p.id), base, generation, "leave-one-out base",
                                    date)
            row.left_out_s = next(q.after_s for q in fit.points if q.id == p.id)
        rows.append(row)
    if checks:
        rows += [Row(p.id, generation, p.kind, p.measured_s, p.after_s, p.after_s,
                     held_out=p.held_out) for p in whole.points if not p.used]
    return rows

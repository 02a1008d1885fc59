"""Fitting a hardware profile to measured collective times: least squares
on log time, with the simulator as the model.

    fit(measurements, base, generation, base_label, date) -> Fit
        measurements: measurements.Measurements; base: a profile dict (aoizora.hardware/1)
        of `generation`. Fits, per generation (one value for all points, never one per
        point), the parameters of fit_parameters.py the used points determine; the others
        keep the base's value and the Fit says why. Points held out, and points of other
        generations, are never fitted to: a held-out point of `generation` is simulated on
        the fitted profile as a check. Raises UserError when there is no point to fit.

The model of a collective point is single_collective.simulate (the C++ flow-level simulator,
one collective alone) on a profile file; of a whole program (one step, or one video: text
encoder, steps x step, VAE decode, reshards) its compiled programs simulated on the same
simulator (program_points.py). The residual is log(simulated) - log(measured), so a 10 % miss
weighs the same on 5 us as on 800 us. Deterministic for the same input.
"""

from __future__ import annotations

import copy
import json
import math
import os
import tempfile
from dataclasses import dataclass, field

import numpy as np

from aoizora.hardware import fit_parameters
from aoizora.errors import UserError

# After the fit, a point off by more than this fraction is reported as inconsistent with the
# others under the model (the acceptance bound), never fitted away.
INCONSISTENT = 0.15
SIGNIFICANT = 4   # digits a fitted figure keeps


@dataclass
class PointFit:
    id: str
    kind: str
    bytes_per_device: int
    measured_s: float          # from the measurements file
    before_s: float            # simulated on the base profile
    after_s: float             # simulated on the fitted profile
    used: bool                 # fitted to (False: held out, a check only)
    approximate: bool
    held_out: str = ""

    @property
    def error_before(self) -> float:
        return (self.before_s - self.measured_s) / self.measured_s

    @property
    def error_after(self) -> float:
        return (self.after_s - self.measured_s) / self.measured_s


@dataclass
class ParameterFit:
    name: str
    unit: str
    meaning: str
    base: float
    value: float
    fitted: bool
    reason: str = ""           # why it kept the base value; or a bound it stopped at


@dataclass
class Fit:
    generation: str
    base_label: str
    date: str
    profile: dict
    parameters: list = field(default_factory=list)   # [ParameterFit]
    points: list = field(default_factory=list)       # [PointFit], file order
    unused: list = field(default_factory=list)       # [(id, why not used)]
    notes: list = field(default_factory=list)        # [str]

    def rms_log(self, attr: str) -> float:
        used = [p for p in self.points if p.used]
        r = [math.log(getattr(p, attr) / p.measured_s) for p in used]
        return math.sqrt(sum(x * x for x in r) / len(r))


class _Model:
    """Simulated seconds of points on a profile dict (written to a temporary file)."""

    def __init__(self, folder: str):
        self._path = os.path.join(folder, "profile.json")
        self.calls = 0

    def seconds(self, profile: dict, points) -> np.ndarray:
        with open(self._path, "w", encoding="utf-8") as f:
            json.dump(profile, f)
        self.calls += 1
        return np.array([p.simulate(self._path) for p in points])


def _with(base: dict, params, x) -> dict:
    prof = copy.deepcopy(base)
    for p, xi in zip(params, x):
        p.set(prof, p.from_x(float(xi)))
    return prof


def _x_bounds(params, base: dict):
    lo, hi, x0 = [], [], []
    for p in params:
        b = p.get(base)
        a, z = p.bounds(b)
        lo.append(p.to_x(a))
        hi.append(p.to_x(z))
        x0.append(min(max(p.to_x(b), lo[-1]), hi[-1]))
    return np.array(x0), np.array(lo), np.array(hi)


def _sensitivity(model, base, params, points) -> np.ndarray:
    """d log t_i / d x_j at the base (forward differences, stepping into the range)."""
    x0, lo, hi = _x_bounds(params, base)
    t0 = np.log(model.seconds(_with(base, params, x0), points))
    cols = []
    for j in range(len(params)):
        h = {"B/s": 0.05, "s": 0.2}.get(params[j].unit, 0.02)  # 5 % of bandwidth, 0.2 us
        x = x0.copy()
        x[j] = x0[j] + h if x0[j] + h <= hi[j] else x0[j] - h
        cols.append((np.log(model.seconds(_with(base, params, x), points)) - t0) / (x[j] - x0[j]))
    return np.array(cols).T


def _least_squares(model, base, params, points, measured_log):
    from scipy.optimize import least_squares

    x0, lo, hi = _x_bounds(params, base)

    def residuals(x):
        return np.log(model.seconds(_with(base, params, x), points)) - measured_log

    if not params:   # nothing the points determine: the base stands
        return x0, lo, hi
    r = least_squares(residuals, x0, bounds=(lo, hi), method="trf", diff_step=1e-4,
                      xtol=1e-10, ftol=1e-10, gtol=1e-10, max_nfev=400)
    return r.x, lo, hi


def _rounded(profile: dict, params) -> dict:
    """Fitted figures to SIGNIFICANT digits (the data do not tell more), kept in range."""
    for p in params:
        v = p.get(profile)
        p.set(profile, float(f"{v:.{SIGNIFICANT}g}") if v else 0.0)
    return profile


def _describe(p, value: float) -> str:
    return fit_parameters.describe(p.unit, value)


def fit(measurements, base: dict, generation: str, base_label: str, date: str) -> Fit:
    mine = [p for p in measurements.points + [q for q in measurements.programs if q.hlo]
            if p.generation == generation]
    used = [p for p in mine if not p.held_out]
    held = [p for p in mine if p.held_out]
    if not used:
        raise UserError(f"no measured point of generation {generation} to fit"
                        + (f" ({len(held)} held out)" if held else "")
                        + ": pick another with --base")
    measured_log = np.log([p.seconds for p in used])
    params = fit_parameters.candidates(p.kind for p in used)
    with tempfile.TemporaryDirectory(prefix="aoizora-calibrate-") as folder:
        model = _Model(folder)
        sens = _sensitivity(model, base, params, used)
        kept, why = fit_parameters.determinable(params, sens)
        x, lo, hi = _least_squares(model, base, kept, used, measured_log)
        fitted = _rounded(_with(base, kept, x), kept)
        before = model.seconds(base, used + held)
        after = model.seconds(fitted, used + held)
    out = Fit(generation, base_label, date, fitted)
    for i, p in enumerate(used + held):
        out.points.append(PointFit(p.id, p.kind, p.bytes_per_device, p.seconds, float(before[i]),
                                   float(after[i]), used=not p.held_out,
                                   approximate=p.approximate, held_out=p.held_out))
    order = {p.id: i for i, p in enumerate(measurements.points + measurements.programs)}
    out.points.sort(key=lambda q: order[q.id])
    for p in params:
        j = kept.index(p) if p in kept else -1
        reason = why.get(p.name, "")
        if j >= 0 and (abs(x[j] - lo[j]) < 1e-9 or abs(x[j] - hi[j]) < 1e-9):
            reason = f"stopped at the edge of its physical range ({p.meaning})"
        out.parameters.append(ParameterFit(p.name, p.unit, p.meaning, p.get(base), p.get(fitted),
                                           j >= 0, reason))
    out.unused = _unused(measurements, generation)
    out.notes = _notes(out) + _single_point_notes(params, kept, sens, used)
    return out


def _unused(measurements, generation: str) -> list:
    rows = [(p.id, f"generation {p.generation}") for p in measurements.points
            if p.generation != generation]
    for prog in measurements.programs:
        if not prog.hlo:
            rows.append((prog.id, "a whole program without a compiled HLO to simulate"))
        elif prog.generation != generation:
            rows.append((prog.id, f"generation {prog.generation}"))
    return rows


def _single_point_notes(params, kept, sens, used) -> list:
    """A fitted parameter only one point depends on matches that point by construction
    (`sens`: d log t / d x, a row per used point, a column per parameter of `params`)."""
    notes = []
    for p in kept:
        j = params.index(p)
        on = [q.id for i, q in enumerate(used)
              if abs(sens[i, j]) >= fit_parameters.MIN_SENSITIVITY]
        if len(on) == 1:
            notes.append(f"{p.name} is set by one point alone ({on[0]}): that point matches "
                         "by construction and cannot check it; only other measurements can")
    return notes


def _notes(f: Fit) -> list:
    notes = []
    for p in f.parameters:
        if p.fitted and p.reason:
            notes.append(f"{p.name} {p.reason}: the model cannot match these points inside it")
        if p.fitted and p.unit == "B/s" and p.value > p.base * 1.001:
            notes.append(f"{p.name} fitted above the base figure ({_describe(p, p.value)} > "
                         f"{_describe(p, p.base)}): the hardware moves more bytes than the "
                         "model's links and algorithm allow (e.g. it uses more links per "
                         "neighbour); the figure is an effective one for this model")
        if not p.fitted:
            notes.append(f"{p.name} kept at the base value {_describe(p, p.base)}: {p.reason}")
    n_fitted = sum(p.fitted for p in f.parameters)
    if n_fitted >= sum(q.used for q in f.points):
        notes.append(f"{n_fitted} parameters for {sum(q.used for q in f.points)} points: the fit "
                     "is exact by construction, so these points cannot check the model; only "
                     "other measurements can")
    for q in f.points:
        if q.used and abs(q.error_after) > INCONSISTENT:
            notes.append(f"point {q.id} is {100 * q.error_after:+.1f} % off after the fit: "
                         "inconsistent with the other points under this model (one value per "
                         "generation); reported, not fitted away")
    return notes

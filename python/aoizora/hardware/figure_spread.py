"""How well each figure of a hardware profile is known: a spread per figure, per generation,
and seeded joint draws of a whole profile from those spreads.

A figure's true value is taken as its profile value times a log-normal factor exp(s * z),
z ~ N(0, 1), with s the figure's spread (a fraction of log time; s = 0.1 is about +-16 % at
90 %). Where the spread of a figure comes from (`basis`):

    fitted      the figure was fitted (`aoizora calibrate`) and its generation has
                leave-one-out residuals of the part it prices (error_bands.py: collective
                points for communication, whole programs for compute): s is their root mean
                square in log time, sqrt(mean(log(1 + e)^2)). A point's time moves one for
                one with the figure it is most sensitive to, so the spread of the figure is
                that of the residuals.
    derived     the figure is not fitted, or its generation has no residual of its part: the
                largest such spread of that part among the generations that have one (the
                error bands' rule, error_bands.DERIVED_RULE).
    nominal     a figure set by a rule with no measurement behind it (the attention kernel's
                vector, EUP and grid-step figures, the fixed per-collective and per-hop
                latencies, the die-to-die link): a factor of 2 either way at 90 %
                (s = ln 2 / 1.645), stated, not measured.
    vendor      the vendor's peak FLOP/s, HBM capacity and MXU size: not drawn; what is
                achieved of the peak is mxu_efficiency's spread.

A generation's own spreads are widened so that every one of its leave-one-out points lies
inside its 90 % interval (widening(): the held-out coverage before widening is the check,
docs/hardware-profiles.md; after it, coverage is complete by construction). Draws are independent per figure and shared by every row a plan
prices: a compute error moves every candidate's compute together, which is what lets a
comparison be surer than either of its times.

    spreads(doc, generation, rows=None) -> {figure: Spread}
    draw(doc, spreads, n, seed) -> [dict]: n profile documents, figures scaled; seeded
    widening(rows) -> {generation: w >= 1}: the least factor on a generation's own spreads
        that puts each of its leave-one-out points inside its 90 % interval
    coverage(rows, widen=None) -> [dict]: per generation and part, the leave-one-out points
        inside their 90 % interval (each point's spread from the other points alone)

Pure functions; the same (doc, spreads, n, seed) give the same draws in any process.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

from aoizora.hardware import error_bands
from aoizora.hardware.error_bands import COMMUNICATION, COMPUTE

Z90 = 1.6448536269514722          # the standard normal's 95th percentile: a 90 % interval
NOMINAL_SPREAD = math.log(2) / Z90  # a factor of 2 either way at 90 %
FITTED, DERIVED, NOMINAL, VENDOR = "fitted", "derived", "nominal", "vendor"

# figure -> the part its error shows in, and whether it is a rule's figure with no
# measurement that could be fitted to it (NOMINAL) even where its generation has residuals
_FIGURES = {
    "mxu_efficiency": (COMPUTE, False),
    "hbm_bandwidth": (COMPUTE, False),
    "vector_ops_per_second": (COMPUTE, True),
    "transcendentals_per_second": (COMPUTE, True),
    "grid_step_seconds": (COMPUTE, True),
    "link_bandwidth": (COMMUNICATION, False),
    "hop_latency": (COMMUNICATION, True),
    "intra_chip_link": (COMMUNICATION, True),
}
_LATENCY = "collective_latency."
_NOT_DRAWN = ("peak_flops", "hbm_bytes", "mxu_size", "cores_per_chip")

@dataclass(frozen=True)
class Spread:
    figure: str     # "link_bandwidth", "collective_latency.all-gather", ...
    sigma: float    # s: the standard deviation of log(true / profile value)
    basis: str      # FITTED, DERIVED, NOMINAL
    source: str     # the residuals or the rule behind it, in words

    def record(self) -> dict:
        return {"figure": self.figure, "sigma": self.sigma, "basis": self.basis,
                "source": self.source}


def rms_log(errors_pct: list[float]) -> float:
    """sqrt(mean(log(1 + e)^2)) of relative errors given in percent."""
    return math.sqrt(sum(math.log1p(e / 100) ** 2 for e in errors_pct) / len(errors_pct))


def _residuals(rows: list[dict], generation: str, part: str) -> list[tuple[str, float]]:
    return [(r["id"], r["left_out_error_pct"]) for r in rows
            if r["generation"] == generation and error_bands.part_of(r["kind"]) == part
            and r.get("left_out_error_pct") is not None]


def part_spreads(rows: list[dict], widen: dict[str, float] | None = None
                 ) -> dict[tuple[str, str], tuple[float, str]]:
    """(generation, part) -> (s, what it is the spread of) for every generation with
    residuals of that part, times the generation's widening (widening(rows) by default)."""
    widen = widening(rows) if widen is None else widen
    out = {}
    for g in dict.fromkeys(r["generation"] for r in rows):
        w = widen.get(g, 1.0)
        for part in (COMMUNICATION, COMPUTE):
            res = _residuals(rows, g, part)
            if res:
                out[(g, part)] = (w * rms_log([e for _, e in res]),
                                  f"{g}'s {len(res)} leave-one-out {part} residual(s)"
                                  + (f", widened x{w:.2f}" if w > 1 else ""))
    return out


def _held_out(rows: list[dict], generation: str, part: str) -> list[tuple[str, float, float]]:
    """(id, |log(1 + e)|, s from the other points) of each residual of a part: a point never
    sets its own width; a point alone takes the largest spread of the other generations'."""
    res = _residuals(rows, generation, part)
    out = []
    for i, (pid, e) in enumerate(res):
        others = [x for j, (_, x) in enumerate(res) if j != i]
        s = rms_log(others) if others else _largest_other(rows, generation, part)
        out.append((pid, abs(math.log1p(e / 100)), s))
    return out


def widening(rows: list[dict]) -> dict[str, float]:
    """generation -> the least w >= 1 with |log(1 + e)| <= Z90 * w * s for each of its points
    (s from the other points), over both parts."""
    out = {}
    for g in dict.fromkeys(r["generation"] for r in rows):
        need = [err / (Z90 * s) for part in (COMMUNICATION, COMPUTE)
                for _, err, s in _held_out(rows, g, part) if s > 0]
        out[g] = max([1.0] + need)
    return out


def _part_spread(own: dict, generation: str, part: str, fitted: bool) -> tuple[float, str, str]:
    if fitted and (generation, part) in own:
        s, why = own[(generation, part)]
        return s, FITTED, why
    (g, _), (s, why) = max(((k, v) for k, v in own.items() if k[1] == part),
                           key=lambda kv: kv[1][0])
    return s, DERIVED, f"the largest {part} spread of any generation ({why})"


def _figure_names(doc: dict) -> list[str]:
    names = [f for f in _FIGURES if doc.get(f) is not None]
    return names + [_LATENCY + k for k in sorted(doc.get("collective_latency") or {})]


def spreads(doc: dict, generation: str, rows: list[dict] | None = None) -> dict[str, Spread]:
    """Each drawn figure's spread for a profile document `doc` of `generation` (module doc).
    `rows`: leave-one-out residual rows (the shipped file's by default)."""
    rows = error_bands.read() if rows is None else rows
    own = part_spreads(rows)
    fitted = set((doc.get("provenance") or {}).get("fitted_parameters") or [])
    out = {}
    for name in _figure_names(doc):
        part, by_rule = _FIGURES.get(name, (COMMUNICATION, True))
        if by_rule and name not in fitted:
            s, basis, why = NOMINAL_SPREAD, NOMINAL, "a rule's figure: x2 either way at 90 %"
        else:
            s, basis, why = _part_spread(own, generation, part, name in fitted)
        out[name] = Spread(name, s, basis, why)
    return out


def _scale(doc: dict, figure: str, factor: float) -> None:
    if figure.startswith(_LATENCY):
        doc["collective_latency"][figure[len(_LATENCY):]] *= factor
    elif figure == "intra_chip_link":
        doc["intra_chip_link"]["bandwidth"] /= factor
    elif figure == "mxu_efficiency":
        # the MXU rate is peak x efficiency; an efficiency drawn past 1 (a profile refuses
        # one) moves the excess into the peak, the same rate
        rate = doc[figure] / factor
        doc[figure] = min(rate, 1.0)
        doc["peak_flops"] *= max(rate, 1.0)
    elif figure in ("hbm_bandwidth", "link_bandwidth",
                    "vector_ops_per_second", "transcendentals_per_second"):
        doc[figure] /= factor       # a rate: a slower draw (factor > 1) is a smaller rate
    else:
        doc[figure] *= factor       # a time


def factors(spread: dict[str, Spread], n: int, seed: int) -> dict[str, np.ndarray]:
    """figure -> n factors on the time the figure prices (> 1: slower), seeded; the figures
    drawn in sorted order so that adding one leaves the others' draws alone."""
    rng = np.random.default_rng(seed)
    z = {f: rng.standard_normal(n) for f in sorted(spread)}
    return {f: np.exp(spread[f].sigma * z[f]) for f in sorted(spread)}


def draw(doc: dict, spread: dict[str, Spread], n: int, seed: int) -> list[dict]:
    """n copies of the profile `doc`, each figure of `spread` scaled by its draw."""
    f = factors(spread, n, seed)
    out = []
    for i in range(n):
        d = copy.deepcopy(doc)
        for figure in sorted(spread):
            _scale(d, figure, float(f[figure][i]))
        out.append(d)
    return out


def coverage(rows: list[dict], widen: dict[str, float] | None = None) -> list[dict]:
    """Per generation and part, how many leave-one-out points lie inside their 90 % interval:
    a point's interval is its left-out prediction times exp(+-Z90 * w * s), s the part's
    spread from the generation's *other* points, w the generation's widening (none by
    default: the held-out check itself)."""
    widen = widen or {}
    out = []
    for g in dict.fromkeys(r["generation"] for r in rows):
        w = widen.get(g, 1.0)
        for part in (COMMUNICATION, COMPUTE):
            pts = _held_out(rows, g, part)
            if not pts:
                continue
            outside = [pid for pid, err, s in pts if err > Z90 * w * s * (1 + 1e-9)]
            out.append({"generation": g, "part": part, "points": len(pts),
                        "inside": len(pts) - len(outside), "outside": outside,
                        "widening": w})
    return out


def _largest_other(rows: list[dict], generation: str, part: str) -> float:
    own = {}
    for g in dict.fromkeys(r["generation"] for r in rows):
        res = _residuals(rows, g, part)
        if res and g != generation:
            own[g] = rms_log([e for _, e in res])
    return max(own.values()) if own else 0.0

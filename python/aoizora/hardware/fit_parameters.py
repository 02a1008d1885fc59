"""The physical parameters `aoizora calibrate` may fit, how each is read from and written to
a hardware profile (a dict in the aoizora.hardware/1 format), its physical range, and
which of them a set of measured points can determine.

    candidates(kinds) -> [Parameter]: when a collective kind is in `kinds`, link_bandwidth,
        the fixed latency of each collective kind in `kinds`, then hop_latency (the order in
        which they are preferred when the points cannot tell two apart); then
        mxu_efficiency when a whole program (a kind of WHOLE_PROGRAMS) is among the points.
        Whole programs alone fit mxu_efficiency alone: their time is mostly compute and
        cannot tell a slower link from slower matmuls, which collective points, timed
        alone, can.
    determinable(params, sensitivity) -> (kept, {name: reason}): the parameters the points
        determine, and why each other one keeps its base value.

Only figures the simulator reads are candidates. Of the compute figures only mxu_efficiency
is: peak FLOP/s and HBM bandwidth are the vendor's figures, and a whole program's time,
MXU-bound, cannot tell a lower peak from a lower efficiency; collective points run no
compute.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# Relative spread of a sensitivity column below which no point depends on a parameter, and
# the fraction of a column left after projecting out the kept ones below which the points
# cannot tell it from them.
MIN_SENSITIVITY = 0.02
MIN_INDEPENDENT = 0.05


@dataclass(frozen=True)
class Parameter:
    """One figure of a profile. Fitted in `x` units: log(B/s) for a bandwidth, microseconds
    for a latency, the fraction itself for an efficiency, so that the least-squares
    variables are of order one."""

    name: str            # "link_bandwidth", "hop_latency", "collective_latency.all-reduce"
    unit: str            # "B/s", "s" or "fraction"
    lo: float            # physical range, in the figure's own unit; lo for a bandwidth is
    hi: float            # a fraction of the base figure (see bounds())
    meaning: str

    def get(self, profile: dict) -> float:
        if self.name.startswith("collective_latency."):
            return float(profile["collective_latency"][self.name.split(".", 1)[1]])
        return float(profile[self.name])

    def set(self, profile: dict, value: float) -> None:
        if self.name.startswith("collective_latency."):
            profile["collective_latency"][self.name.split(".", 1)[1]] = value
        else:
            profile[self.name] = value

    def bounds(self, base: float) -> tuple[float, float]:
        """The physical range in the figure's unit; a bandwidth's is relative to the base."""
        if self.unit == "B/s":
            return self.lo * base, self.hi * base
        return self.lo, self.hi

    def to_x(self, value: float) -> float:
        return {"B/s": math.log, "s": lambda v: v * 1e6}.get(self.unit, float)(value)

    def from_x(self, x: float) -> float:
        return {"B/s": math.exp, "s": lambda v: v * 1e-6}.get(self.unit, float)(x)

    def describe(self, value: float) -> str:
        return describe(self.unit, value)


def describe(unit: str, value: float) -> str:
    """A figure in its unit, for people: 86.3 GB/s, 1.85 us, 0.92."""
    if unit == "B/s":
        return f"{value / 1e9:.4g} GB/s"
    return f"{value * 1e6:.4g} us" if unit == "s" else f"{value:.4g}"


LINK_BANDWIDTH = Parameter(
    "link_bandwidth", "B/s", 0.25, 2.0,
    "usable one-way bandwidth of one ICI link (range: 1/4 to 2x the base figure)")
HOP_LATENCY = Parameter(
    "hop_latency", "s", 0.05e-6, 5e-6,
    "latency per link hop, paid by every flow of every step (range 0.05-5 us)")


def collective_latency(kind: str) -> Parameter:
    return Parameter(f"collective_latency.{kind}", "s", 0.0, 50e-6,
                     f"fixed cost of one {kind} execution: launch, synchronisation, DMA "
                     "set-up (range 0-50 us)")


MXU_EFFICIENCY = Parameter(
    "mxu_efficiency", "fraction", 0.2, 1.0,
    "fraction of the padded MXU peak a matmul reaches, XLA's fusions and the Pallas kernels "
    "alike (compute/mxu.h; range 0.2-1)")


# The kinds of the points that are whole programs (program_points.py): one step, one video.
WHOLE_PROGRAMS = ("program", "video")


def candidates(kinds) -> list[Parameter]:
    kinds = set(kinds)
    collectives = sorted(kinds - set(WHOLE_PROGRAMS))
    links = ([LINK_BANDWIDTH] + [collective_latency(k) for k in collectives] + [HOP_LATENCY]
             if collectives else [])
    return links + ([MXU_EFFICIENCY] if kinds & set(WHOLE_PROGRAMS) else [])


def determinable(params: list[Parameter], sensitivity: np.ndarray
                 ) -> tuple[list[Parameter], dict[str, str]]:
    """Greedy, in the order of `params`: a parameter is kept when some point's log time
    depends on it (a column of `sensitivity`, d log t_i / d x_j at the base, has an entry of
    at least MIN_SENSITIVITY) and its column is not (nearly) a combination of the columns
    kept before it; never more parameters than points."""
    kept: list[Parameter] = []
    basis: list[np.ndarray] = []
    why: dict[str, str] = {}
    n_points = sensitivity.shape[0]
    for j, p in enumerate(params):
        col = sensitivity[:, j].astype(float)
        norm = float(np.linalg.norm(col))
        if float(np.max(np.abs(col), initial=0.0)) < MIN_SENSITIVITY:
            why[p.name] = "no point used depends on it"
            continue
        rest = col.copy()
        for b in basis:
            rest -= float(b @ rest) * b
        left = float(np.linalg.norm(rest))
        if len(kept) >= n_points:
            why[p.name] = (f"{n_points} points determine at most {n_points} parameters, "
                           "taken by those before it")
            continue
        if left < MIN_INDEPENDENT * norm:
            cos = [abs(float(sensitivity[:, params.index(k)] @ col)) /
                   (float(np.linalg.norm(sensitivity[:, params.index(k)])) * norm) for k in kept]
            twin = kept[int(np.argmax(cos))].name
            why[p.name] = (f"the points cannot tell it apart from {twin} (every point depends "
                           f"on both in the same proportion, |cos| {max(cos):.3f})")
            continue
        kept.append(p)
        basis.append(rest / left)
    return kept, why

"""A generation's per-step and per-video figures separated by videos of two sizes: the MXU
efficiency of its chip and the sustained FLOP/s of its host's text encoder (MaxDiffusion runs
UMT5 on the host CPU, hardware/hosts.py), fitted together by least squares on log time.

A video point whose "stages" name the text encoder "host-cpu" (no program) is priced as
MaxDiffusion ran it: the host's seconds for its two prompts, then the steps, the VAE decode and
the reshards simulated on the chip. The host's seconds are the same at every video size and
the steps' grow with it, so two sizes tell the two figures apart; one size cannot.

    fit(points, profile) -> HostFit   the two figures, each point's simulated seconds
    simulate(point, profile, mxu_efficiency, host_flops) -> seconds per video

Every time here is simulated or predicted; the points' "seconds" are the measured ones.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from aoizora.hardware.fit_parameters import MXU_EFFICIENCY
from aoizora.models import umt5
from aoizora.hardware import hosts

# The host figure's physical range: a tenth to ten times the nominal (MaxDiffusion's comment).
HOST_RANGE = (0.1, 10.0)


@dataclass(frozen=True)
class HostFit:
    mxu_efficiency: float
    host_flops: float             # FLOP/s of one float32 torch call of UMT5 on the host
    host_seconds: float           # the text encoder's seconds per video at host_flops
    simulated: dict               # point id -> simulated seconds at the fitted figures
    rms_log_error: float


def _profile_at(profile: dict, mxu_efficiency: float, folder: str) -> str:
    d = json.loads(json.dumps(profile))
    d["mxu_efficiency"] = mxu_efficiency
    path = os.path.join(folder, f"{d['generation']}-{mxu_efficiency:.6f}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(d, f)
    return path


def host_seconds(host_flops: float) -> float:
    figure = hosts.HostFigure("", host_flops, "fitted", "")
    return hosts.seconds(umt5.UMT5_XXL, figure)


def simulate(point, profile: dict, mxu_efficiency: float, host_flops: float,
             folder: str) -> float:
    """Seconds per video of a video point run as MaxDiffusion ran it (module doc)."""
    parts = point.parts(_profile_at(profile, mxu_efficiency, folder))
    return parts.total_s - parts.text_encoder_s + host_seconds(host_flops)


def fit(points: list, profile: dict) -> HostFit:
    """mxu_efficiency and the host figure that best fit `points` (videos of at least two
    sizes, every one on the profile's generation), least squares on log time within each
    figure's physical range."""
    if len({(p.hlo) for p in points}) < 2:
        raise ValueError("the per-step and per-video figures need videos of two sizes")
    nominal = hosts.host_figure("").text_encoder_flops
    with tempfile.TemporaryDirectory(prefix="aoizora-host-fit-") as folder:
        def residuals(x):
            e, h = x[0], nominal * math.exp(x[1])
            return [math.log(simulate(p, profile, e, h, folder) / p.seconds) for p in points]

        lo = [MXU_EFFICIENCY.lo, math.log(HOST_RANGE[0])]
        hi = [MXU_EFFICIENCY.hi, math.log(HOST_RANGE[1])]
        x0 = [float(profile["mxu_efficiency"]), 0.0]
        r = least_squares(residuals, x0, bounds=(lo, hi), diff_step=1e-3)
        e, h = float(r.x[0]), nominal * math.exp(float(r.x[1]))
        sim = {p.id: simulate(p, profile, e, h, folder) for p in points}
    err = math.sqrt(float(np.mean(np.square(r.fun))))
    return HostFit(e, h, host_seconds(h), sim, err)

"""When requests arrive: a seeded Poisson stream at a rate per hour, or a trace read from a
CSV file; the queue simulator (queue_sim.py) serves them.

    rate_per_hour("30/h") -> 30.0        "R", "R/h", "R/min" or "R/s", R > 0; UserError
    poisson(rate_per_hour, n, seed) -> float64 array of n arrival times, seconds, from 0:
        exponential gaps of mean 3600 / rate_per_hour, numpy's PCG64 seeded with `seed`
        (the same seed and n give the same times on every machine)
    read_trace(path) -> float64 array of arrival times, seconds, as the file gives them
    trace_rate_per_hour(times) -> requests per hour over the trace's span
    scaled(times, from_per_hour, to_per_hour) -> the same arrivals at another rate (every
        gap times from / to): one stream swept over rates (load_chart.py)

The trace: one arrival a line, seconds since any origin, non-decreasing, finite and >= 0,
at least two; a first line that is not a number is a header and is skipped; the first
column of a line with commas is the time. Anything else is refused in one line (UserError)
naming the file, the line and what was found.
"""

from __future__ import annotations

import math

import numpy as np

from aoizora.errors import UserError

_UNITS = {"h": 1.0, "min": 60.0, "s": 3600.0}   # per unit -> per hour


def rate_per_hour(text: str, flag: str = "--rate") -> float:
    """`text` ("30", "30/h", "0.5/min", "2/s") as requests per hour (UserError if not > 0)."""
    number, _, unit = text.strip().partition("/")
    if unit.strip() not in ("", *_UNITS):
        raise UserError(f"{flag} {text!r}: the unit is /h, /min or /s (30/h: 30 requests "
                        "an hour)")
    try:
        value = float(number)
    except ValueError:
        raise UserError(f"{flag} {text!r}: expected a number of requests per hour, such as "
                        "30/h") from None
    if not math.isfinite(value) or value <= 0:
        raise UserError(f"{flag} {text!r}: the rate must be a number > 0 (requests per hour)")
    return value * _UNITS[unit.strip() or "h"]


def poisson(rate_per_hour: float, n: int, seed: int) -> np.ndarray:
    """n arrival times (seconds, the first after 0) of a Poisson process at `rate_per_hour`."""
    if rate_per_hour <= 0 or n < 1:
        raise ValueError(f"poisson: rate {rate_per_hour} and n {n} must be > 0")
    gaps = np.random.default_rng(seed).exponential(3600.0 / rate_per_hour, size=n)
    return np.cumsum(gaps)


def read_trace(path: str, flag: str = "--arrivals") -> np.ndarray:
    """The arrival times of the CSV file at `path` (module doc). UserError, one line."""
    from aoizora.inputs.validate import read_text

    times: list[float] = []
    for number, line in enumerate(read_text(path, flag, "trace of arrival times")
                                  .splitlines(), 1):
        cell = line.split(",")[0].strip()
        if not cell or cell.startswith("#"):
            continue
        try:
            t = float(cell)
        except ValueError:
            if not times and number == 1:
                continue                      # a header
            raise UserError(f"{flag} {path}: line {number}: {cell!r} is not a time in "
                            "seconds") from None
        _check_time(t, times, path, number, flag)
        times.append(t)
    if len(times) < 2:
        raise UserError(f"{flag} {path}: {len(times)} arrival time(s); a trace needs at "
                        "least two (one time in seconds a line)")
    return np.asarray(times, dtype=np.float64)


def _check_time(t: float, times: list[float], path: str, number: int, flag: str) -> None:
    if not math.isfinite(t) or t < 0:
        raise UserError(f"{flag} {path}: line {number}: {t!r} is not a time in seconds "
                        "(finite, >= 0)")
    if times and t < times[-1]:
        raise UserError(f"{flag} {path}: line {number}: {t:g} s comes before the line "
                        f"above ({times[-1]:g} s): arrival times must not decrease")


def trace_rate_per_hour(times: np.ndarray) -> float:
    """Requests per hour over the trace: (n - 1) gaps over its span (UserError: no span)."""
    span = float(times[-1] - times[0])
    if span <= 0:
        raise UserError("the trace's arrivals all come at one instant: no rate")
    return (len(times) - 1) * 3600.0 / span


def scaled(times: np.ndarray, from_per_hour: float, to_per_hour: float) -> np.ndarray:
    """`times` with every gap scaled by from / to, the first arrival kept."""
    return times[0] + (times - times[0]) * (from_per_hour / to_per_hour)

"""One compiled call timed on its devices: wall clock from the call to
`jax.block_until_ready` of its result, after a warm-up call, median over repeats.

    time_call(call, args, repeats, warmup=1) -> Timing
        call: a compiled function (jax.stages.Compiled or a jitted function already
        compiled for these arguments); args: its arguments, already on their devices.
        Each result is dropped before the next call, so memory holds one result at a time.

The time includes the host's dispatch of the call (tens of microseconds on a TPU host):
a floor under small collectives that `aoizora measure collectives` records beside them.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    median_s: float
    min_s: float
    max_s: float
    repeats: int

    def to_dict(self) -> dict:
        return {"median_s": self.median_s, "min_s": self.min_s, "max_s": self.max_s,
                "repeats": self.repeats}


def time_call(call, args: tuple, repeats: int, warmup: int = 1) -> Timing:
    import jax

    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for _ in range(warmup):
        jax.block_until_ready(call(*args))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = call(*args)
        jax.block_until_ready(out)
        samples.append(time.perf_counter() - t0)
        del out
    return Timing(statistics.median(samples), min(samples), max(samples), repeats)

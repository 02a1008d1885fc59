"""The host CPU of each TPU VM as MaxDiffusion uses it: UMT5-XXL's encoder in torch, in
float32, one call per prompt (the prompt and the negative prompt: use_batched_text_encoder is
false in every Wan config at MaxDiffusion 7cfb880), each padded to max_sequence_length (512)
tokens. Its seconds are the call's FLOPs over the host's sustained FLOP/s
(hardware/hosts.json: nominal, fitted or derived, with its source).

    flops_per_prompt(enc) -> FLOPs of one call on one prompt (matmuls and attention)
    host_figure(generation) -> HostFigure (FLOP/s, basis, source)
    seconds(enc, figure, videos=1) -> the text encoder's seconds per call of `videos` videos
    spread(generation) -> the host figure's spread for the joint draws

A repeated prompt costs nothing at MaxDiffusion 7cfb880 (its prompt cache, since 5a0b7c8e);
a service sees new prompts, so each video is priced as paying both calls.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from dataclasses import dataclass


CALLS_PER_VIDEO = 2    # the prompt and the negative prompt, one call each
HOSTS_FILE = os.path.join(os.path.dirname(__file__), "hosts.json")


def flops_per_prompt(enc) -> float:
    """One prompt of enc.text_len tokens through the encoder: per layer and token, q, k, v
    and o (4 x d x heads x d_kv multiply-adds), the gated FFN (3 x d x d_ff) and the
    attention's scores and sums over every token (2 x text_len x heads x d_kv)."""
    inner = enc.heads * enc.d_kv
    per_token = 2 * (4 * enc.d_model * inner + 3 * enc.d_model * enc.d_ff
                     + 2 * enc.text_len * inner)
    return float(per_token * enc.layers * enc.text_len)


@dataclass(frozen=True)
class HostFigure:
    generation: str
    text_encoder_flops: float   # FLOP/s one float32 torch call sustains on the host
    basis: str                  # "nominal", "fitted" or "derived"
    source: str


@functools.cache
def _hosts() -> dict:
    with open(HOSTS_FILE, encoding="utf-8") as f:
        return json.load(f)


_LEFT_OUT: set[str] = set()   # points a leave-one-out fit must not have seen


@contextlib.contextmanager
def not_fitted_to(point_id: str):
    """Within it, a host figure fitted to `point_id` (or derived from one that was) is
    replaced by the nominal one: a leave-one-out fit without that point must not see it."""
    _LEFT_OUT.add(point_id)
    try:
        yield
    finally:
        _LEFT_OUT.discard(point_id)


def _saw_left_out(d: dict, entry: dict) -> bool:
    fitted = entry if entry.get("basis") == "fitted" else next(
        (e for e in d["hosts"].values() if e.get("basis") == "fitted"), {})
    return bool(_LEFT_OUT & set(fitted.get("fitted_to", [])))


def host_figure(generation: str) -> HostFigure:
    """The host figure of a generation's TPU VM; a generation the file lacks takes the
    nominal figure, and says so."""
    d = _hosts()
    entry = d["hosts"].get(generation, {"basis": "nominal"})
    if entry["basis"] == "nominal" or _saw_left_out(d, entry):
        return HostFigure(generation, float(d["nominal"]["text_encoder_flops"]), "nominal",
                          d["nominal"]["source"])
    return HostFigure(generation, float(entry["text_encoder_flops"]), entry["basis"],
                      entry["source"])


def seconds(enc, figure: HostFigure, videos: int = 1) -> float:
    return CALLS_PER_VIDEO * videos * flops_per_prompt(enc) / figure.text_encoder_flops


def spread(generation: str) -> float:
    """The host figure's spread (the standard deviation of log(true / figure)): a fitted
    host's from its leave-one-out errors (RMS of log(1 + e)), any other's the nominal rule's
    factor of 2 at 90 % (hardware/figure_spread.py)."""
    import math

    from aoizora.hardware.figure_spread import NOMINAL_SPREAD

    entry = _hosts()["hosts"].get(generation, {})
    errors = entry.get("leave_one_out_pct") if entry.get("basis") == "fitted" else None
    if not errors:
        return NOMINAL_SPREAD
    return math.sqrt(sum(math.log1p(e / 100) ** 2 for e in errors) / len(errors))

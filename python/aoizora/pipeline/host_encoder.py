"""The text encoder as MaxDiffusion runs it: UMT5-XXL's encoder in torch on the host CPU, in
float32, one call per prompt (the prompt and the negative prompt: use_batched_text_encoder is
false in every Wan config at MaxDiffusion 7cfb880), each padded to max_sequence_length (512)
tokens. Its seconds are the call's FLOPs over the host's sustained FLOP/s
(hardware/hosts.json: nominal, fitted or derived, with its source).

    flops_per_prompt(enc) -> FLOPs of one call on one prompt (matmuls and attention)
    host_figure(generation) -> HostFigure (FLOP/s, basis, source)
    price(enc, generation, videos=1) -> StagePrice of the text encoder on the host

A repeated prompt costs nothing at MaxDiffusion 7cfb880 (its prompt cache, since 5a0b7c8e);
a service sees new prompts, so each video is priced as paying both calls.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass

from aoizora.pipeline.price import StagePrice

CALLS_PER_VIDEO = 2    # the prompt and the negative prompt, one call each
SHARDING = "host-cpu"  # what a plan calls the host's run of the text encoder
HOSTS_FILE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "hardware",
                          "hosts.json")


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


def host_figure(generation: str) -> HostFigure:
    """The host figure of a generation's TPU VM; a generation the file lacks takes the
    nominal figure, and says so."""
    d = _hosts()
    entry = d["hosts"].get(generation, {"basis": "nominal"})
    if entry["basis"] == "nominal":
        return HostFigure(generation, float(d["nominal"]["text_encoder_flops"]), "nominal",
                          d["nominal"]["source"])
    return HostFigure(generation, float(entry["text_encoder_flops"]), entry["basis"],
                      entry["source"])


def seconds(enc, figure: HostFigure, videos: int = 1) -> float:
    return CALLS_PER_VIDEO * videos * flops_per_prompt(enc) / figure.text_encoder_flops


def price(enc, generation: str, videos: int = 1) -> StagePrice:
    """The text encoder's StagePrice on the host: no mesh, no chips (nothing to reshard
    from: its output is uploaded, which is not priced)."""
    figure = host_figure(generation)
    return StagePrice(
        stage="text_encoder", sharding=SHARDING, mesh=(), rename=(),
        source=(f"MaxDiffusion's run: UMT5 in torch on the {generation} host CPU, float32, "
                f"{CALLS_PER_VIDEO} calls of {enc.text_len} tokens; host figure "
                f"{figure.text_encoder_flops / 1e9:.0f} GFLOP/s ({figure.basis}: "
                f"{figure.source})"),
        simulated_s=seconds(enc, figure, videos), compiled="", kind="predicted")

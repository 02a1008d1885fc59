"""The text encoder's StagePrice as MaxDiffusion runs it: on the host CPU
(hardware/hosts.py: UMT5's FLOPs over the host's sustained FLOP/s, two calls per video).

    price(enc, generation, videos=1) -> StagePrice of the text encoder on the host
"""

from __future__ import annotations

from aoizora.hardware import hosts
from aoizora.pipeline.price import StagePrice

SHARDING = "host-cpu"  # what a plan calls the host's run of the text encoder


def price(enc, generation: str, videos: int = 1) -> StagePrice:
    """The text encoder's StagePrice on the host: no mesh, no chips (nothing to reshard
    from: its output is uploaded, which is not priced)."""
    figure = hosts.host_figure(generation)
    return StagePrice(
        stage="text_encoder", sharding=SHARDING, mesh=(), rename=(),
        source=(f"MaxDiffusion's run: UMT5 in torch on the {generation} host CPU, float32, "
                f"{hosts.CALLS_PER_VIDEO} calls of {enc.text_len} tokens; host figure "
                f"{figure.text_encoder_flops / 1e9:.0f} GFLOP/s ({figure.basis}: "
                f"{figure.source})"),
        simulated_s=hosts.seconds(enc, figure, videos), compiled="", kind="predicted")

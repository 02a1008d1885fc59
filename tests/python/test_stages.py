"""aoizora.pipeline: the text encoder and the VAE decode compiled for a TPU slice (deviceless,
the analysis compile) and simulated, and the reshards between stages priced from bytes.

One session-scoped pricing of the tiny stages on v5e:2x2 (four compiles into a temporary
cache: the text encoder replicated and data-parallel, the VAE replicated and split along
width) serves the compile tests; the reshard tests compile nothing."""

import json
import os

import pytest

from aoizora.models import get_model
from aoizora.models.video import Video
from aoizora.pipeline import reshard, stage_specs
from aoizora.planning.strategies import Candidate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAN = os.path.join(ROOT, "tests", "data", "plans", "wan_tiny.v5e_2x2.json")
SPEC = {"hop_latency": 1e-6, "link_bandwidth": 40e9}
# Latents 3 x 16 x 32 (video 9 x 128 x 256): enough convolution for a 4-way split to pay for
# its halo exchanges on the tiny VAE's 4-16 channels.
BIG = Video("tiny-128x256-9f", height=128, width=256, frames=9)


def _pick(options, *names):
    return [o for o in options if o.name in names]


class Priced:
    """The stages priced, the video model over them, and the plan's pair."""

    def __init__(self, stages, video, pair):
        self.stages, self.video, self.pair = stages, video, pair
        self.options = stages.options


@pytest.fixture(scope="session")
def priced(tmp_path_factory):
    from aoizora.compile.cache import Cache
    from aoizora.pipeline import plan_video
    from aoizora.planning.stage2 import Stage2

    model = get_model("wan-tiny")
    with open(PLAN) as f:
        plan = json.load(f)
    picked = [(o, c) for o, c in plan_video.stage_options(model, 4)
              if o.name in ("te-replicated", "te-data2", "vae-replicated", "vae-width4")]
    cache = Cache(str(tmp_path_factory.mktemp("cache")))
    stage2 = Stage2.for_topology("v5e:2x2")
    stages = plan_video.price_stages(model, BIG, stage2, picked, cache=cache)
    video = plan_video.VideoModel(model, BIG, stage2, 3, stages)
    return Priced(stages, video, plan_video.plan_pair(plan)), cache


def test_each_stage_compiles_for_the_tpu_target_and_is_simulated(priced):
    price, cache = priced
    assert [p.sharding for p in price.options] == ["te-replicated", "te-data2",
                                                   "vae-replicated", "vae-width4"]
    for p in price.options:
        assert p.error is None, p.error
        assert p.compiled.startswith("analyze for v5e:2x2"), p.compiled
        assert p.simulated_s > 0 and p.kind == "simulated"
        # JAX's default order of 4 v5e chips (mesh_utils' v5e handler: 0, 1, 3, 2)
        assert p.chips == (0, 1, 3, 2)
        text = cache.get(p.key)
        assert "num_partitions=4" in text


def test_the_width_split_vae_exchanges_halos_and_the_replicated_one_does_not(priced):
    price, cache = priced
    by = {p.sharding: cache.get(p.key) for p in price.options}
    assert "collective-permute" in by["vae-width4"]  # the 3x3 convolutions' halos
    for kind in ("collective-permute", "all-gather", "all-reduce", "all-to-all"):
        assert kind not in by["vae-replicated"]


def test_a_width_split_vae_decode_beats_the_replicated_one_on_enough_pixels(priced):
    price, _ = priced
    by = {p.sharding: p.simulated_s for p in price.options}
    assert by["vae-width4"] < 0.6 * by["vae-replicated"], by
    assert price.stages.vae_decode.sharding == "vae-width4"


def test_the_video_price_takes_the_step_from_the_plan_and_the_best_of_each_stage(priced):
    price, _ = priced
    with open(PLAN) as f:
        plan = json.load(f)
    parts = price.video.parts(price.pair)
    assert parts["denoising_s"] == pytest.approx(3 * plan["choice"]["simulated_s"])
    best_te = min((p for p in price.options if p.stage == "text_encoder"),
                  key=lambda p: p.simulated_s)
    assert price.stages.text_encoder == best_te
    assert parts["text_encoder_s"] == best_te.simulated_s
    assert price.video.seconds(price.pair) == pytest.approx(sum(parts.values()))
    reshards = price.video.reshards(price.pair)
    assert [r.name for r in reshards] == ["text context -> transformer", "latents -> VAE"]
    # the transformer's guided latents are on every chip: the VAE takes its slice locally
    assert reshards[1].max_chip_bytes == 0 and reshards[1].seconds == 0


def test_a_missing_stage_leaves_the_total_missing(priced):
    from aoizora.pipeline import plan_video

    price, _ = priced
    no_vae = plan_video.Stages({"text_encoder": price.stages.text_encoder,
                                "vae_decode": None}, price.options)
    video = plan_video.VideoModel(get_model("wan-tiny"), BIG, price.video.stage2, 3, no_vae)
    assert video.seconds(price.pair) is None
    assert no_vae.missing() == ["VAE decode"]


# ---- reshards (no compile) -------------------------------------------------------------------

def _layout(cand, axes, shape, chips):
    return reshard.layout_of(cand, axes, shape, chips)


DATA2 = Candidate("dp2-ag2", data=2, context=2, form="allgather_kv")


def test_a_reshard_price_scales_with_the_bytes_moved():
    prices = []
    for d in (1024, 2048, 4096):
        shape = (2, 16, d)
        src = _layout(DATA2, ("batch", None, None), shape, (0, 1, 3, 2))
        dst = reshard.Layout((("data", 4),), ((), (), ()), (0, 1, 2, 3))  # replicated
        prices.append(reshard.price("x", src, dst, shape, 2, SPEC))
    moved = [p.seconds - SPEC["hop_latency"] for p in prices]
    assert moved[1] == pytest.approx(2 * moved[0]) and moved[2] == pytest.approx(4 * moved[0])
    # each chip holds one prompt of two and receives the other
    assert prices[0].max_chip_bytes == 16 * 1024 * 2


def test_from_replicated_to_any_layout_nothing_moves():
    shape = (2, 16, 64)
    src = reshard.Layout((("data", 4),), ((), (), ()), (0, 1, 2, 3))
    dst = _layout(DATA2, ("batch", "length", None), shape, (3, 2, 1, 0))
    p = reshard.price("x", src, dst, shape, 4, SPEC)
    assert p.max_chip_bytes == 0 and p.seconds == 0


def test_the_same_sharding_on_another_placement_moves_what_each_chip_lacks():
    shape = (2, 16, 64)
    same = _layout(DATA2, ("batch", None, None), shape, (0, 1, 3, 2))
    assert reshard.price("x", same, same, shape, 2, SPEC).seconds == 0
    # prompt 0 on chips 0 and 2 instead of 0 and 1: chips 1 and 2 swap their halves
    other = _layout(DATA2, ("batch", None, None), shape, (0, 2, 1, 3))
    p = reshard.price("x", same, other, shape, 2, SPEC)
    assert p.max_chip_bytes == 16 * 64 * 2 and p.total_bytes == 2 * 16 * 64 * 2


def test_a_vae_option_whose_dim_does_not_divide_is_skipped_with_its_reason():
    from aoizora.pipeline.price import _skip_reason

    height4 = _pick(stage_specs.vae_options(4), "vae-height4")[0]
    tiny = Video("tiny-9f", height=48, width=64, frames=9)  # latents 3 x 6 x 8
    assert _skip_reason(height4, tiny) == "skipped: 6 latent height do not divide by 4"
    assert _skip_reason(height4, BIG) is None


def test_a_maxdiffusion_row_decodes_on_its_own_vae_sharding_or_says_it_was_not_priced(priced):
    from aoizora.pipeline import plan_video, price as pricing

    price, _ = priced
    rows = {"maxdiffusion-default": price.pair}
    own = price.video.record(price.pair, rows)
    assert own["baselines"]["maxdiffusion-default"]["stages"]["vae_decode"] == "vae-width4"
    assert any(n.startswith("MaxDiffusion's rows: decode with MaxDiffusion's own")
               and "on the host CPU" in n for n in own["notes"])
    # MaxDiffusion encodes the prompts on the host: its row pays that, not the slice's encoder
    assert own["baselines"]["maxdiffusion-default"]["stages"]["text_encoder"] == "host-cpu"
    # without vae-width4 among the options, the row decodes on the best left, and says so
    left = tuple(o for o in price.options if o.sharding != "vae-width4")
    stages = plan_video.Stages(
        {"text_encoder": price.stages.text_encoder,
         "vae_decode": pricing.best([o for o in left if o.stage == "vae_decode"])}, left)
    video = plan_video.VideoModel(get_model("wan-tiny"), BIG, price.video.stage2, 3, stages)
    rec = video.record(price.pair, rows)
    assert rec["baselines"]["maxdiffusion-default"]["stages"]["vae_decode"] == "vae-replicated"
    assert any("MaxDiffusion's own (width over every device) was not priced" in n
               for n in rec["notes"])

"""Batch as a planned dimension (`aoizora plan --batch V`, `serve --batch 1,2`): a call of V
videos is the workload's batch 2V (each video's CFG pair), compiled at that batch, priced per
call and per video; the sharding space gains data over videos; serve's rows and the queue
simulator take the plan at each batch."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aoizora import plan_schema
from aoizora.compile.cache import cache_key
from aoizora.compile.jobs import Job, job_key
from aoizora.errors import UserError
from aoizora.models import get_model, get_workload
from aoizora.planning import strategies

TINY, TINY_VIDEO = get_model("wan-tiny"), get_workload("tiny")
RESULTS = Path(__file__).resolve().parents[2] / "docs/results"


def _videos(v: int, workload=TINY_VIDEO):
    return dataclasses.replace(workload, batch=2 * v)


# ---- the sharding space and the program --------------------------------------------------

def test_data_over_videos_is_legal_beside_cfg_only_for_a_batch_of_videos():
    one = {(c.data, c.fsdp) for c in strategies.enumerate_candidates(TINY, TINY_VIDEO, 8)}
    assert max(d * f for d, f in one) == 2          # the CFG pair alone
    two = strategies.enumerate_candidates(TINY, _videos(2), 8)
    assert {(4, 1), (2, 2), (1, 4)} <= {(c.data, c.fsdp) for c in two}
    names = {c.name for c in two}
    assert {"dp4-ag2", "dp2-fsdp2-ag2", "fsdp4-ag2"} <= names


def test_the_cache_key_of_a_program_differs_by_batch():
    c = strategies.enumerate_candidates(TINY, _videos(2), 8)[0]
    keys = [cache_key(job_key(Job("lower", c, TINY, _videos(v), "cpu:8"))) for v in (1, 2)]
    assert keys[0] != keys[1]


def test_a_guided_call_of_two_videos_is_each_videos_own_pair():
    """MaxDiffusion's order: the prompts, then the negatives; video i combines out[i] and
    out[V + i]. The call's output is each video's one-video output (an interleaved or
    swapped pair would not be)."""
    import jax
    import jax.numpy as jnp

    from aoizora.models.wan import init_params

    params = init_params(TINY, jax.random.PRNGKey(0))
    call = _videos(2)
    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    ins = [jax.random.normal(k, s.shape, jnp.float32).astype(s.dtype)
           for k, s in zip(keys, TINY.abstract_inputs(call))]
    out = TINY.apply(params, *ins, workload=call)
    assert out.shape == TINY.output_shape(call) == (2, *TINY.output_shape(TINY_VIDEO))
    for i in range(2):
        pair = [jnp.stack([a[i], a[2 + i]]) for a in ins]
        alone = TINY.apply(params, *pair, workload=TINY_VIDEO)
        np.testing.assert_allclose(np.asarray(out[i], np.float32),
                                   np.asarray(alone, np.float32), rtol=2e-2, atol=2e-2)


def test_a_batch_below_one_or_of_a_function_spec_is_refused_in_one_line():
    from aoizora.planning.planner import resolve

    assert resolve("wan-tiny", "tiny", None, 3)[1].batch == 6
    with pytest.raises(UserError, match="--batch 0: videos per call"):
        resolve("wan-tiny", "tiny", None, 0)
    r = subprocess.run([sys.executable, "-m", "aoizora.cli", "plan", "--batch", "0"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--batch" in r.stderr and len(r.stderr.splitlines()) <= 2


# ---- plan.json: per call and per video -----------------------------------------------------

def _doc(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def test_a_plan_before_batches_loads_and_a_contradicting_batch_is_refused():
    old = _doc("compiler_flags/wan-1.3b_v5e-2x4_480p-21f.plan.json")
    assert "videos_per_call" not in old["workload"]
    plan_schema.check(old)
    two = json.loads(json.dumps(old))
    two["workload"].update(batch=4, videos_per_call=2)
    two["video"].update(videos_per_call=2, seconds_per_video=two["video"]["seconds"] / 2)
    for b in two["video"]["baselines"].values():
        b.pop("seconds_per_video", None)
    plan_schema.check(two)
    bad = json.loads(json.dumps(two))
    bad["workload"]["batch"] = 2
    with pytest.raises(ValueError, match="workload.batch 2 must be 2 x"):
        plan_schema.check(bad)
    bad = json.loads(json.dumps(two))
    bad["video"]["seconds_per_video"] = two["video"]["seconds"]   # per call, not per video
    with pytest.raises(ValueError, match="seconds_per_video .* over the 2 video"):
        plan_schema.check(bad)


def test_stages_on_the_slice_run_once_per_video_and_the_host_encoder_prices_the_call():
    from types import SimpleNamespace

    from aoizora.pipeline import host_encoder
    from aoizora.pipeline.plan_video import Stages, VideoModel
    from aoizora.pipeline.price import StagePrice

    def stage(name, sharding, s):
        return StagePrice(name, sharding, (), (), "", s)

    te, vae = stage("text_encoder", "te-data2", 0.5), stage("vae_decode", "vae-width8", 2.0)
    stages = Stages({"text_encoder": te, "vae_decode": vae}, (te, vae))
    stage2 = SimpleNamespace(topology=SimpleNamespace(spec={"generation": "v6e"}),
                             num_devices=8)
    pair = SimpleNamespace(simulated=0.1, candidate=SimpleNamespace(name="single"),
                           device_of=(0,))   # stages with no chips: no reshards
    one = VideoModel(TINY, TINY_VIDEO, stage2, 10, stages)
    three = VideoModel(TINY, _videos(3), stage2, 10, stages)
    assert one.parts(pair) == {"text_encoder_s": 0.5, "denoising_s": 1.0,
                               "vae_decode_s": 2.0, "reshard_s": 0}
    assert three.parts(pair)["text_encoder_s"] == pytest.approx(1.5)
    assert three.parts(pair)["vae_decode_s"] == pytest.approx(6.0)
    assert three.seconds_per_video(pair) == pytest.approx(three.seconds(pair) / 3)
    host_one, host_three = one.host_text_encoder(), three.host_text_encoder()
    assert host_three.sharding == host_encoder.SHARDING
    assert host_three.simulated_s == pytest.approx(3 * host_one.simulated_s)
    assert three._per_call(host_three) == host_three.simulated_s   # not counted 3 x again


# ---- a tiny model planned at batch 1 and 2, and served under load ----------------------------

@pytest.fixture(scope="module")
def tiny_batches(tmp_path_factory):
    """wan-tiny on v5e:1x1 (CPU programs) planned by serve at batch 1 and 2, one cache."""
    from aoizora.compile.cache import Cache
    from aoizora.planning.planner import Settings
    from aoizora.serving import prices, survey

    settings = Settings(top_k=1, workers=1, compile_target="cpu",
                        cache=Cache(str(tmp_path_factory.mktemp("cache"))))
    request = survey.Request("wan-tiny", "tiny", None, ("v5e:1x1",), prices.load(),
                             batches=(1, 2))
    return request, survey.survey(request, settings), settings


def test_a_call_of_two_costs_more_than_one_video_and_less_than_two(tiny_batches):
    """The batch-2 program is its own compile (the cache does not return batch 1's): its
    step takes longer than batch 1's, and less than two of them (the weights are read once
    for both videos)."""
    from aoizora.planning.planner import plan

    _, result, settings = tiny_batches
    one, two = result.replicas["v5e:1x1"], result.replicas["v5e:1x1 batch 2"]
    assert one.step_s < two.step_s < 2 * one.step_s
    assert one.latency_s < two.latency_s < 2 * one.latency_s
    p = plan("wan-tiny", "tiny", None, "v5e:1x1", settings, batch=2).plan  # from the cache
    assert (p.workload["batch"], p.workload["videos_per_call"]) == (4, 2)
    assert p.video["seconds"] == pytest.approx(two.latency_s)
    assert p.video["seconds_per_video"] == pytest.approx(two.latency_s / 2)
    plan_schema.check(json.loads(p.to_json()))


def test_serve_prices_batch_two_from_its_plan_and_simulates_it_under_load(tiny_batches):
    from aoizora.serving import load

    request, result, _ = tiny_batches
    rows = {r.batch: r for r in result.rows}
    assert rows[2].videos_per_hour == pytest.approx(2 * 3600 / rows[2].latency_s)
    assert rows[2].latency_s == result.replicas["v5e:1x1 batch 2"].latency_s
    rate = 0.9 * rows[1].videos_per_hour   # batch 1 near saturation: batch 2 queues less
    stream = load.stream(f"{rate}/h", "poisson", 2000, None)
    under = {r.batch: r for r in load.under_load(result.rows, stream, request.prices)}
    assert under[2].p99_s is not None and under[2].seconds_per_call == rows[2].latency_s
    assert under[2].capacity_per_hour == pytest.approx(rows[2].videos_per_hour)
    assert under[2].p99_s < under[1].p99_s
    only_two = load.under_load([rows[2]], stream, request.prices)[0]
    assert only_two.p99_s is None and "--batch 1,2" in only_two.why_not

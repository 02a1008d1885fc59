"""`aoizora plan` from the command line for every Wan preset beyond 2.1 T2V, on v5e:2x4,
end to end: the plan, its report, what it says about the model (parameters, both A14B
experts served and resident), and its memory.

Cost, measured on the 2-core development machine (loaded): a TPU-target plan of a 14B
preset (480p, 1 frame, --top-k 2) took 730 s, because it compiles the top K and six
baselines for the TPU at about 45 s each, whatever the frames or the number of blocks. That
is far beyond the suite's budget, so these plans compile for CPU devices
(`--compile-target cpu`: the same lowering, Stage 1, placement ranking, simulation on the
v5e model, baselines and report; XLA's CPU pipeline instead of libtpu's, which the plan
records) at the cheapest workload each preset takes: 1 frame, 480p (720p for TI2V-5B, its
only size). About 75 s per 14B preset there. TPU-target plans of the tiny model run in
test_planner.py and test_tpu7x.py; the 14B one-block proxies lower and pass Stage 1 in
test_models_wan_family.py.
"""

from __future__ import annotations

import json
import math

import pytest

from aoizora import cli
from aoizora.compile import tpu
from aoizora.models import get_model, get_workload
from aoizora.plan_format import Plan

TOPOLOGY = "v5e:2x4"
PRESETS = {  # name: (video, tokens per sample at 1 frame)
    "wan2.1-i2v-14b": ("480p", 30 * 52),
    "wan2.2-t2v-a14b": ("480p", 30 * 52),
    "wan2.2-i2v-a14b": ("480p", 30 * 52),
    "wan2.2-ti2v-5b": ("720p", 22 * 40),     # 1280x704 over the (4,16,16) VAE, patch 2x2
}
V5E_HBM = 16e9


def _weight_bytes_per_device(tree) -> list[int]:
    """Per-device bytes of each top-level entry of a (shardings, abstract params) pair."""
    import jax

    shardings, params = tree
    return sum(math.prod(s.shard_shape(p.shape)) * p.dtype.itemsize
               for s, p in zip(jax.tree.leaves(shardings), jax.tree.leaves(params)))


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_plan_command_plans_the_preset_on_v5e_2x4(name, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("AOIZORA_CACHE", str(tmp_path / "cache"))
    video, tokens = PRESETS[name]
    out, report = tmp_path / "plan.json", tmp_path / "report.html"
    rc = cli.main(["plan", "--model", name, "--video", video, "--frames", "1", "--topology",
                   TOPOLOGY, "--top-k", "2", "--compile-target", "cpu", "--quiet",
                   "--out", str(out), "--report", str(report)])
    assert rc == 0, capsys.readouterr().err
    doc = json.loads(out.read_text())
    cfg = get_model(name)
    assert doc["model"]["name"] == name and doc["model"]["params"] == cfg.param_count()
    # batch 2: one video, its CFG pair (--emit maxdiffusion turns it into per_device_batch_size)
    assert doc["workload"] == {"video": video, "frames": 1, "tokens": tokens, "batch": 2,
                               "videos_per_call": 1}
    assert doc["topology"]["compile_target"]["platform"] == "cpu"   # said, not hidden
    choice = doc["choice"]
    assert math.prod(choice["mesh_shape"]) == 8 and len(set(choice["chip_ids"])) == 8
    assert choice["simulated_s"] > 0 and doc["planning"]["skipped"] == []
    assert {"alpa-style", "existing"} <= set(doc["baselines"])
    page = report.read_text()
    assert name in page and f"{tokens:,} tokens" in page

    # The chosen shardings hold every resident weight within a v5e chip's HBM.
    plan = Plan.load(str(out))
    workload = get_workload(video, 1, model=cfg)
    params, _ = plan.shardings(cfg, workload, tpu.compile_only_devices(TOPOLOGY))
    abstract = cfg.abstract_params()
    if doc["model"].get("experts"):
        # A14B: one plan serves both experts, and both are resident (the memory check
        # counts both: the step takes them as arguments).
        assert (doc["model"]["experts"], doc["model"]["resident_experts"]) == (2, 2)
        assert doc["model"]["plan_serves_every_expert"] is True
        assert doc["model"]["params"] == 2 * doc["model"]["expert_params"]
        per_expert = [_weight_bytes_per_device((s, p)) for s, p in zip(params, abstract)]
        assert len(per_expert) == 2 and per_expert[0] == per_expert[1]
        resident = sum(per_expert)
    else:
        resident = _weight_bytes_per_device((params, abstract))
        assert "experts" not in doc["model"]
    assert resident < V5E_HBM

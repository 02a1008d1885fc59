"""TPU7x end to end: two TensorCores per chip as devices, a plan compiled for the TPU
(deviceless, 8 devices), placements over cores and chips, MaxDiffusion's recipes as it lays
them out, and a report that says which logical groups share a chip."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from aoizora import _core, maxdiffusion, report
from aoizora.compile import tpu
from aoizora.planning import planner, strategies
from aoizora.compile.cache import Cache
from aoizora.models import get_model, get_workload
from aoizora.planning.placement import axis_groups_on_chips, device_keys

SLICE = "tpu7x:2x2x1"


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def result(cache_dir):
    settings = planner.Settings(top_k=2, workers=1, cache=Cache(cache_dir))
    return planner.plan("wan-tiny", "tiny", None, SLICE, settings=settings)


def test_plan_compiles_for_the_tpu_over_every_core(result):
    plan = result.plan
    target = dict(plan.topology["compile_target"])
    # The libtpu flags the compiles ran under, for the deployment (--emit maxdiffusion).
    assert "--xla_tpu_scoped_vmem_limit_kib=" in target.pop("libtpu_init_args")
    assert target == {"platform": "tpu", "name": SLICE, "devices": 8,
                      "wrap": [False, False, False]}
    assert plan.topology["chips"] == 4 and plan.topology["devices"] == 8
    coords = plan.choice.device_coords
    assert len(coords) == 8 and all(len(c) == 4 for c in coords)  # (x, y, z, core)
    assert len({tuple(c) for c in coords}) == 8


def test_plan_mesh_puts_each_partition_on_its_planned_core(result):
    plan = result.plan
    mesh = plan.mesh(tpu.compile_only_devices(SLICE))
    assert [list(k) for k in device_keys(mesh.devices.flat)] == plan.choice.device_coords


def test_maxdiffusion_recipes_are_baselines_on_jax_default_order(result):
    base = result.plan.baselines
    for tag in (strategies.MAXDIFFUSION_CFG, strategies.MAXDIFFUSION_RING,
                strategies.MAXDIFFUSION_ULYSSES):
        assert tag in base, tag
        assert base[tag].placement == "jax-default"
    # data 2 x context 4 with 2 Ulysses shards innermost: Ulysses 2 x ring 2.
    usp = base[strategies.MAXDIFFUSION_USP]
    assert usp.mesh_shape == [2, 2, 2] and usp.axis_names == ["data", "ring", "ulysses"]
    # MaxDiffusion's layout (jax's tray ring, consecutive ids share a chip) puts each Ulysses
    # pair on the two cores of one chip and runs the ring across chips.
    groups = usp.extra["axis_groups"]
    assert groups["ulysses"] == "within one chip"
    assert groups["ring"] == "one device on each of 2 chips"


def test_axis_groups_in_words():
    topo = _core.make_topology(SLICE)
    default = _core.default_placement(topo, [2, 2, 2])
    keys = topo.coords_of(default.device_of)
    words = axis_groups_on_chips([2, 2, 2], ["data", "ring", "ulysses"], keys)
    assert words == {"data": "one device on each of 2 chips",
                     "ring": "one device on each of 2 chips",
                     "ulysses": "within one chip"}
    # The core as the outer mesh axis: its groups are a chip's two cores; the inner axis
    # takes one core of each of the 4 chips.
    keys = [(x, y, 0, c) for c in range(2) for y in range(2) for x in range(2)]
    assert axis_groups_on_chips([2, 4], ["a", "b"], keys) == {
        "a": "within one chip", "b": "one device on each of 4 chips"}
    # A group of 4 with both cores of one chip and one core of two others is uneven.
    keys = [(0, 0, 0, 0), (0, 0, 0, 1), (1, 0, 0, 0), (0, 1, 0, 0),
            (1, 0, 0, 1), (0, 1, 0, 1), (1, 1, 0, 0), (1, 1, 0, 1)]
    assert axis_groups_on_chips([2, 4], ["a", "b"], keys)["b"] == "4 devices on 3 chips, unevenly"


def test_report_draws_both_cores_of_each_chip(result):
    text = report.render(result.plan)
    # two drawings of the slice (the plan, JAX's default order), both cores of 4 chips each
    assert text.count("c0: ") == 8 and text.count("c1: ") == 8
    assert "Where each mesh axis runs" in text
    shared = text.split('id="shared-chips"')[1].split("</table>")[0]
    assert shared.count("core 0: ") == 4 and shared.count("core 1: ") == 4


def test_tpu7x_14b_candidates_include_ulysses_on_the_cores():
    cands = strategies.baseline_shardings(get_model("wan2.1-t2v-14b"), get_workload("720p", 81), 8)
    assert cands[strategies.MAXDIFFUSION_USP].name == "dp2-usp2x2w"


def test_cli_emits_the_plan_for_maxdiffusion(cache_dir, tmp_path):
    """`aoizora emit maxdiffusion FILE --plan` on a shipped TPU7x plan: the overrides give back
    the planned candidate and the device order the planned devices. `plan --emit` of a
    model MaxDiffusion has no config for (wan-tiny) is refused before any planning."""
    from aoizora.plan_format import Plan

    env = {**os.environ, "AOIZORA_CACHE": cache_dir}
    shipped = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "results", "tpu7x",
                           "wan-14b_tpu7x-2x2x1_720p-81f.plan.json")
    out = subprocess.run(
        [sys.executable, "-m", "aoizora.cli", "emit", "maxdiffusion", str(tmp_path / "md.yaml"),
         "--plan", shipped], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    doc = yaml.safe_load((tmp_path / "md.yaml").read_text())
    plan = Plan.load(shipped)
    assert maxdiffusion.candidate_of(doc["overrides"]).name == plan.choice.candidate
    assert doc["device_order"]["device_coords"] == plan.choice.device_coords
    tiny = subprocess.run(
        [sys.executable, "-m", "aoizora.cli", "plan", "--model", "wan-tiny", "--video", "tiny",
         "--topology", SLICE, "--out", str(tmp_path / "p.json"),
         "--emit", "maxdiffusion", str(tmp_path / "t.yaml")],
        capture_output=True, text=True, env=env, timeout=120)
    assert tiny.returncode == 2 and tiny.stderr.count("\n") == 1, tiny.stderr
    assert "no Wan config for 'wan-tiny'" in tiny.stderr and not (tmp_path / "p.json").exists()
    bad = subprocess.run(
        [sys.executable, "-m", "aoizora.cli", "plan", "--emit", "vllm", str(tmp_path / "x")],
        capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--emit maxdiffusion" in bad.stderr


def test_topology_command_shows_the_cores(tmp_path):
    out = subprocess.run([sys.executable, "-m", "aoizora.cli", "topology", SLICE],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "8 devices (2 TensorCores per chip)" in out.stdout
    assert "between the cores of a chip" in out.stdout and "1:0,0,0,1" in out.stdout
    # A JSON fabric with two cores per chip needs the link between them: one line.
    bad = tmp_path / "t.json"
    bad.write_text('{"dims": [2], "spec": {"link_bandwidth": 1e9, "cores_per_chip": 3}}')
    err = subprocess.run([sys.executable, "-m", "aoizora.cli", "topology", str(bad)],
                         capture_output=True, text=True, timeout=120)
    assert err.returncode == 2 and err.stderr.count("\n") == 1
    assert "cores_per_chip must be 1 or 2" in err.stderr

"""A plan as MaxDiffusion runs it: every candidate maps to MaxDiffusion's config keys and
back, its recipes map to the keys its docs give, and the emitted device order builds the
Mesh with each partition on its planned device (checked on compile-only TPU7x devices)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
import yaml

from aoizora import _core, maxdiffusion
from aoizora.compile import tpu
from aoizora.planning import kernels, strategies
from aoizora.errors import UserError
from aoizora.models import get_model, get_workload
from aoizora.planning.placement import device_keys

MODEL, WORKLOAD = get_model("wan2.1-t2v-14b"), get_workload("720p", 81)


@pytest.mark.parametrize("n", [4, 8, 16])
def test_every_candidate_round_trips_through_the_overrides(n):
    for c in strategies.enumerate_candidates(MODEL, WORKLOAD, n, "maxdiffusion"):
        o = maxdiffusion.overrides(c)
        assert (o["ici_data_parallelism"] * o["ici_fsdp_parallelism"]
                * o["ici_context_parallelism"] * o["ici_tensor_parallelism"]) == n
        assert maxdiffusion.candidate_of(o).key() == c.key(), c.name


def test_a_jax_runtime_candidate_is_the_same_program_only_where_maxdiffusion_runs_it_so():
    """MaxDiffusion never splits the attention's heads over tensor and runs Ulysses
    cross-attention: a JAX-runtime candidate with tensor > 1 or the Ulysses form is another
    program there (its key differs: the emit refuses it), every other one the same."""
    changed = []
    for c in strategies.enumerate_candidates(MODEL, WORKLOAD, 8):
        same = maxdiffusion.candidate_of(maxdiffusion.overrides(c)).key() == c.key()
        assert same == (c.tensor == 1 and c.form != "ulysses"), c.name
        if not same:
            changed.append(c)
            with pytest.raises(UserError, match="re-plan with --emit maxdiffusion"):
                maxdiffusion._check_expressible(c)
    assert changed


def test_maxdiffusion_runtime_rules_keep_the_attention_heads_whole():
    """The rules a MaxDiffusion candidate's Layout uses: heads over tensor for the weights and
    the MLP, never for the attention's activations; text K/V over context only for Ulysses."""
    cands = {c.name: c for c in strategies.enumerate_candidates(MODEL, WORKLOAD, 8,
                                                               "maxdiffusion")}
    tp = cands["dp2-uly2-tp2"]
    assert tp.rules["heads"] == ("tensor",) and tp.rules["attn_heads"] == ()
    assert tp.rules["text_length"] == ("context",)
    assert cands["dp2-ag2-tp2"].rules["text_length"] == ()
    jax_tp = {c.name: c for c in strategies.enumerate_candidates(MODEL, WORKLOAD, 8)}
    assert jax_tp["dp2-uly2-tp2"].rules["attn_heads"] == ("tensor",)
    assert jax_tp["dp2-uly2-tp2"].rules["text_length"] == ()
    # Ulysses over context alone must divide the heads under MaxDiffusion (40 heads: 8 does)
    assert "uly8" in cands and kernels.attention_shapes(
        tp, MODEL, WORKLOAD).heads == MODEL.heads // 2


def test_a_tpu_candidate_carries_its_splash_block_sizes_as_flash_block_sizes():
    from aoizora.planning import kernels

    for c in strategies.enumerate_candidates(MODEL, WORKLOAD, 8, "maxdiffusion"):
        k = kernels.with_kernel(c, MODEL, WORKLOAD, "tpu", "v5e:2x4")
        o = maxdiffusion.overrides(k)
        # block_q twice: tokamax kernels and ulysses_ring read the forward block_q from
        # block_q_dkv, the others from block_q (max_utils.get_flash_block_sizes).
        assert o["flash_block_sizes"] == {"block_q": k.block_q, "block_kv": k.block_kv,
                                          "block_kv_compute": k.block_kv_compute,
                                          "block_q_dkv": k.block_q}
        assert o["flash_min_seq_length"] == 0  # else short sequences run dot_product
        assert maxdiffusion.candidate_of(o).key() == k.key(), c.name
    assert "flash_block_sizes" not in maxdiffusion.overrides(c)  # blockwise: the user's


def test_recipes_map_to_maxdiffusions_own_keys():
    base = strategies.baseline_shardings(MODEL, WORKLOAD, 8)
    assert maxdiffusion.overrides(base[strategies.MAXDIFFUSION_CFG]) == {
        "ici_data_parallelism": 2, "ici_fsdp_parallelism": 1, "ici_context_parallelism": 4,
        "ici_tensor_parallelism": 1, "attention": "flash", "attention_sharding_uniform": True}
    assert maxdiffusion.overrides(base[strategies.MAXDIFFUSION_USP]) == {
        "ici_data_parallelism": 2, "ici_fsdp_parallelism": 1, "ici_context_parallelism": 4,
        "ici_tensor_parallelism": 1, "attention": "ulysses_ring",
        "attention_sharding_uniform": True, "ulysses_shards": 2}
    # Weights kept off the context axis need MaxDiffusion's embed rule changed, and only that.
    plain = next(c for c in strategies.enumerate_candidates(MODEL, WORKLOAD, 8)
                 if c.name == "dp2-uly4")
    rules = maxdiffusion.overrides(plain)["logical_axis_rules"]
    changed = [r for r, b in zip(rules, maxdiffusion.BASE_RULES) if r != b]
    assert changed == [["embed", "fsdp"]]


def _plan(topology: str, candidate: strategies.Candidate, device_of: list[int],
          model: str = MODEL.name, video: str = "720p", frames: int = 81,
          per_video: dict | None = None):
    topo = _core.make_topology(topology)
    choice = SimpleNamespace(strategy=candidate.to_dict(), placement="given", simulated_s=1.0,
                             device_coords=[list(k) for k in topo.coords_of(device_of)])
    return SimpleNamespace(choice=choice, model={"name": model},
                           workload={"video": video, "frames": frames, "batch": 2},
                           topology={"name": topology, "compile_target": {
                               "platform": "tpu", "name": topology}},
                           video=per_video or {})


def test_emitted_order_builds_the_planned_mesh_on_tpu7x():
    usp = strategies.baseline_shardings(MODEL, WORKLOAD, 8)[strategies.MAXDIFFUSION_USP]
    usp = kernels.with_kernel(usp, MODEL, WORKLOAD, "tpu", "tpu7x:2x2x1")
    # A placement that is not jax's default: the Ulysses pairs across chips.
    device_of = [0, 2, 1, 3, 4, 6, 5, 7]
    plan = _plan("tpu7x:2x2x1", usp, device_of)
    text = maxdiffusion.yaml_text(plan)
    doc = yaml.safe_load(text)
    assert doc["overrides"]["attention"] == "ulysses_ring"
    # Blocks were chosen under MaxDiffusion's scoped VMEM flag: the emit says to run with it.
    if usp.kernel == "splash":
        assert doc["maxdiffusion"]["libtpu_init_args"] == "--xla_tpu_scoped_vmem_limit_kib=65536"
    # Not jax's (so not MaxDiffusion's) own order: the file says the launcher matters.
    assert doc["maxdiffusion"]["device_order"].startswith("differs")
    assert doc["device_order"]["mesh_shape"] == [2, 1, 4, 1]
    devices = tpu.compile_only_devices("tpu7x:2x2x1")
    mesh = maxdiffusion.maxdiffusion_mesh(doc, devices)
    assert mesh.axis_names == ("data", "fsdp", "context", "tensor")
    assert [list(k) for k in device_keys(mesh.devices.flat)] == plan.choice.device_coords
    # Device ids are jax's: the id of the device at each planned (x, y, z, core).
    key_of = dict(zip((d.id for d in devices), device_keys(devices)))
    assert [list(key_of[i]) for i in doc["device_order"]["device_ids"]] == plan.choice.device_coords


def test_an_order_for_another_slice_is_one_line():
    usp = strategies.baseline_shardings(MODEL, WORKLOAD, 8)[strategies.MAXDIFFUSION_USP]
    doc = yaml.safe_load(maxdiffusion.yaml_text(_plan("tpu7x:2x2x1", usp, list(range(8)))))
    with pytest.raises(UserError, match="does not fit"):
        maxdiffusion.maxdiffusion_mesh(doc, tpu.compile_only_devices("v5e:2x2"))


# ---- the contract: what MaxDiffusion has at the recorded commit --------------------------
def _pyconfig_value(text: str, kind: str):
    """A command-line value as MaxDiffusion's pyconfig types it by the YAML default's type
    (pyconfig._HyperParameters: dicts are JSON, lists Python literals, bools true/false)."""
    import ast
    import json

    if kind == "dict":
        return json.loads(text)
    if kind == "list":
        return ast.literal_eval(text)
    if kind == "bool":
        assert text.lower() in ("true", "false"), text
        return text.lower() == "true"
    return {"int": int, "float": float, "str": str}[kind](text)


def _every_emitted_document():
    """Every preset MaxDiffusion has a config for x its default workloads x every candidate
    on 4, 8 and 16 devices (the splash kernel where it applies), emitted without devices."""
    from aoizora.models import get_model

    for name in maxdiffusion.CONFIG_OF:
        model = get_model(name)
        for wl in model.default_workloads()[:1]:
            resolution = wl.name.split("-")[0]
            for n, slice_ in ((4, "v5e:2x2"), (8, "v6e:2x4"), (16, "v5e:4x4")):
                for c in strategies.enumerate_candidates(model, wl, n, "maxdiffusion"):
                    k = kernels.with_kernel(c, model, wl, "tpu", slice_)
                    plan = _plan(slice_, k, list(range(n)), name, resolution, wl.frames)
                    yield name, maxdiffusion.to_maxdiffusion(plan, list(range(n)))


def test_every_emitted_key_kernel_and_block_key_is_maxdiffusions():
    """The CI side of bench/maxdiffusion_check.py: each emitted argument is a key of the
    model's MaxDiffusion config and parses (as pyconfig types it) to the override; the kernel
    is registered; every block key is one get_flash_block_sizes reads. Read from the recorded
    table directly, so a wrong name in the emitter fails here even if its own check is wrong."""
    facts = maxdiffusion.contract()
    seen_kernels, count = set(), 0
    for name, doc in _every_emitted_document():
        config = doc["maxdiffusion"]["config"].rsplit("/", 1)[1]
        types = facts["configs"][config]
        parsed = {}
        for arg in doc["maxdiffusion"]["args"]:
            key, text = arg.split("=", 1)
            assert key in types, (name, key)
            parsed[key] = _pyconfig_value(text, types[key])
        assert parsed == doc["overrides"], name
        assert doc["overrides"]["attention"] in facts["kernels"]
        assert set(doc["overrides"].get("flash_block_sizes", {})) <= set(facts["block_size_keys"])
        assert doc["maxdiffusion"]["command"].count(" python ") == 1
        seen_kernels.add(doc["overrides"]["attention"])
        count += 1
    assert count > 100 and seen_kernels == {"flash", "tokamax_ring", "ulysses", "ulysses_ring"}


def test_the_workload_is_the_planned_one_video():
    usp = strategies.baseline_shardings(MODEL, WORKLOAD, 8)[strategies.MAXDIFFUSION_USP]
    doc = maxdiffusion.to_maxdiffusion(
        _plan("v6e:2x4", usp, list(range(8)), "wan2.1-t2v-1.3b", "480p", 21), list(range(8)))
    o = doc["overrides"]
    # One video = one CFG pair: MaxDiffusion runs per_device_batch_size x 8 prompts = 1.
    assert o["per_device_batch_size"] * 8 == 1
    assert (o["height"], o["width"], o["num_frames"]) == (480, 832, 21)
    assert doc["maxdiffusion"]["config"].endswith("/base_wan_1_3b.yml")
    assert "num_inference_steps" not in o  # no seconds per video priced: the config's count


def test_a_batch_of_two_videos_is_two_prompts_of_per_device_batch_size():
    """A plan at --batch 2 (the program's batch 4: two CFG pairs) runs 2 prompts per call:
    per_device_batch_size 2 / 8 in the file and on the command line; its per-video figure
    is carried beside the per-call one."""
    two = dataclasses.replace(get_workload("480p", 21, model="wan2.1-t2v-1.3b"), batch=4)
    cands = strategies.enumerate_candidates(get_model("wan2.1-t2v-1.3b"), two, 8,
                                            runtime="maxdiffusion")
    dp4 = next(c for c in cands if c.data == 4 and c.form == "allgather_kv")
    plan = _plan("v6e:2x4", dp4, list(range(8)), "wan2.1-t2v-1.3b", "480p", 21,
                 per_video={"steps": 12, "seconds": 7.0, "seconds_per_video": 3.5})
    plan.workload["batch"] = 4
    doc = maxdiffusion.to_maxdiffusion(plan, list(range(8)))
    assert doc["overrides"]["per_device_batch_size"] == 0.25
    assert "per_device_batch_size=0.25" in doc["maxdiffusion"]["args"]
    assert doc["overrides"]["ici_data_parallelism"] == 4
    assert (doc["aoizora"]["videos_per_call"], doc["aoizora"]["simulated_video_s"],
            doc["aoizora"]["simulated_s_per_video"]) == (2, 7.0, 3.5)
    back = yaml.safe_load(maxdiffusion.yaml_text(plan, doc=doc))
    assert back["overrides"]["per_device_batch_size"] == 0.25


def test_a_batch_maxdiffusion_would_truncate_is_refused_in_one_line():
    # pyconfig runs int(per_device_batch_size x devices) prompts: 1 / 49 x 49 < 1
    assert maxdiffusion.per_device_batch_size(3, 8) == 0.375
    with pytest.raises(UserError, match="cannot run 1 video"):
        maxdiffusion.per_device_batch_size(1, 49)


def test_the_step_count_seconds_per_video_priced_is_emitted():
    usp = strategies.baseline_shardings(MODEL, WORKLOAD, 8)[strategies.MAXDIFFUSION_USP]
    plan = _plan("v6e:2x4", usp, list(range(8)), "wan2.1-t2v-1.3b", "480p", 21,
                 per_video={"steps": 12, "seconds": 3.5})
    doc = maxdiffusion.to_maxdiffusion(plan, list(range(8)))
    assert doc["overrides"]["num_inference_steps"] == 12
    assert "num_inference_steps=12" in doc["maxdiffusion"]["args"]
    assert (doc["aoizora"]["steps"], doc["aoizora"]["simulated_video_s"]) == (12, 3.5)


def test_a_ring_plan_runs_maxdiffusions_ring_kernel_and_says_it_was_priced_by_a_stand_in():
    ring = next(c for c in strategies.enumerate_candidates(MODEL, WORKLOAD, 4)
                if c.form == "ring")
    doc = maxdiffusion.to_maxdiffusion(_plan("v5e:2x2", ring, list(range(4))), list(range(4)))
    assert doc["overrides"]["attention"] == "tokamax_ring"  # 'ring' is not registered
    assert "stand-in" in doc["aoizora"]["stand_in"]
    assert maxdiffusion.candidate_of(doc["overrides"]).key() == ring.key()


def test_a_kernel_or_key_maxdiffusion_lacks_is_refused(monkeypatch):
    ring = next(c for c in strategies.enumerate_candidates(MODEL, WORKLOAD, 4)
                if c.form == "ring")
    plan = _plan("v5e:2x2", ring, list(range(4)))
    monkeypatch.setitem(maxdiffusion.ATTENTION, "ring", "ring")  # the name it removed
    with pytest.raises(UserError, match="registers no attention kernel 'ring'"):
        maxdiffusion.to_maxdiffusion(plan, list(range(4)))
    with pytest.raises(UserError, match="has no key 'device_order'"):
        maxdiffusion.command_args({"device_order": [0, 1]}, "base_wan_14b.yml")


def test_a_model_without_a_maxdiffusion_config_is_refused_in_one_line():
    usp = strategies.baseline_shardings(MODEL, WORKLOAD, 8)[strategies.MAXDIFFUSION_USP]
    with pytest.raises(UserError, match="no Wan config for 'wan2.2-ti2v-5b'"):
        maxdiffusion.to_maxdiffusion(_plan("v6e:2x4", usp, list(range(8)), "wan2.2-ti2v-5b"),
                                     list(range(8)))


# ---- the launcher ------------------------------------------------------------------------
FAKE_GENERATE_WAN = '''
import sys, types
import jax
from maxdiffusion import max_utils, pyconfig
# What generate_wan does: pyconfig.initialize(argv), then reads config.use_magcache, then
# max_utils.create_device_mesh(config).
pyconfig.initialize(sys.argv)
print("MAGCACHE", pyconfig.config.use_magcache, pyconfig.config.magcache_K,
      pyconfig.config.retention_ratio)
ici = {k: int(v) for k, v in (a.split("=", 1) for a in sys.argv[2:]) if k.startswith("ici_")}
grid = max_utils.create_device_mesh(types.SimpleNamespace(**ici))
print("ARGV", sys.argv[1:])
print("IDS", [int(d.id) for d in grid.flat], list(grid.shape))
'''
# MaxDiffusion's pyconfig as generate_wan meets it: keys from the config file only (a
# 1.3B-like config without the MagCache keys), read back by attribute.
FAKE_PYCONFIG = '''
import types
_config = None
config = None
class HyperParameters:
    def __getattr__(self, attr):
        if attr not in _config.keys:
            raise AttributeError(f"Requested key {attr}, not in config")
        return _config.keys[attr]
def initialize(argv, **kwargs):
    global _config, config
    _config = types.SimpleNamespace(keys={"model_name": "wan2.1"})
    config = HyperParameters()
'''


def test_the_launcher_runs_maxdiffusions_entry_point_with_the_planned_devices(tmp_path):
    """A stand-in MaxDiffusion package (its entry point calls max_utils.create_device_mesh
    as generate_wan does) under the launcher: argv is the config file, the plan's arguments
    and the user's; the mesh holds the planned device ids in order; LIBTPU flags added.
    The real MaxDiffusion is checked by bench/maxdiffusion_check.py (docs/maxdiffusion.md)."""
    import os
    import subprocess
    import sys

    pkg = tmp_path / "maxdiffusion"
    (pkg / "configs").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "max_utils.py").write_text("def create_device_mesh(config, devices=None, "
                                      "logging=True):\n    raise AssertionError('not replaced')\n")
    (pkg / "generate_wan.py").write_text(FAKE_GENERATE_WAN)
    (pkg / "pyconfig.py").write_text(FAKE_PYCONFIG)
    usp = strategies.baseline_shardings(MODEL, WORKLOAD, 8)[strategies.MAXDIFFUSION_USP]
    order = [3, 1, 2, 0, 4, 6, 5, 7]
    doc = maxdiffusion.to_maxdiffusion(_plan("tpu7x:2x2x1", usp, list(range(8))), order)
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(doc))
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_force_host_platform_device_count=8",
           "LIBTPU_INIT_ARGS": ""}
    run = subprocess.run([sys.executable, "-m", "aoizora.launch.maxdiffusion",
                          str(tmp_path / "plan.yaml"), "--", "prompt=a cat"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    argv = eval(next(l for l in run.stdout.splitlines() if l.startswith("ARGV"))[5:])
    assert argv[0] == str(pkg / "configs" / "base_wan_14b.yml")
    assert argv[1:-1] == doc["maxdiffusion"]["args"] and argv[-1] == "prompt=a cat"
    assert f"IDS {order} [2, 1, 4, 1]" in run.stdout
    # the config lacked the MagCache keys generate_wan reads: filled as base_wan_14b has them
    assert "MAGCACHE False 2 0.2" in run.stdout and "lacks use_magcache" in run.stderr
    if doc["maxdiffusion"]["libtpu_init_args"]:
        assert "LIBTPU_INIT_ARGS +=" in run.stderr
    # Degrees changed on the command line no longer match the planned order: it stops.
    bad = subprocess.run([sys.executable, "-m", "aoizora.launch.maxdiffusion",
                          str(tmp_path / "plan.yaml"), "--", "ici_data_parallelism=1",
                          "ici_context_parallelism=8"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "plan's device order is for [2, 1, 4, 1]" in bad.stderr
    last = bad.stderr.strip().splitlines()[-1]
    assert "Traceback" not in bad.stderr and last.startswith("aoizora.launch.maxdiffusion: "
                                                               "error: the config asks for")


def test_every_maxdiffusion_candidate_is_priced_as_the_recorded_rules_resolve_it():
    """The contract test of what MaxDiffusion executes: its recorded rule tables (first match
    wins, the table pyconfig prepends for the kernel) and the kernels whose cross-attention
    keeps local K/V decide whether the attention's heads are split over tensor and whether
    the text K/V are split over context; the candidate's Layout rules (what the plan lowers
    and prices) must say the same, for every candidate on 8 devices."""
    for c in strategies.enumerate_candidates(MODEL, WORKLOAD, 8, "maxdiffusion"):
        md = maxdiffusion.resolved_attention(maxdiffusion.ATTENTION[c.form])
        heads_split = bool(c.rules["attn_heads"])
        text_split = bool(c.rules["text_length"])
        assert heads_split == (md["heads_over_tensor"] and c.tensor > 1), c.name
        assert text_split == (md["cross_kv_over_context"] and c.context > 1), c.name
    assert maxdiffusion.resolved_attention("ulysses")["cross_kv_over_context"]
    assert not maxdiffusion.resolved_attention("ulysses_ring")["cross_kv_over_context"]

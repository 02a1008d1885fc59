"""A plan as MaxDiffusion runs it: every candidate maps to MaxDiffusion's config keys and
back, its recipes map to the keys its docs give, and the emitted device order builds the
Mesh with each partition on its planned device (checked on compile-only TPU7x devices)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import yaml

from aoizora import _core, kernels, maxdiffusion, strategies, tpu
from aoizora.errors import UserError
from aoizora.models import get_model, get_workload
from aoizora.placement import device_keys

MODEL, WORKLOAD = get_model("wan2.1-t2v-14b"), get_workload("720p", 81)


@pytest.mark.parametrize("n", [4, 8, 16])
def test_every_candidate_round_trips_through_the_overrides(n):
    for c in strategies.enumerate_candidates(MODEL, WORKLOAD, n):
        o = maxdiffusion.overrides(c)
        assert (o["ici_data_parallelism"] * o["ici_fsdp_parallelism"]
                * o["ici_context_parallelism"] * o["ici_tensor_parallelism"]) == n
        assert maxdiffusion.candidate_of(o).key() == c.key(), c.name


def test_a_tpu_candidate_carries_its_splash_block_sizes_as_flash_block_sizes():
    from aoizora import kernels

    for c in strategies.enumerate_candidates(MODEL, WORKLOAD, 8):
        k = kernels.with_kernel(c, MODEL, WORKLOAD, "tpu", "v5e:2x4")
        o = maxdiffusion.overrides(k)
        assert o["flash_block_sizes"] == {"block_q": k.block_q, "block_kv": k.block_kv,
                                          "block_kv_compute": k.block_kv_compute}
        assert maxdiffusion.candidate_of(o).key() == k.key(), c.name
    assert "flash_block_sizes" not in maxdiffusion.overrides(c)  # blockwise: the user's


def test_recipes_map_to_maxdiffusions_own_keys():
    base = strategies.baseline_shardings(MODEL, WORKLOAD, 8)
    assert maxdiffusion.overrides(base[strategies.MAXDIFFUSION_CFG]) == {
        "ici_data_parallelism": 2, "ici_fsdp_parallelism": 1, "ici_context_parallelism": 4,
        "ici_tensor_parallelism": 1, "attention": "flash"}
    assert maxdiffusion.overrides(base[strategies.MAXDIFFUSION_USP]) == {
        "ici_data_parallelism": 2, "ici_fsdp_parallelism": 1, "ici_context_parallelism": 4,
        "ici_tensor_parallelism": 1, "attention": "ulysses_ring", "ulysses_shards": 2}
    # Weights kept off the context axis need MaxDiffusion's embed rule changed, and only that.
    plain = next(c for c in strategies.enumerate_candidates(MODEL, WORKLOAD, 8)
                 if c.name == "dp2-uly4")
    rules = maxdiffusion.overrides(plain)["logical_axis_rules"]
    changed = [r for r, b in zip(rules, maxdiffusion.BASE_RULES) if r != b]
    assert changed == [["embed", "fsdp"]]


def _plan(topology: str, candidate: strategies.Candidate, device_of: list[int]):
    topo = _core.make_topology(topology)
    choice = SimpleNamespace(strategy=candidate.to_dict(), placement="given", simulated_s=1.0,
                             device_coords=[list(k) for k in topo.coords_of(device_of)])
    return SimpleNamespace(choice=choice, model={"name": MODEL.name},
                           topology={"name": topology, "compile_target": {
                               "platform": "tpu", "name": topology}})


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
        assert doc["aoizora"]["libtpu_init_args"] == "--xla_tpu_scoped_vmem_limit_kib=65536"
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

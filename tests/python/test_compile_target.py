"""The compile target of a plan: the slice's TPU with its wraparound, never CPU unless asked,
and a one-line refusal where the TPU compile cannot stand for the slice."""

from __future__ import annotations

import json

import pytest

from aoizora import _core
from aoizora.compile import tpu
from aoizora.compile.compile_target import compile_target_for, parse_spec
from aoizora.errors import UserError


def test_catalog_slice_compiles_for_its_tpu():
    t = compile_target_for(_core.make_topology("v5e:2x4"))
    assert (t.platform, t.name, t.devices, t.spec) == ("tpu", "v5e:2x4", 8, "v5e:2x4")


def test_torus_compiles_as_a_torus():
    t = compile_target_for(_core.make_topology("v5p:4x4x4"))
    assert t.wrap == (True, True, True) and t.spec == "v5p:4x4x4/wrap=111"
    assert parse_spec(t.spec) == ("v5p:4x4x4", (True, True, True))
    assert len(tpu.compile_only_devices(t.spec)) == 64


def test_json_topology_compiles_for_its_generation(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"name": "my-v5e-8", "generation": "v5e", "dims": [2, 4],
                                "wrap": [False, False]}))
    t = compile_target_for(_core.make_topology(str(path)))
    assert (t.platform, t.name, t.devices) == ("tpu", "v5e:2x4", 8)


def test_tpu7x_compiles_for_its_tpu_one_device_per_core():
    topo = _core.make_topology("tpu7x:2x2x1")
    t = compile_target_for(topo)
    assert (t.platform, t.name, t.devices) == ("tpu", "tpu7x:2x2x1", 8)
    devices = tpu.compile_only_devices(t.spec)
    assert len(devices) == topo.num_devices == 8
    # Every compile-only device is one of the topology's devices, (x, y, z, core).
    from aoizora.planning.placement import device_keys

    assert sorted(device_keys(devices)) == sorted(tuple(d) for d in topo.devices)
    assert compile_target_for(topo, "cpu").spec == "cpu:8"


def test_a_core_count_the_compiler_disagrees_with_is_refused():
    with pytest.raises(UserError, match="devices per chip.*--compile-target cpu"):
        compile_target_for(_FakeTopology())


class _FakeTopology:
    """A tpu7x grid whose model has one core per chip (what the catalog had before)."""
    num_devices = 4
    cores_per_chip = 1
    dims = (2, 2, 1)
    wrap = (False, False, False)
    spec = {"generation": "tpu7x"}


def test_unknown_platform_is_refused():
    with pytest.raises(UserError, match="unknown compile target"):
        compile_target_for(_core.make_topology("v5e:2x4"), "gpu")

"""The compile target of a plan: the slice's TPU with its wraparound, never CPU unless asked,
and a one-line refusal where the TPU compile cannot stand for the slice."""

from __future__ import annotations

import json

import pytest

from aoizora import _core, tpu
from aoizora.compile_target import compile_target_for, parse_spec
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


def test_tpu7x_is_refused_not_compiled_for_cpu_silently():
    topo = _core.make_topology("tpu7x:2x2x1")
    with pytest.raises(UserError, match="TensorCores per chip.*--compile-target cpu"):
        compile_target_for(topo)
    t = compile_target_for(topo, "cpu")
    assert (t.platform, t.spec) == ("cpu", "cpu:4")


def test_unknown_platform_is_refused():
    with pytest.raises(UserError, match="unknown compile target"):
        compile_target_for(_core.make_topology("v5e:2x4"), "gpu")

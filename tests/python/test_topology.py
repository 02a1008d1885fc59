"""Topology coordinates, the JAX default order and Mesh <-> placement, checked against JAX's
own compile-only TPU devices."""

import re

import numpy as np
import pytest

import aoizora.compile.jaxenv  # noqa: F401
from aoizora import _core
from aoizora.compile import tpu
from aoizora.hardware import probes
from aoizora.planning import placement

import jax
from jax.experimental import mesh_utils
from jax.sharding import Mesh

SLICES = ["v5e:2x4", "v5e:4x4", "v6e:2x4", "v4:2x2x2", "v5p:2x2x2", "v5p:4x4x4",
          "tpu7x:2x2x1", "tpu7x:2x2x2", "tpu7x:4x4x4"]


@pytest.mark.parametrize("name", SLICES)
def test_device_coords_match_compile_only_devices(name):
    topo = _core.make_topology(name)
    devices = tpu.compile_only_devices(name)
    assert topo.device_kind == devices[0].device_kind
    assert len(devices) == topo.num_devices == topo.num_chips * topo.cores_per_chip
    assert sorted(tuple(c) for c in topo.chips) == sorted({tuple(d.coords) for d in devices})
    # Chip ids are x-fastest and device ids core-fastest: JAX's own sort by reversed coords,
    # then core, gives the same order.
    keys = sorted(placement.device_keys(devices), key=lambda k: (tuple(reversed(k[:3])), k[3:]))
    assert keys == [tuple(c) for c in topo.devices]


def test_tpu7x_compile_only_devices_are_two_per_chip():
    # libtpu 0.0.42.1 (issue 15): ids 0-7, two per chip, core_on_chip 0, 1, 0, 1, ...
    devices = sorted(tpu.compile_only_devices("tpu7x:2x2x1"), key=lambda d: d.id)
    assert [d.id for d in devices] == list(range(8))
    assert [tuple(d.coords) for d in devices] == [
        (0, 0, 0), (0, 0, 0), (1, 0, 0), (1, 0, 0), (0, 1, 0), (0, 1, 0), (1, 1, 0), (1, 1, 0)]
    assert [d.core_on_chip for d in devices] == [0, 1] * 4
    # ... which are our device ids 0-7.
    topo = _core.make_topology("tpu7x:2x2x1")
    assert placement.device_keys(devices) == [tuple(c) for c in topo.devices]


def test_link_counts_and_wrap():
    assert _core.make_topology("v5e:4x4").num_links == 48
    assert _core.make_topology("v5e:16x16").num_links == 1024
    assert _core.make_topology("v5e:8x16").wrap == [False, True, False]
    with pytest.raises(_core.CoreError, match="v5e:2x4"):
        _core.make_topology("v5e:3x5")


CASES = [
    ("v5e:2x4", (2, 4)), ("v5e:2x4", (8,)), ("v5e:2x4", (4, 2)),
    ("v5e:4x4", (4, 4)), ("v5e:4x4", (16,)), ("v5e:4x4", (2, 8)), ("v5e:4x4", (2, 2, 4)),
    ("v5e:4x4", (8, 2)), ("v6e:2x4", (2, 4)),
    ("v4:2x2x2", (2, 4)), ("v4:2x2x2", (8,)), ("v4:2x2x2", (2, 2, 2)),
    ("v5p:2x2x2", (4, 2)), ("v5p:4x4x4", (4, 16)), ("v5p:4x4x4", (16, 4)),
    ("v5p:4x4x4", (4, 4, 4)), ("v5p:4x4x4", (64,)),
    # TPU7x: two devices per chip; the tray handler up to 32 devices, then the 4-axis torus.
    ("tpu7x:2x2x1", (8,)), ("tpu7x:2x2x1", (2, 4)), ("tpu7x:2x2x1", (2, 2, 2)),
    ("tpu7x:2x2x1", (4, 2)), ("tpu7x:2x2x2", (16,)), ("tpu7x:2x2x2", (2, 8)),
    ("tpu7x:2x2x2", (4, 4)), ("tpu7x:2x2x4", (2, 16)), ("tpu7x:4x4x4", (2, 64)),
    ("tpu7x:4x4x4", (8, 16)), ("tpu7x:4x4x4", (16, 8)), ("tpu7x:4x4x4", (128,)),
]


@pytest.mark.parametrize("name,shape", CASES)
def test_default_order_matches_jax_make_mesh(name, shape):
    devices = tpu.compile_only_devices(name)
    names = tuple(f"a{i}" for i in range(len(shape)))
    try:
        mesh = jax.make_mesh(shape, names, devices=devices)
    except (NotImplementedError, ValueError):
        with pytest.raises(_core.CoreError):
            _core.default_placement(name, list(shape))
        return
    ours = _core.default_placement(name, list(shape))
    topo = _core.make_topology(name)
    assert [tuple(c) for c in topo.coords_of(ours.device_of)] == placement.device_keys(
        mesh.devices.flat)


@pytest.mark.parametrize("name,shape,split", [
    ("v5e:4x4", (2, 8), False), ("v5e:4x4", (2, 8), True), ("v4:2x2x2", (2, 4), False),
    ("v5p:4x4x4", (32, 2), False), ("v5p:4x4x4", (32, 2), True), ("v5p:4x4x4", (2, 8, 4), True),
    ("tpu7x:4x4x4", (32, 4), True), ("tpu7x:4x4x4", (4, 2, 16), True),
])
def test_create_device_mesh_with_and_without_split(name, shape, split):
    devices = tpu.compile_only_devices(name)
    try:
        arr = mesh_utils.create_device_mesh(shape, devices, allow_split_physical_axes=split)
    except NotImplementedError:
        with pytest.raises(_core.CoreError):
            _core.create_device_mesh(name, list(shape), split)
        return
    ours = _core.create_device_mesh(name, list(shape), split)
    topo = _core.make_topology(name)
    assert [tuple(c) for c in topo.coords_of(ours.device_of)] == placement.device_keys(arr.flat)


def test_mesh_placement_round_trip():
    topo = _core.make_topology("v5e:2x4")
    cycle = _core.tile_cycle_orders(topo, [8])[0]
    mesh = placement.mesh_for_placement(topo, cycle.device_of, (2, 4), ("data", "model"))
    assert mesh.devices.shape == (2, 4)
    back = placement.placement_of_mesh(mesh, topo)
    assert back.device_of == cycle.device_of
    # Neighbours in the flattened mesh are one hop apart on the chips.
    flat = [tuple(d.coords) for d in mesh.devices.flat]
    for a, b in zip(flat, flat[1:] + flat[:1]):
        assert sum(abs(x - y) for x, y in zip(a, b)) == 1


def _structure(hlo: str) -> str:
    """The compiled program without backend configs and debug metadata."""
    lines = []
    for line in hlo.splitlines():
        if re.match(r"\s*\d+ \{file_name_id", line):  # stack-frame table: call sites
            continue
        line = re.sub(r", backend_config=\{.*\}$", "", line)
        lines.append(re.sub(r", metadata=\{[^}]*\}", "", line))
    return "\n".join(lines)


def test_compiled_hlo_does_not_depend_on_device_order():
    """REFERENCE.md's open question: the TPU compiler emits the same collectives, replica
    groups and schedule whatever the Mesh's device order; only the collectives' backend
    configs (e.g. has_reordering_map) differ. So one compiled HLO can be re-mapped to every
    placement."""
    devices = tpu.compile_only_devices("v5e:2x4")
    by = placement.devices_by_coords(devices)
    row = [(x, y, 0) for y in range(4) for x in range(2)]
    scrambled = [row[i] for i in [5, 2, 7, 0, 3, 6, 1, 4]]
    texts = []
    for order in (row, scrambled):
        mesh = Mesh(np.array([by[c] for c in order]).reshape(2, 4), ("data", "model"))
        texts.append(probes.compile_probe(probes.PROBES[0], mesh))
    assert texts[0] != texts[1]  # the raw text does differ (backend configs)
    assert _structure(texts[0]) == _structure(texts[1])

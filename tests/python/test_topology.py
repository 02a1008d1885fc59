"""Topology coordinates, the JAX default order and Mesh <-> placement, checked against JAX's
own compile-only TPU devices."""

import re

import numpy as np
import pytest

import aoizora.jaxenv  # noqa: F401
from aoizora import _core, placement, probes, tpu

import jax
from jax.experimental import mesh_utils
from jax.sharding import Mesh

SLICES = ["v5e:2x4", "v5e:4x4", "v6e:2x4", "v4:2x2x2", "v5p:2x2x2", "v5p:4x4x4"]


@pytest.mark.parametrize("name", SLICES)
def test_chip_coords_match_compile_only_devices(name):
    topo = _core.make_topology(name)
    devices = tpu.compile_only_devices(name)
    assert topo.device_kind == devices[0].device_kind
    assert sorted(tuple(c) for c in topo.chips) == sorted(tuple(d.coords) for d in devices)
    # Chip ids are x-fastest: JAX's own sort by reversed coords gives the same order.
    jax_order = sorted(devices, key=lambda d: tuple(reversed(d.coords)))
    assert [tuple(d.coords) for d in jax_order] == [tuple(c) for c in topo.chips]


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
    assert [tuple(c) for c in topo.coords_of(ours.chip_of)] == [
        tuple(d.coords) for d in mesh.devices.flat]


@pytest.mark.parametrize("name,shape,split", [
    ("v5e:4x4", (2, 8), False), ("v5e:4x4", (2, 8), True), ("v4:2x2x2", (2, 4), False),
    ("v5p:4x4x4", (32, 2), False), ("v5p:4x4x4", (32, 2), True), ("v5p:4x4x4", (2, 8, 4), True),
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
    assert [tuple(c) for c in topo.coords_of(ours.chip_of)] == [tuple(d.coords) for d in arr.flat]


def test_mesh_placement_round_trip():
    topo = _core.make_topology("v5e:2x4")
    cycle = _core.tile_cycle_orders(topo, [8])[0]
    mesh = placement.mesh_for_placement(topo, cycle.chip_of, (2, 4), ("data", "model"))
    assert mesh.devices.shape == (2, 4)
    back = placement.placement_of_mesh(mesh, topo)
    assert back.chip_of == cycle.chip_of
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

"""Placements <-> JAX meshes. In JAX the device order of a Mesh *is* the placement, so a
placement (chip_of[partition] = chip id of the C++ topology) becomes a Mesh by looking up each
chip's coordinates among the devices, never by device id (compile-only ids are numbered host
by host)."""

from __future__ import annotations

from typing import Sequence

from aoizora import jaxenv  # noqa: F401
from aoizora.errors import UserError

import numpy as np


def _topology(topology):
    from aoizora import _core

    return _core.make_topology(topology) if isinstance(topology, str) else topology


def devices_by_coords(devices) -> dict[tuple[int, int, int], object]:
    """{(x, y, z): device} for one device per chip."""
    out = {}
    for d in devices:
        c = tuple(int(v) for v in d.coords)
        if c in out:
            raise UserError(f"two devices at coords {c}: expected one device per chip")
        out[c] = d
    return out


def mesh_for_placement(topology, chip_of: Sequence[int], mesh_shape: Sequence[int],
                       axis_names: Sequence[str], devices=None):
    """The jax.sharding.Mesh whose devices.flat[p] is the device on chip chip_of[p].

    `devices` defaults to the compile-only devices of the topology's name."""
    from jax.sharding import Mesh

    topo = _topology(topology)
    if devices is None:
        from aoizora import tpu

        devices = tpu.compile_only_devices(topo.name)
    by = devices_by_coords(devices)
    try:
        flat = [by[tuple(c)] for c in topo.coords_of(list(chip_of))]
    except KeyError as e:
        raise UserError(f"no device at coords {e.args[0]} for topology {topo.name}") from None
    if int(np.prod(mesh_shape)) != len(flat):
        raise UserError(f"mesh shape {tuple(mesh_shape)} does not hold {len(flat)} devices")
    return Mesh(np.array(flat, dtype=object).reshape(tuple(mesh_shape)), tuple(axis_names))


def placement_of_mesh(mesh, topology, name: str = "mesh"):
    """The _core.Placement of a Mesh's device order on `topology`."""
    from aoizora import _core

    coords = [tuple(int(v) for v in d.coords) for d in mesh.devices.flat]
    return _core.placement_from_coords(_topology(topology), coords, name)

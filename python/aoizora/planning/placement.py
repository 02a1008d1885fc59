"""Placements <-> JAX meshes. In JAX the device order of a Mesh *is* the placement, so a
placement (device_of[partition] = device id of the C++ topology) becomes a Mesh by looking up
each device by its position, never by device id (compile-only ids are numbered host by host).

A device's position (its key) is its chip's coords (x, y, z), and on chips with two
TensorCores (TPU7x) the core too: (x, y, z, core_on_chip). `Topology.coords_of` and
`Topology.devices` give the same keys for the C++ topology's devices."""

from __future__ import annotations

from typing import Sequence

from aoizora.compile import jaxenv  # noqa: F401
from aoizora.errors import UserError

import numpy as np


def _topology(topology):
    from aoizora import _core

    return _core.make_topology(topology) if isinstance(topology, str) else topology


def device_keys(devices) -> list[tuple[int, ...]]:
    """Each device's key: (x, y, z), or (x, y, z, core) when some device of the list is a
    chip's second core; (id,) for devices without coordinates (CPU)."""
    devices = list(devices)
    if not devices or getattr(devices[0], "coords", None) is None:
        return [(int(d.id),) for d in devices]
    two_cores = any(int(getattr(d, "core_on_chip", 0)) > 0 for d in devices)
    return [tuple(int(v) for v in d.coords) + ((int(d.core_on_chip),) if two_cores else ())
            for d in devices]


def devices_by_coords(devices) -> dict[tuple[int, ...], object]:
    """{device key: device} (see device_keys); a repeated key is an error."""
    out = {}
    for key, d in zip(device_keys(devices), devices):
        if key in out:
            raise UserError(f"two devices at {key}: expected one device per chip, or per core "
                            "of a chip with two")
        out[key] = d
    return out


def mesh_for_placement(topology, device_of: Sequence[int], mesh_shape: Sequence[int],
                       axis_names: Sequence[str], devices=None):
    """The jax.sharding.Mesh whose devices.flat[p] is the topology's device device_of[p].

    `devices` defaults to the compile-only devices of the topology's name."""
    from jax.sharding import Mesh

    topo = _topology(topology)
    if devices is None:
        from aoizora.compile import tpu

        devices = tpu.compile_only_devices(topo.name)
    by = devices_by_coords(devices)
    try:
        flat = [by[tuple(c)] for c in topo.coords_of(list(device_of))]
    except KeyError as e:
        raise UserError(f"no device at coords {e.args[0]} for topology {topo.name}") from None
    if int(np.prod(mesh_shape)) != len(flat):
        raise UserError(f"mesh shape {tuple(mesh_shape)} does not hold {len(flat)} devices")
    return Mesh(np.array(flat, dtype=object).reshape(tuple(mesh_shape)), tuple(axis_names))


def placement_of_mesh(mesh, topology, name: str = "mesh"):
    """The _core.Placement of a Mesh's device order on `topology`."""
    from aoizora import _core

    coords = device_keys(mesh.devices.flat)
    return _core.placement_from_coords(_topology(topology), coords, name)


def axis_groups_on_chips(mesh_shape: Sequence[int], axis_names: Sequence[str],
                         device_keys_flat: Sequence[Sequence[int]]) -> dict[str, str]:
    """How the groups of each mesh axis sit on the chips, in words: {axis: "..."}.

    A group of an axis is the devices whose mesh coordinates differ only along it.
    `device_keys_flat[i]` is the key (x, y, z[, core]) of mesh.devices.flat[i]. On TPU7x
    this says which logical groups share a chip (their collectives then use the fast link
    between its two cores)."""
    shape = tuple(mesh_shape)
    # Each device's chip as one id (its coords), so numpy keeps the mesh shape.
    chip_ids = {}
    flat = [chip_ids.setdefault(tuple(k[:3]), len(chip_ids)) for k in device_keys_flat]
    grid = np.array(flat).reshape(shape)
    out = {}
    for a, name in enumerate(axis_names):
        n = shape[a]
        groups = np.moveaxis(grid, a, -1).reshape(-1, n)
        kinds = set()
        for g in groups:
            chips = len(set(g.tolist()))
            if chips == 1:
                kinds.add("within one chip" if n > 1 else "one device")
            elif chips == n:
                kinds.add(f"one device on each of {chips} chips")
            elif n % chips == 0 and all(list(g).count(c) == n // chips for c in set(g.tolist())):
                kinds.add(f"{n // chips} devices on each of {chips} chips")
            else:
                kinds.add(f"{n} devices on {chips} chips, unevenly")
        out[name] = " / ".join(sorted(kinds))
    return out

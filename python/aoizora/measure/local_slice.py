"""The slice a measurement's devices form, and the group shapes a collective sweep runs on.

    local_slice(platform, devs) -> LocalSlice: a TPU's devices as the catalog topology of
        their generation and coordinates ("v5e:2x4"); CPU devices as stand-ins for the chips
        of a v5e slice of their count (CPU device i is chip i), so the points name a slice
        `aoizora calibrate` can simulate. UserError when no catalog slice fits.
    generation_of(device_kind) -> "v5e" for "TPU v5 lite" (from the shipped profiles).
    mesh(sl) -> jax.sharding.Mesh with one axis per physical axis, ("z", "y", "x") and
        ("core",) on chips with two TensorCores; devices.flat is topology id order (x
        fastest), so a collective over all axes groups the devices in id order.
    group_shapes(sl) -> [GroupShape]: the lines along each physical axis with more than
        one device (all lines at once), the two cores of each chip, and the whole slice.

Group members are the topology's device ids (chip ids on one-core chips), as
calibration/published.json writes them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aoizora.errors import UserError

# CPU device counts and the v5e slice their devices stand in for.
_CPU_STAND_IN = {4: "v5e:2x2", 8: "v5e:2x4", 16: "v5e:4x4", 32: "v5e:4x8", 64: "v5e:8x8"}
_AXES = ("x", "y", "z", "core")   # the components of a device key (placement.device_keys)


@dataclass(frozen=True)
class LocalSlice:
    topology: str          # catalog name, e.g. "v5e:2x4"
    generation: str
    devices: tuple         # jax devices; devices[i] is the topology's device i
    keys: tuple            # keys[i]: (x, y, z) or (x, y, z, core) of device i
    wrap: tuple            # per physical axis x, y, z
    stand_in: bool         # CPU devices standing in for the slice's chips


@dataclass(frozen=True)
class GroupShape:
    name: str              # "x", "y", "z", "core" or "slice"
    shape: str             # "line", "ring" (a wrapped axis), "cores" or "slice"
    axes: tuple            # mesh axes the collective runs over
    groups: tuple          # tuples of topology device ids, in group order
    describe: str


def _topology(name: str):
    from aoizora import _core

    return _core.make_topology(name)


def generation_of(kind: str) -> str:
    """The generation whose shipped profile names this device kind ("TPU v5 lite" -> v5e)."""
    from aoizora.hardware import hardware_file
    from aoizora.compile.compile_target import DEVICES_PER_CHIP

    for gen in DEVICES_PER_CHIP:
        if hardware_file.shipped(gen)["device_kind"] == kind:
            return gen
    raise UserError(f"device kind {kind!r} is not one of the generations aoizora models "
                    f"({', '.join(DEVICES_PER_CHIP)})")


def _tpu_topology(devs: list) -> str:
    from aoizora import _core
    from aoizora.planning.placement import device_keys

    gen = generation_of(devs[0].device_kind)
    dims = [max(k[a] for k in device_keys(devs)) + 1 for a in range(3)]
    names = [f"{gen}:{'x'.join(map(str, dims))}"]
    if dims[2] == 1:
        names.insert(0, f"{gen}:{dims[0]}x{dims[1]}")
    for name in names:
        try:
            if _topology(name).num_devices == len(devs):
                return name
        except _core.CoreError:
            continue
    raise UserError(f"{len(devs)} devices of {gen} at {'x'.join(map(str, dims))}: no catalog "
                    f"slice of that shape ({' or '.join(names)}), so no point could be "
                    "simulated by aoizora calibrate")


def local_slice(platform: str, devs: list) -> LocalSlice:
    from aoizora.planning.placement import devices_by_coords

    if platform == "cpu":
        if len(devs) not in _CPU_STAND_IN:
            raise UserError(f"--devices {len(devs)}: CPU devices stand in for a v5e slice of "
                            f"{', '.join(map(str, _CPU_STAND_IN))} chips; use one of those")
        name, ordered = _CPU_STAND_IN[len(devs)], list(devs)
    else:
        name = _tpu_topology(devs)
    topo = _topology(name)
    keys = [tuple(int(v) for v in c) for c in topo.coords_of(list(range(topo.num_devices)))]
    if platform != "cpu":
        by_key = devices_by_coords(devs)
        ordered = [by_key[k] for k in keys]
    return LocalSlice(name, topo.spec["generation"], tuple(ordered), tuple(keys),
                      tuple(bool(w) for w in topo.wrap), platform == "cpu")


def _id_grid(sl: LocalSlice) -> np.ndarray:
    """grid[z, y, x(, core)] = topology device id."""
    extents = [max(k[a] for k in sl.keys) + 1 for a in range(len(sl.keys[0]))]
    order = [2, 1, 0] + ([3] if len(extents) == 4 else [])
    grid = np.full([extents[a] for a in order], -1)
    for i, k in enumerate(sl.keys):
        grid[tuple(k[a] for a in order)] = i
    return grid


def _mesh_axes(sl: LocalSlice) -> tuple:
    return ("z", "y", "x") + (("core",) if len(sl.keys[0]) == 4 else ())


def mesh(sl: LocalSlice):
    from jax.sharding import Mesh

    grid = _id_grid(sl)
    devices = np.array([sl.devices[i] for i in grid.flat], dtype=object).reshape(grid.shape)
    return Mesh(devices, _mesh_axes(sl))


def group_shapes(sl: LocalSlice) -> list[GroupShape]:
    grid, names = _id_grid(sl), _mesh_axes(sl)
    unit = "CPU devices standing in for chips" if sl.stand_in else "chips"
    out = []
    for a in _AXES:
        if a not in names or grid.shape[names.index(a)] < 2:
            continue
        k = grid.shape[names.index(a)]
        groups = np.moveaxis(grid, names.index(a), -1).reshape(-1, k)
        if a == "core":
            shape, words = "cores", f"the {k} cores of each chip"
        else:
            wrapped = sl.wrap[_AXES.index(a)]
            shape = "ring" if wrapped else "line"
            words = (f"lines along {a} ({k} {unit} each, "
                     f"{'with' if wrapped else 'without'} wraparound)")
        out.append(GroupShape(a, shape, (a,), _tuples(groups),
                              f"{words}; all {len(groups)} groups at once on {sl.topology}"))
    if len(out) > 1:
        out.append(GroupShape("slice", "slice", names, _tuples(grid.reshape(1, -1)),
                              f"the whole slice {sl.topology}: one group of {grid.size} "
                              "devices in id order (x fastest)"))
    return out


def _tuples(groups: np.ndarray) -> tuple:
    return tuple(tuple(int(i) for i in g) for g in groups)

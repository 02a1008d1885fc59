"""A compiled HLO program as `rank` and `simulate` read it: its collective graph, the one
check that it spans the slice, and its own logical mesh.

    load(path) -> (text, _core.CollectiveGraph): the HLO file checked (validate.hlo_text) and
        loaded; UserError, one line, when the core cannot read it.
    check_spans(partitions, topo) -> None: UserError (one line, both numbers) unless the
        program's partition count is the slice's device count. A placement puts every
        device of the slice to work, so a smaller program is refused whatever the placement.
    own_mesh(text, partitions) -> [sizes]: the logical mesh the program was compiled for, read
        from its shardings (below); [partitions] when they do not tell.
    mesh_shape(flag_text, text, partitions) -> [sizes]: --mesh when given (checked: positive
        sizes whose product is `partitions`, and a mesh the shardings allow: below), else
        own_mesh. Both commands' default.

The own mesh is read by the core (cpp/aoizora/hlo/own_mesh.h states the rule; the C++
`aoizora-rank` takes it too): each tiled sharding splits the devices, in order, at the
prefix products of its tile sizes (a transposed iota at those of its reshape sizes), and the
mesh is the common refinement of those splits, the coarsest mesh in which every sharding is
a product of consecutive axes. E.g. `devices=[2,1,4]<=[8]` and
`devices=[1,4,2]<=[2,4]T(1,0)` give 2x4. Axes of size 1 leave no trace in the HLO and are
not part of it. Explicit device lists are not read.

A --mesh the shardings allow splits the devices at least where they do: the own mesh, or
one that splits its axes further (2x4 allows 2x4 and 2x2x2, not 4x2 nor 1x8), axes of size
1 anywhere. Where the shardings do not tell (no tiled sharding, splits that are no chain),
every mesh of the right size is allowed.
"""

from __future__ import annotations

import math

from aoizora.errors import UserError


def load(path: str, flag: str = "--hlo"):
    from aoizora import _core
    from aoizora.inputs import validate

    text = validate.hlo_text(path, flag)
    try:
        return text, _core.load_hlo_file(path)
    except _core.CoreError as e:
        raise UserError(f"cannot read the HLO: {e}") from None


def check_spans(partitions: int, topo) -> None:
    if partitions != topo.num_devices:
        raise UserError(f"the HLO was compiled for {partitions} partitions but {topo.name} has "
                        f"{topo.num_devices} devices: use a slice of {partitions} devices (or "
                        f"compile the program for {topo.num_devices})")


def _splits(sizes: list[int]) -> set[int]:
    """The prefix products of `sizes` strictly inside (1, product)."""
    out, p = set(), 1
    total = math.prod(sizes)
    for s in sizes:
        p *= s
        if 1 < p < total:
            out.add(p)
    return out


def own_mesh(text: str, partitions: int) -> list[int]:
    from aoizora import _core

    return list(_core.own_mesh(text, partitions))


def _refinements(mesh: list[int], limit: int) -> list[list[int]]:
    """Meshes that split `mesh`'s axes further (itself first), axes of size 1 left out; at
    most `limit` of them."""
    def factorisations(n: int) -> list[list[int]]:
        if n == 1:
            return [[]]
        return [[d] + rest for d in range(n, 1, -1) if n % d == 0
                for rest in factorisations(n // d)]

    out: list[list[int]] = [[]]
    for size in mesh:
        out = [m + f for m in out for f in factorisations(size)][:limit]
    return out


def mesh_shape(flag_text: str | None, text: str, partitions: int) -> list[int]:
    from aoizora.inputs import validate

    if not flag_text:
        return own_mesh(text, partitions)
    mesh = validate.mesh_shape(flag_text, "--mesh", partitions)
    own = own_mesh(text, partitions)
    need = _splits(own)   # where the shardings split the devices (none: they do not tell)
    missing = need - _splits(mesh)
    if missing:
        some = _refinements(own, 5)
        allowed = " or ".join("x".join(map(str, m)) for m in some[:4]) + (
            " or another that splits its axes further" if len(some) > 4 else "")
        raise UserError(f"--mesh {flag_text}: the program's shardings split its {partitions} "
                        f"devices at {', '.join(map(str, sorted(need)))} (its mesh "
                        f"{'x'.join(map(str, own))}), {flag_text} does not split them at "
                        f"{', '.join(map(str, sorted(missing)))}: use {allowed}")
    return mesh

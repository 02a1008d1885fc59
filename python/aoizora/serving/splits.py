"""Splits of a TPU slice into replicas: the ways to serve a model with several copies of it,
each on a contiguous sub-slice of its own that libtpu compiles for.

    enumerate_splits("v5e:4x4") -> list[Split]: the whole slice first, then by fewer chips
        per replica; UserError for a name that is not a catalog slice

A split tiles the slice with one replica shape in one orientation: a box of b_x x b_y x b_z
chips, each b dividing the slice's size along its axis, whose sizes in some order of the
axes are a catalog slice of the same generation (topo/catalog.cpp: the shapes libtpu
compiles for and a user can rent, so v5e:2x4 but not v5e:1x2). With one orientation the
grid of boxes is the only tiling (the box holding a corner is fixed, and layer by layer so
is every other), so a split is its box. A replica is planned as its catalog slice
(`planned_as`); a box in the other orientation (4x2 for v5e:2x4) is its transpose, the same
chips and links. Splits mixing shapes or orientations are not enumerated. On TPU7x a
replica holds whole chips, both cores of each.

Whether the replicas of a split can share a link (`shares_links`, said in `why`): a
dimension-order route between two chips of a box stays inside the box (the turn point
(x of one, y of the other) lies in it), so boxes that do not cut a wraparound axis never
share a link, and each replica's figures are those of its own slice alone. A split that
cuts an axis the slice wraps leaves the slice's wraparound links between replicas: it is
marked, to be simulated together, not priced apart. That rule also marks every box that is
not a torus where its catalog slice is (a 4x4x4 cube cut from a 4x4x8 torus; on catalog
slices an uncut axis wraps in the box as in the slice, and as in the box's catalog slice).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from aoizora.errors import UserError

AXES = "xyz"


@dataclass(frozen=True)
class Split:
    """One way to cut a slice into equal replicas. Sizes are chips per axis (x, y, z)."""

    slice_name: str                     # the slice split ("v5e:4x4")
    generation: str                     # its chip generation ("v5e", "tpu7x")
    slice_dims: tuple[int, int, int]
    replica_dims: tuple[int, int, int]  # one replica's box, in the slice's axes
    planned_as: str                     # the catalog slice a replica is planned as
    origins: tuple[tuple[int, int, int], ...]  # each replica's lowest corner, x fastest
    shares_links: bool                  # True: replicas could share a link (not priced apart)
    why: str                            # why they can, or cannot, share one

    @property
    def replicas(self) -> int:
        return len(self.origins)

    @property
    def chips_per_replica(self) -> int:
        return math.prod(self.replica_dims)

    @property
    def transposed(self) -> bool:
        """The box is its catalog slice with the axes in another order."""
        return self.replica_dims != _dims_of(self.planned_as)

    @property
    def name(self) -> str:
        """"2 x 2x4", "1 x 4x4", "8 x 1x1x1"."""
        return f"{self.replicas} x {_shape(self.replica_dims, self.generation)}"

    def describe(self) -> str:
        """The name, and the catalog slice a transposed box is planned as."""
        return self.name + (f" (as {self.planned_as})" if self.transposed else "")


def enumerate_splits(slice_name: str) -> list[Split]:
    """Every split of the catalog slice `slice_name` (module doc): one per replica box, the
    whole slice first, then by chips per replica, largest first. Raises UserError when
    the name is not a catalog slice (a topology file is not split in this version)."""
    from aoizora import _core

    if slice_name not in _core.catalog_names():
        from aoizora.inputs.validate import did_you_mean

        hint = did_you_mean(slice_name, _core.catalog_names()) or "aoizora topology --list"
        raise UserError(f"--topology {slice_name!r}: serve splits catalog slices only "
                        f"(v5e:4x4, tpu7x:2x2x2, ...): {hint}")
    topo = _core.make_topology(slice_name)
    gen = topo.spec["generation"]
    dims = tuple(int(d) for d in topo.dims)
    wrap = tuple(bool(w) for w in topo.wrap)
    boxes: dict[tuple[int, int, int], str] = {}
    for name in _catalog_of(gen):
        for box in _orientations(_dims_of(name), gen):
            if all(d % b == 0 for d, b in zip(dims, box)) and box not in boxes:
                boxes[box] = name
    splits = [_split(slice_name, gen, dims, wrap, box, name) for box, name in boxes.items()]
    return sorted(splits, key=lambda s: (-s.chips_per_replica, s.replica_dims))


def _split(slice_name: str, gen: str, dims, wrap, box, planned_as: str) -> Split:
    origins = tuple((x, y, z) for z in range(0, dims[2], box[2])
                    for y in range(0, dims[1], box[1]) for x in range(0, dims[0], box[0]))
    shares, why = sharing(dims, wrap, box)
    return Split(slice_name, gen, dims, box, planned_as, origins, shares, why)


def sharing(dims, wrap, box) -> tuple[bool, str]:
    """(whether replicas of `box` in a slice of `dims` with wraparound `wrap` could share a
    link, why), the rule of the module doc."""
    cut = [i for i in range(3) if box[i] < dims[i]]
    if len(cut) == 0:
        return False, "one replica: the whole slice"
    wrapped = [AXES[i] for i in cut if wrap[i]]
    if wrapped:
        return True, (f"the slice wraps along {', '.join(wrapped)}, which the split cuts: "
                      "its wraparound links join neighbouring replicas")
    return False, (f"disjoint boxes, no wraparound along {', '.join(AXES[i] for i in cut)} "
                   "(the axes the split cuts): a dimension-order route between two chips of "
                   "one replica stays inside it")


def _catalog_of(gen: str) -> list[str]:
    from aoizora import _core

    return [n for n in _core.catalog_names() if n.partition(":")[0] == gen]


def _dims_of(name: str) -> tuple[int, int, int]:
    """"v5e:2x4" -> (2, 4, 1); "tpu7x:2x2x1" -> (2, 2, 1)."""
    sizes = [int(d) for d in name.partition(":")[2].split("x")]
    return tuple(sizes + [1] * (3 - len(sizes)))


def _orientations(dims: tuple[int, int, int], gen: str) -> list[tuple[int, int, int]]:
    """The box in every order of its axes: x and y only for the 2D generations (v5e, v6e:
    their slices have one layer)."""
    if _is_2d(gen):
        return sorted({(dims[0], dims[1], 1), (dims[1], dims[0], 1)})
    return sorted(set(itertools.permutations(dims)))


def _is_2d(gen: str) -> bool:
    """A generation whose catalog names give two sizes ("v5e:2x4")."""
    return all(len(n.partition(":")[2].split("x")) == 2 for n in _catalog_of(gen))


def _shape(dims, gen: str) -> str:
    return "x".join(str(d) for d in (dims[:2] if _is_2d(gen) else dims))


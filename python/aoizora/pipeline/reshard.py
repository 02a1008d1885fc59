"""The price of moving one array from one stage's layout to the next stage's, from its bytes
and the slice's link bandwidth (no program is compiled for it).

A layout is a mesh (a strategies.Candidate: degrees and axis names), a PartitionSpec from the
candidate's rules, and a placement (chip of each logical device, mesh.devices.flat order).
Each chip already holds its box of the array under the source layout; what it must receive is
its destination box less that. Every chip receives at once, each over one link from a chip
that holds the data (a lower bound on its inbound links, an upper bound when the holder is
far): seconds = hop latency + max over chips of bytes to receive / one link's bandwidth, and
0 when no chip receives anything. A chip that holds two logical devices of one layout (never
on these meshes) holds the union, counted by its first box.

    layout_of(candidate, axes, shape, chips) -> Layout
    price(name, src, dst, shape, itemsize, topology_spec) -> ReshardPrice
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aoizora.planning.strategies import Candidate


@dataclass(frozen=True)
class Layout:
    mesh_axes: tuple          # ((name, size), ...) major first
    spec: tuple               # per array dim: () or mesh axis names, major first
    chips: tuple              # chip id of each logical device (mesh.devices.flat order)
    label: str = ""


@dataclass(frozen=True)
class ReshardPrice:
    name: str                 # "text context -> transformer", ...
    array_bytes: int          # the whole array
    max_chip_bytes: int       # the most any chip receives
    total_bytes: int          # summed over chips
    seconds: float            # simulated (the model above)
    source: str
    destination: str


class _Shapes:
    """What strategies.Layout.spec reads of a mesh: axis sizes by name."""

    def __init__(self, sizes: dict[str, int]):
        self.shape = sizes


def layout_of(candidate: Candidate, axes: tuple, shape: tuple, chips, label: str = "") -> Layout:
    """The layout an array of `shape` on logical `axes` gets under `candidate` (its rules,
    mesh axes that do not divide a dim dropped as strategies.Layout drops them)."""
    from aoizora.planning.strategies import Layout as StrategyLayout

    spec = StrategyLayout(candidate, _Shapes(dict(candidate.mesh_axes()))).spec(axes, shape)
    dims = tuple(() if p is None else ((p,) if isinstance(p, str) else tuple(p)) for p in spec)
    return Layout(tuple(candidate.mesh_axes()), dims, tuple(int(c) for c in chips),
                  label or candidate.name)


def boxes(layout: Layout, shape: tuple) -> list[tuple[tuple[int, int], ...]]:
    """The [start, stop) box of the array each logical device holds."""
    names = [n for n, _ in layout.mesh_axes]
    sizes = [s for _, s in layout.mesh_axes]
    out = []
    for flat in range(math.prod(sizes)):
        coord, rest = {}, flat
        for n, s in zip(reversed(names), reversed(sizes)):
            coord[n], rest = rest % s, rest // s
        box = []
        for dim, axes in zip(shape, layout.spec):
            parts, index = 1, 0
            for a in axes:
                index = index * dict(layout.mesh_axes)[a] + coord[a]
                parts *= dict(layout.mesh_axes)[a]
            step = dim // parts
            box.append((index * step, (index + 1) * step))
        out.append(tuple(box))
    return out


def _volume(box) -> int:
    return math.prod(max(0, b - a) for a, b in box)


def _overlap(x, y) -> int:
    return _volume(tuple((max(a, c), min(b, d)) for (a, b), (c, d) in zip(x, y)))


def price(name: str, src: Layout, dst: Layout, shape: tuple, itemsize: int,
          topology_spec: dict) -> ReshardPrice:
    """Bytes each chip must receive to go from `src` to `dst`, and their time (module doc)."""
    held: dict[int, tuple] = {}
    for chip, box in zip(src.chips, boxes(src, shape)):
        held.setdefault(chip, box)
    need: dict[int, int] = {}
    for chip, box in zip(dst.chips, boxes(dst, shape)):
        have = held.get(chip)
        missing = _volume(box) - (_overlap(box, have) if have else 0)
        need[chip] = max(need.get(chip, 0), missing * itemsize)
    worst = max(need.values(), default=0)
    seconds = (topology_spec["hop_latency"] + worst / topology_spec["link_bandwidth"]
               if worst else 0.0)
    return ReshardPrice(name, math.prod(shape) * itemsize, worst, sum(need.values()),
                        seconds, src.label, dst.label)

"""A placement in words: where the groups of each mesh axis sit on the slice, as a person
would say it ("context groups on 2x2 blocks, data across them (pairs 2 apart along x)").

A group of a mesh axis is the devices whose mesh coordinates differ only along it. Its
shape is read from its chips' coordinates: a contiguous box ("2x2 blocks", "rows of 4 along
x", "neighbour pairs along y"), chips equally spaced on a line ("pairs 2 apart along x"),
two chips on no line ("pairs 3 hops apart", wraparound ignored), anything else ("4 chips
spread over a 2x4 box"); on two-core chips (TPU7x) a group on one chip is "within one
chip". The machine name of a placement (Choice.placement) stays in the plan; these words
are for people.

    group_shape(keys) -> str            one group's device keys (x, y, z[, core]) in words
    axis_shapes(mesh_shape, axis_names, keys_flat) -> {axis: words}
    placement_in_words(mesh_shape, axis_names, keys_flat) -> one sentence, innermost axis
                                                             first
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

_AXES = "xyz"


def group_shape(keys: Sequence[Sequence[int]]) -> str:
    """One group in words, from its devices' keys (x, y, z[, core])."""
    chips = sorted({tuple(k[:3]) for k in keys})
    n = len(chips)
    cores = " (both cores of each)" if len(keys) > n else ""
    if n == 1:
        return "within one chip" if len(keys) > 1 else "one device"
    lo = [min(c[d] for c in chips) for d in range(3)]
    extent = [max(c[d] for c in chips) - lo[d] + 1 for d in range(3)]
    spread = [d for d in range(3) if extent[d] > 1]
    if math.prod(extent) == n:  # every chip of the box: a contiguous block
        if len(spread) == 1:
            d = _AXES[spread[0]]
            words = f"neighbour pairs along {d}" if n == 2 else f"rows of {n} along {d}"
        else:
            words = "x".join(str(extent[d]) for d in spread) + " blocks"
        return words + cores
    if len(spread) == 1:
        d = spread[0]
        steps = {b[d] - a[d] for a, b in zip(chips, chips[1:])}
        if len(steps) == 1:
            step = steps.pop()
            what = "pairs" if n == 2 else f"{n} chips"
            return f"{what} {step} apart along {_AXES[d]}{cores}"
    if n == 2:
        hops = sum(abs(a - b) for a, b in zip(*chips))
        return f"pairs {hops} hops apart{cores}"
    box = "x".join(str(extent[d]) for d in spread)
    return f"{n} chips spread over a {box} box{cores}"


def axis_shapes(mesh_shape: Sequence[int], axis_names: Sequence[str],
                keys_flat: Sequence[Sequence[int]]) -> dict[str, str]:
    """{axis: its groups in words} for every axis of more than one device; groups of
    different shapes are listed, " / " between them."""
    index = np.arange(len(keys_flat)).reshape(tuple(mesh_shape))
    out = {}
    for a, name in enumerate(axis_names):
        if mesh_shape[a] < 2:
            continue
        groups = np.moveaxis(index, a, -1).reshape(-1, mesh_shape[a])
        shapes = dict.fromkeys(group_shape([keys_flat[i] for i in g]) for g in groups)
        out[name] = " / ".join(sorted(shapes))
    return out


def placement_in_words(mesh_shape: Sequence[int], axis_names: Sequence[str],
                       keys_flat: Sequence[Sequence[int]]) -> str:
    """One sentence, innermost mesh axis first (the one whose groups are nearest):
    "ulysses groups within one chip, ring across them (neighbour pairs along x), data across
    those (neighbour pairs along y)"."""
    shapes = axis_shapes(mesh_shape, axis_names, keys_flat)
    inner_first = [a for a in reversed(list(axis_names)) if a in shapes]
    if not inner_first:
        return "one device"
    first = inner_first[0]
    parts = [f"{first} groups {_on(shapes[first])}"]
    for i, a in enumerate(inner_first[1:]):
        parts.append(f"{a} across {'them' if i == 0 else 'those'} ({shapes[a]})")
    return ", ".join(parts)


def _on(shape: str) -> str:
    return shape if shape.startswith("within") else f"on {shape}"

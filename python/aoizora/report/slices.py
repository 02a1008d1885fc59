"""The slice drawn as SVG under one placement: chips (z layers side by side) labelled by
their logical mesh coordinates (both cores on two-core chips), each directed link coloured
by the bytes a forward sends over it. Several drawings share one colour scale (`peak`) so
that two placements can be compared link by link.

    logical_coords(choice-like) -> {device key: mesh coords}
    slice_svg(dims, device_coords, mesh_shape, link_bytes, peak) -> "<svg ...>"
    scale_svg(peak) -> the colour scale, white (no bytes) to red (`peak` bytes)
"""

from __future__ import annotations

import html
from typing import Sequence

CELL = 110          # px between chip centres
CHIP = 64           # chip square side


def logical_coords(device_coords: Sequence[Sequence[int]],
                   mesh_shape: Sequence[int]) -> dict[tuple, tuple]:
    """device key (chip coords, and the core on two-core chips) -> logical mesh coords, from
    the row-major order of mesh.devices.flat."""
    out = {}
    for i, c in enumerate(device_coords):
        idx, rest = [], i
        for n in reversed(mesh_shape):
            idx.append(rest % n)
            rest //= n
        out[tuple(c)] = tuple(reversed(idx))
    return out


def heat(frac: float) -> str:
    """White-yellow-red ramp for a load fraction in [0, 1]; grey for an unused link."""
    frac = max(0.0, min(1.0, frac))
    if frac < 0.5:
        g = 255
        b = int(255 * (1 - 2 * frac))
    else:
        g = int(255 * (2 - 2 * frac))
        b = 0
    return f"rgb(255,{g},{b})" if frac > 0 else "#d0d0d0"


def scale_svg(peak: float) -> str:
    """A horizontal colour bar: unused, then 0 to `peak` bytes (MB per forward)."""
    stops = "".join(f'<stop offset="{f / 10:.1f}" stop-color="{heat(max(f / 10, 1e-3))}"/>'
                    for f in range(11))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="420" height="46" '
            f'font-family="sans-serif" font-size="12" class="scale">'
            f'<defs><linearGradient id="heat">{stops}</linearGradient></defs>'
            f'<rect x="10" y="6" width="16" height="14" fill="{heat(0)}"/>'
            f'<text x="32" y="18">unused</text>'
            f'<rect x="100" y="6" width="300" height="14" fill="url(#heat)" stroke="#999"/>'
            f'<text x="100" y="38">0 MB</text>'
            f'<text x="400" y="38" text-anchor="end">{peak / 1e6:.1f} MB per forward</text>'
            f'</svg>')


def slice_svg(dims: Sequence[int], device_coords: Sequence[Sequence[int]],
              mesh_shape: Sequence[int], link_bytes: Sequence[Sequence], peak: float) -> str:
    """SVG of the physical slice under a placement. link_bytes: [[src key, dst key, bytes],
    ...] (a link between the two cores of a chip has 4-element keys); peak: the bytes that
    colour red (the busiest link of every drawing on the same scale)."""
    nx, ny, nz = (list(dims) + [1, 1, 1])[:3]
    logical = logical_coords(device_coords, mesh_shape)
    peak = peak or 1.0
    layer_w = nx * CELL + 40
    width, height = nz * layer_w + 20, ny * CELL + 60

    def centre(c):
        x, y, z = (list(c) + [0, 0, 0])[:3]
        return 20 + z * layer_w + x * CELL + CELL / 2, 40 + y * CELL + CELL / 2

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12" class="slice">']
    for z in range(nz):
        if nz > 1:
            parts.append(f'<text x="{20 + z * layer_w}" y="20">z = {z}</text>')
    core_bytes: dict[tuple, float] = {}  # chip -> bytes over its intra-chip links (TPU7x)
    for src, dst, b in link_bytes:
        if list(src[:3]) == list(dst[:3]):
            core_bytes[tuple(src[:3])] = core_bytes.get(tuple(src[:3]), 0.0) + b
            continue
        (x1, y1), (x2, y2) = centre(src), centre(dst)
        if abs(x1 - x2) > CELL * 1.5 or abs(y1 - y2) > CELL * 1.5:
            continue  # wraparound links are not drawn across the picture
        # Offset the two directions of a cable so both are visible.
        dx, dy = (0, 6) if y1 == y2 else (6, 0)
        sgn = 1 if (x2 - x1) + (y2 - y1) > 0 else -1
        parts.append(
            f'<line x1="{x1 + sgn * dx}" y1="{y1 + sgn * dy}" x2="{x2 + sgn * dx}" '
            f'y2="{y2 + sgn * dy}" stroke="{heat(b / peak)}" stroke-width="5">'
            f'<title>{tuple(src)} -> {tuple(dst)}: {b / 1e6:.1f} MB</title></line>')
    by_chip: dict[tuple, list] = {}
    for key, lc in sorted(logical.items()):
        by_chip.setdefault(tuple(key[:3]), []).append((key[3:], lc))
    for c, cores in by_chip.items():
        x, y = centre(c)
        fill = heat(core_bytes[c] / peak) if c in core_bytes else "#e8f0ff"
        title = (f'<title>between its cores: {core_bytes[c] / 1e6:.1f} MB</title>'
                 if c in core_bytes else "")
        parts.append(
            f'<rect x="{x - CHIP / 2}" y="{y - CHIP / 2}" width="{CHIP}" height="{CHIP}" '
            f'rx="6" fill="{fill}" stroke="#335">{title}</rect>'
            f'<text x="{x}" y="{y - 14}" text-anchor="middle">chip {tuple(c[:2] if nz == 1 else c)}</text>')
        for i, (core, lc) in enumerate(cores):
            # One line per device: on TPU7x each chip holds two (core 0, core 1).
            label = (f"c{core[0]}: " if core else "") + ",".join(map(str, lc))
            parts.append(f'<text x="{x}" y="{y + 4 + 14 * i}" text-anchor="middle" '
                         f'font-weight="bold">{html.escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)

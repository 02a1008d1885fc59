"""A self-contained HTML report of a plan: the slice drawn as SVG (each chip labelled by its
logical mesh coordinates, each directed link coloured by the bytes the plan moves over it),
the ranking of candidates and placements, and the comparison with the baselines."""

from __future__ import annotations

import html
from typing import Any

from aoizora.atomic import write_atomic
from aoizora.plan import Choice, Plan

CELL = 110          # px between chip centres
CHIP = 64           # chip square side


def _logical_coords(choice: Choice) -> dict[tuple, tuple]:
    """device key (chip coords, and the core on two-core chips) -> logical mesh coords, from
    the row-major order of mesh.devices.flat."""
    out = {}
    shape = choice.mesh_shape
    for i, c in enumerate(choice.device_coords):
        idx, rest = [], i
        for n in reversed(shape):
            idx.append(rest % n)
            rest //= n
        out[tuple(c)] = tuple(reversed(idx))
    return out


def _heat(frac: float) -> str:
    """White-yellow-red ramp for a load fraction in [0, 1]."""
    frac = max(0.0, min(1.0, frac))
    if frac < 0.5:
        g = 255
        b = int(255 * (1 - 2 * frac))
    else:
        g = int(255 * (2 - 2 * frac))
        b = 0
    return f"rgb(255,{g},{b})" if frac > 0 else "#d0d0d0"


def slice_svg(plan: Plan) -> str:
    """SVG of the physical slice (z layers side by side) under the chosen placement."""
    dims = plan.topology["dims"]
    nx, ny, nz = (list(dims) + [1, 1, 1])[:3]
    logical = _logical_coords(plan.choice)
    links = plan.choice.extra.get("link_bytes", [])   # [[src_coords, dst_coords, bytes], ...]
    peak = max((b for _, _, b in links), default=0.0) or 1.0
    layer_w = nx * CELL + 40
    width, height = nz * layer_w + 20, ny * CELL + 60

    def centre(c):
        x, y, z = (list(c) + [0, 0, 0])[:3]
        return 20 + z * layer_w + x * CELL + CELL / 2, 40 + y * CELL + CELL / 2

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">']
    for z in range(nz):
        if nz > 1:
            parts.append(f'<text x="{20 + z * layer_w}" y="20">z = {z}</text>')
    core_bytes: dict[tuple, float] = {}  # chip -> bytes over its intra-chip links (TPU7x)
    for src, dst, b in links:
        if list(src[:3]) == list(dst[:3]):
            core_bytes[tuple(src[:3])] = core_bytes.get(tuple(src[:3]), 0.0) + b
            continue
        (x1, y1), (x2, y2) = centre(src), centre(dst)
        if abs(x1 - x2) > CELL * 1.5 or abs(y1 - y2) > CELL * 1.5:
            continue  # wraparound links are drawn as a note, not across the picture
        # Offset the two directions of a cable so both are visible.
        dx, dy = (0, 6) if y1 == y2 else (6, 0)
        sgn = 1 if (x2 - x1) + (y2 - y1) > 0 else -1
        parts.append(
            f'<line x1="{x1 + sgn * dx}" y1="{y1 + sgn * dy}" x2="{x2 + sgn * dx}" '
            f'y2="{y2 + sgn * dy}" stroke="{_heat(b / peak)}" stroke-width="5">'
            f'<title>{tuple(src)} -> {tuple(dst)}: {b / 1e6:.1f} MB</title></line>')
    by_chip: dict[tuple, list] = {}
    for key, lc in sorted(logical.items()):
        by_chip.setdefault(tuple(key[:3]), []).append((key[3:], lc))
    for c, cores in by_chip.items():
        x, y = centre(c)
        title = (f'<title>between its cores: {core_bytes[c] / 1e6:.1f} MB</title>'
                 if c in core_bytes else "")
        parts.append(
            f'<rect x="{x - CHIP / 2}" y="{y - CHIP / 2}" width="{CHIP}" height="{CHIP}" '
            f'rx="6" fill="#e8f0ff" stroke="#335">{title}</rect>'
            f'<text x="{x}" y="{y - 14}" text-anchor="middle">chip {tuple(c[:2] if nz == 1 else c)}</text>')
        for i, (core, lc) in enumerate(cores):
            # One line per device: on TPU7x each chip holds two (core 0, core 1).
            label = (f"c{core[0]}: " if core else "") + ",".join(map(str, lc))
            parts.append(f'<text x="{x}" y="{y + 4 + 14 * i}" text-anchor="middle" '
                         f'font-weight="bold">{html.escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.2f}"


def _choice_rows(rows: list[tuple[str, Choice]], best_sim: float | None) -> str:
    out = []
    for label, c in rows:
        speedup = ("-" if not (best_sim and c.simulated_s) else f"{c.simulated_s / best_sim:.3f}x")
        out.append(
            f"<tr><td>{html.escape(label)}</td><td>{html.escape(c.candidate)}</td>"
            f"<td>{'x'.join(map(str, c.mesh_shape))} ({', '.join(c.axis_names)})</td>"
            f"<td>{html.escape(c.placement)}</td><td>{_ms(c.q1_s)}</td><td>{_ms(c.q2_s)}</td>"
            f"<td>{_ms(c.simulated_s)}</td><td>{speedup}</td></tr>")
    return "\n".join(out)


def _axis_rows(c: Choice) -> str:
    groups = c.extra.get("axis_groups", {})
    return "".join(f"<tr><td>{html.escape(a)}</td><td>{html.escape(groups.get(a, '-'))}</td></tr>"
                   for a in c.axis_names)


def render(plan: Plan, placements: list[dict[str, Any]] | None = None) -> str:
    c = plan.choice
    best = c.simulated_s
    header = ("<tr><th></th><th>sharding</th><th>mesh</th><th>placement</th>"
              "<th>Q1 ms</th><th>Q2 ms</th><th>simulated ms</th><th>plan speedup</th></tr>")
    comparison = _choice_rows([("AoiZora plan", c)]
                              + [(k, b) for k, b in plan.baselines.items()], best)
    runners = _choice_rows([(f"#{i + 2}", r) for i, r in enumerate(plan.runners_up)], best)
    place_rows = ""
    for p in placements or []:
        place_rows += (f"<tr><td>{html.escape(p['name'])}</td><td>{_ms(p.get('q2_s'))}</td>"
                       f"<td>{_ms(p.get('simulated_s'))}</td></tr>")
    w = plan.workload
    timing = plan.planning
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>AoiZora plan: {html.escape(plan.model.get('name', ''))}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #ccc; padding: 4px 8px; text-align: right; }}
td:first-child, th:first-child, td:nth-child(2), td:nth-child(3), td:nth-child(4) {{ text-align: left; }}
.note {{ color: #666; font-size: 90%; }}
</style></head><body>
<h1>AoiZora plan</h1>
<p><b>{html.escape(plan.model.get('name', ''))}</b>, {html.escape(str(w.get('video')))}
{html.escape(str(w.get('frames')))} frames ({w.get('tokens', '?')} tokens) on
<b>{html.escape(plan.topology['name'])}</b>.
Chosen: <b>{html.escape(c.candidate)}</b>, mesh {'x'.join(map(str, c.mesh_shape))}
({', '.join(c.axis_names)}), placement <b>{html.escape(c.placement)}</b>:
simulated {_ms(c.simulated_s)} ms per forward.</p>
<p class="note">All latencies are predicted (Q1, Q2) or simulated on the model of
{html.escape(plan.topology.get('generation', 'the chip'))}; none is measured on hardware.
Planning took {timing.get('seconds', 0):.1f} s (measured).</p>
<h2>The slice</h2>
<p class="note">Each chip shows its physical coordinates and, in bold, its logical mesh
coordinates ({', '.join(c.axis_names)}). Each link is coloured by the bytes the plan sends
over it in one forward (white: none, red: the busiest link); hover for numbers.</p>
{slice_svg(plan)}
<h2>Where each mesh axis runs</h2>
<p class="note">The groups of a mesh axis are the devices whose logical coordinates differ
only along it; their collectives run on the links between them (on TPU7x, a group within one
chip uses the fast link between its two cores).</p>
<table><tr><th>mesh axis</th><th>its groups</th></tr>{_axis_rows(c)}</table>
<h2>Against the baselines</h2>
<table>{header}{comparison}</table>
<h2>Runner-up shardings</h2>
<table>{header}{runners}</table>
<h2>Placements of the chosen sharding</h2>
<table><tr><th>placement</th><th>Q2 ms</th><th>simulated ms</th></tr>{place_rows}</table>
</body></html>
"""


def write_report(path: str, plan: Plan, placements: list[dict[str, Any]] | None = None) -> None:
    write_atomic(path, render(plan, placements))

"""The report's tables as HTML rows, from plan data only. Times are printed in ms and are
predicted (Q1, Q2) or simulated, never measured.

    choice_rows([(label, Choice)], best_simulated_s) -> rows of the comparison tables
    kernel_text(Choice) -> the attention kernel, its block sizes and what bounds its calls
    axis_rows(Choice) -> where each mesh axis runs (groups on chips, shape on the slice)
    shared_chip_rows(Choice) -> on two-core chips: which logical devices share each chip
    placement_rows(placements) -> the chosen sharding's placements by Q2
    split_rows([(label, step_split)]) -> the step split in numbers
"""

from __future__ import annotations

import html
from typing import Any, Sequence

from aoizora.plan_format import Choice
from aoizora.report.slices import logical_coords

CHOICE_HEADER = ("<tr><th></th><th>sharding</th><th>mesh</th><th>attention kernel</th>"
                 "<th>placement</th><th>Q1 ms</th><th>Q2 ms</th><th>simulated ms</th>"
                 "<th>vs the plan</th></tr>")


def ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.3f}"


def seconds(s: float | None) -> str:
    """Seconds with four significant digits ("-" for none): per-video figures span 1e-4
    (the test model) to 1e2."""
    return "-" if s is None else f"{s:.4g}"


def mesh_text(c: Choice) -> str:
    return f"{'x'.join(map(str, c.mesh_shape))} ({', '.join(c.axis_names)})"


# What bounds a kernel call (kernels.BOUNDS), as the report says it.
BOUND_WORDS = {"mxu": "MXU", "vpu/eup": "VPU/EUP", "hbm-dma": "HBM DMA",
               "step-overhead": "per-step overhead"}


# The kernels with splash blocks (planning/kernels.SPLASH_KERNELS), as the report names them:
# tokamax's ring runs the splash forward kernel at every ring step.
KERNEL_WORDS = {"splash": "splash", "tokamax_ring": "tokamax ring, splash per step,"}


def kernel_text(c: Choice) -> str:
    """The attention kernel and its block sizes (block_q, block_kv / block_kv_compute)."""
    s = c.strategy
    if s.get("kernel") not in KERNEL_WORDS or "block_q" not in s:
        return s.get("kernel", "-")
    text = (f"{KERNEL_WORDS[s['kernel']]} q {s['block_q']}, kv {s['block_kv']} / "
            f"{s['block_kv_compute']}")
    bound = s.get("kernel_bound")
    return f"{text}; bound by {BOUND_WORDS.get(bound, bound)}" if bound else text


def placement_cell(c: Choice) -> str:
    """The placement in words, with its machine name (as in plan.json) beneath."""
    words = c.extra.get("placement_words")
    name = f'<code class="machine">{html.escape(c.placement)}</code>'
    return f"{html.escape(words)}<br>{name}" if words else name


def choice_rows(rows: Sequence[tuple[str, Choice]], best_sim: float | None) -> str:
    out = []
    for label, c in rows:
        ratio = ("-" if not (best_sim and c.simulated_s)
                 else f"{c.simulated_s / best_sim:.3f}x")
        out.append(
            f"<tr><td>{html.escape(label)}</td><td>{html.escape(c.candidate)}</td>"
            f"<td>{mesh_text(c)}</td><td>{html.escape(kernel_text(c))}</td>"
            f"<td>{placement_cell(c)}</td><td>{ms(c.q1_s)}</td>"
            f"<td>{ms(c.q2_s)}</td><td>{ms(c.simulated_s)}</td><td>{ratio}</td></tr>")
    return "\n".join(out)


def failed_rows(failed: dict[str, dict[str, str]]) -> str:
    """One row per baseline with no figures (tag -> {"candidate", "why"}): what it is and
    why it is not compared, beside choice_rows' columns."""
    return "\n".join(
        f"<tr><td>{html.escape(tag)} (not compared)</td><td>{html.escape(f['candidate'])}"
        f"</td><td colspan=\"7\">{html.escape(f['why'])}</td></tr>"
        for tag, f in failed.items())


def axis_rows(c: Choice) -> str:
    groups = c.extra.get("axis_groups", {})
    shapes = c.extra.get("axis_shapes", {})
    return "".join(
        f"<tr><td>{html.escape(a)}</td><td>{n}</td>"
        f"<td>{html.escape(groups.get(a, '-'))}</td>"
        f"<td>{html.escape(shapes.get(a, '-'))}</td></tr>"
        for a, n in zip(c.axis_names, c.mesh_shape))


def shared_chip_rows(c: Choice) -> str:
    """One row per chip holding more than one device: its devices' logical coordinates."""
    by_chip: dict[tuple, list[str]] = {}
    for key, lc in sorted(logical_coords(c.device_coords, c.mesh_shape).items()):
        core = f"core {key[3]}: " if len(key) > 3 else ""
        by_chip.setdefault(tuple(key[:3]), []).append(
            core + "(" + ", ".join(f"{a}={i}" for a, i in zip(c.axis_names, lc)) + ")")
    return "".join(f"<tr><td>{chip}</td><td>{html.escape('; '.join(devs))}</td></tr>"
                   for chip, devs in by_chip.items() if len(devs) > 1)


def placement_rows(placements: Sequence[dict[str, Any]]) -> str:
    return "".join(
        f"<tr><td><code>{html.escape(p['name'])}</code></td><td>{ms(p.get('q2_s'))}</td>"
        f"<td>{ms(p.get('simulated_s'))}</td></tr>" for p in placements)


def split_rows(rows: Sequence[tuple[str, dict[str, Any]]], kinds: Sequence[str]) -> str:
    """Per row: ms per block and per forward for compute and each kind."""
    out = []
    for label, split in rows:
        block = split.get("block_s") or {}
        cells = "".join(
            f"<td>{ms(block.get(k)) if block else '-'}</td>"
            f"<td>{ms(split['forward_s'].get(k, 0.0))}</td>" for k in kinds)
        out.append(f"<tr><td>{html.escape(label)}</td>{cells}"
                   f"<td>{ms(split['step_s'])}</td></tr>")
    return "\n".join(out)

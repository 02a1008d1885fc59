"""The report's pictures, drawn with matplotlib as inline SVG (text kept as text, stable ids,
no date), so the page stays one self-contained file.

    step_split_svg(rows) -> the step split as stacked bars, per block and per forward
        rows: [(label, Choice.extra["step_split"]), ...]
    video_split_svg(rows) -> seconds per video as stacked bars, one per row: text encoding,
        image conditioning, the denoising steps, the VAE decode, the reshards
        rows: [(label, plan.json video parts), ...]
    timeline_svg(timeline) -> one block per device (compute, communication, waiting for the
        group, idle), from Choice.extra["block_timeline"]

Both take plan data only (the report is a pure function of the plan).
"""

from __future__ import annotations

import io
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")  # no display; before anything imports pyplot
from matplotlib.figure import Figure  # noqa: E402

# One colour per part of the step, the same in every plot and plan.
KIND_COLOURS = {
    "compute": "#4c78a8",
    "all-gather": "#f58518",
    "reduce-scatter": "#e45756",
    "all-reduce": "#b279a2",
    "all-to-all": "#54a24b",
    "collective-permute": "#eeca3b",
    "collective-broadcast": "#9d755d",
}
OTHER_COLOUR = "#bab0ac"
TIMELINE_COLOURS = {"compute": "#4c78a8", "comm": "#f58518", "wait": "#e45756"}
TIMELINE_NAMES = {"compute": "compute", "comm": "collective (communicating)",
                  "wait": "collective (waiting for the group)"}


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "aoizora", "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog and doctype


def _label(text: str) -> str:
    """A bar's label on at most three lines of LABEL_COLUMNS characters: a baseline's long
    note (the table beside gives it whole) would otherwise widen the chart past the window."""
    import textwrap

    return "\n".join(textwrap.wrap(text, LABEL_COLUMNS, max_lines=3,
                                    placeholder=" (see the table)")) or text


LABEL_COLUMNS = 40


def _kinds(rows: Sequence[tuple[str, dict]]) -> list[str]:
    seen: dict[str, None] = {}
    for _, split in rows:
        seen.update(dict.fromkeys(split["forward_s"]))
    known = [k for k in KIND_COLOURS if k in seen]
    return known + sorted(k for k in seen if k not in KIND_COLOURS)


def step_split_svg(rows: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """Stacked horizontal bars, compute then exposed communication by kind: one panel per
    block (when every row has block figures), one per forward; milliseconds."""
    kinds = _kinds(rows)
    panels = [("per forward", "forward_s")]
    if all(split.get("block_s") for _, split in rows):
        panels.insert(0, ("per transformer block", "block_s"))
    height = 0.6 + 0.6 * len(rows)   # room for a label of three lines
    fig = Figure(figsize=(5.6 * len(panels), height + 1.2))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    labels = [_label(label) for label, _ in rows]
    for ax, (title, key) in zip(axes, panels):
        left = [0.0] * len(rows)
        for kind in kinds:
            widths = [split[key].get(kind, 0.0) * 1e3 for _, split in rows]
            ax.barh(range(len(rows)), widths, left=left, label=kind,
                    color=KIND_COLOURS.get(kind, OTHER_COLOUR), edgecolor="white",
                    linewidth=0.5)
            left = [a + b for a, b in zip(left, widths)]
        ax.set_yticks(range(len(rows)), labels if ax is axes[0] else [""] * len(rows))
        ax.invert_yaxis()
        ax.set_xlabel(f"simulated ms {title}")
        ax.set_title(title)
        ax.grid(axis="x", alpha=0.3)
    axes[-1].legend(loc="upper center", bbox_to_anchor=(0.5, -0.18 - 0.1 / height),
                    ncol=min(4, len(kinds)), frameon=False, fontsize=8)
    return _svg(fig)


# The parts of one video, in pipeline order, with their colours and names.
VIDEO_PARTS = {
    "text_encoder_s": ("#72b7b2", "text encoding"),
    "conditioning_s": ("#b279a2", "image conditioning"),
    "denoising_s": ("#4c78a8", "denoising steps"),
    "vae_decode_s": ("#f58518", "VAE decode"),
    "reshard_s": ("#e45756", "reshards between stages"),
}


def video_split_svg(rows: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """Stacked horizontal bars of seconds per video by part, one per row (a part a row
    lacks counts 0: the table beside says "-")."""
    parts = [k for k in VIDEO_PARTS if any(k in p for _, p in rows)]
    height = 0.6 + 0.6 * len(rows)
    fig = Figure(figsize=(7.5, height + 1.2))
    ax = fig.subplots()
    left = [0.0] * len(rows)
    for key in parts:
        widths = [p.get(key) or 0.0 for _, p in rows]
        colour, name = VIDEO_PARTS[key]
        ax.barh(range(len(rows)), widths, left=left, label=name, color=colour,
                edgecolor="white", linewidth=0.5)
        left = [a + b for a, b in zip(left, widths)]
    ax.set_yticks(range(len(rows)), [_label(label) for label, _ in rows])
    ax.invert_yaxis()
    ax.set_xlabel("simulated seconds per video")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18 - 0.1 / height),
              ncol=min(3, len(parts)), frameon=False, fontsize=8)
    return _svg(fig)


def timeline_svg(timeline: dict[str, Any]) -> str:
    """One row per device over the block's window (microseconds); white is idle."""
    devices = timeline["devices"]
    fig = Figure(figsize=(11, 0.8 + 0.32 * len(devices)))
    ax = fig.subplots()
    by_kind: dict[str, list[list]] = {k: [[] for _ in devices] for k in TIMELINE_COLOURS}
    for row, start, end, kind in timeline["slices"]:
        by_kind[kind][row].append((start * 1e6, (end - start) * 1e6))
    for kind, per_row in by_kind.items():
        for row, spans in enumerate(per_row):
            if spans:
                ax.broken_barh(spans, (row - 0.4, 0.8), color=TIMELINE_COLOURS[kind],
                               label=TIMELINE_NAMES[kind] if row == min(
                                   r for r, s in enumerate(per_row) if s) else None)
    span = (timeline["end_s"] - timeline["start_s"]) * 1e6
    ax.set_xlim(0, span)
    ax.set_ylim(len(devices) - 0.5, -0.5)
    ax.set_yticks(range(len(devices)), devices, fontsize=8)
    ax.set_xlabel(f"simulated microseconds into {timeline['what']} "
                  f"(from {timeline['start_s'] * 1e6:.1f} us into the forward)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25 - 1.0 / len(devices)), ncol=3,
              frameon=False, fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig)

"""The serving frontiers on one chart (PNG, matplotlib): for every slice, each split's latency
per video against videos per hour (left) and against cost per video (right), the splits on
each frontier joined by a line, one colour per slice. Several slices, several generations
included, share the axes, so a frontier of one generation can be read against another's.

    series(rows) -> {slice: [(latency_s, videos_per_hour, usd_per_video | None, split,
                              on_throughput_frontier, on_cost_frontier)]}   (what is drawn)
    draw(rows, path, title) -> series(rows), after writing the PNG to `path`

Rows are frontier.Row (or rows read back from `aoizora serve --json`: rows_from_json). Rows
not priced are left out, as they are from the frontiers. A slice without a price has no
points on the right. Every figure is simulated; the chart says so.
"""

from __future__ import annotations

from typing import Any

from aoizora.atomic import write_atomic
from aoizora.serving import frontier
from aoizora.serving.frontier import Row


def rows_from_json(doc: dict[str, Any]) -> list[Row]:
    """The rows of one `aoizora serve --json` document."""
    return [Row(**r) for r in doc["rows"]]


def series(rows: list[Row]) -> dict[str, list[tuple]]:
    """Per slice, its priced rows by latency (fastest first), each with the frontiers it is on
    (computed over all the rows given, as `aoizora serve` does over its slices)."""
    on = {k: {id(r) for r in frontier.frontier(rows, k)} for k in frontier.OBJECTIVES}
    out: dict[str, list[tuple]] = {}
    for r in rows:
        if not r.priced or r.latency_s is None:
            continue
        out.setdefault(r.topology, []).append(
            (r.latency_s, r.videos_per_hour, r.usd_per_video, r.split,
             id(r) in on["throughput"], id(r) in on["cost"]))
    return {t: sorted(pts) for t, pts in out.items()}


def draw(rows: list[Row], path: str, title: str) -> dict[str, list[tuple]]:
    """Writes the chart to `path` (PNG, written whole or not at all) and returns what it drew."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn = series(rows)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    for i, (topology, pts) in enumerate(sorted(drawn.items())):
        colour = f"C{i}"
        _panel(left, pts, 1, 4, colour, topology)
        _panel(right, [p for p in pts if p[2] is not None], 2, 5, colour, topology)
    left.set(xlabel="seconds per video (simulated)", ylabel="videos per hour, whole slice",
             title="throughput")
    right.set(xlabel="seconds per video (simulated)", ylabel="USD per video", title="cost")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"{title}\n(all figures simulated; filled: on the frontier)", fontsize=10)
    save_png(fig, path)
    return drawn


def save_png(fig, path: str) -> None:
    """The figure laid out and written as a PNG at `path` in one step (atomic), then closed."""
    import io

    import matplotlib.pyplot as plt

    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    write_atomic(path, buf.getvalue())


def _panel(ax, pts: list[tuple], value: int, flag: int, colour: str, label: str) -> None:
    """One slice's points on one panel: every split hollow, the frontier's filled and joined,
    each labelled with its split."""
    if not pts:
        return
    ax.scatter([p[0] for p in pts], [p[value] for p in pts], facecolors="none",
               edgecolors=colour)
    best = [p for p in pts if p[flag]]
    ax.plot([p[0] for p in best], [p[value] for p in best], "o-", color=colour, label=label)
    for p in pts:
        ax.annotate(p[3].split(" (")[0], (p[0], p[value]), fontsize=7,
                    textcoords="offset points", xytext=(4, 4))

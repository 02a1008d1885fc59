"""Latency under load on a chart (PNG, matplotlib): for every configuration (split x batch)
of a survey, its simulated p99 latency against the rate of requests, up to its capacity;
the stream's own rate and the p99 bound drawn across.

    rates(rows, load, points=16) -> [requests per hour]   the sweep: geometric from a
        twentieth of the least capacity to 0.97 of the most, 0.6 to 0.95 of each
        configuration's capacity, and the stream's own rate
    curves(rows, load, prices, rates) -> {label: [(rate, p99_s)]}   stable points only
    draw(rows, load, prices, path, title, bound_s=None) -> curves(...), after writing the PNG

Each rate replays the stream's own arrivals with every gap scaled (arrivals.scaled): the
same draws at every rate and for every configuration, so the curves are smooth and their
order is the configurations'. A rate at or over a configuration's capacity has no point
(its queue grows without bound). Every figure is simulated; the chart says so.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from aoizora.serving import arrivals, chart, load
from aoizora.serving.frontier import Row
from aoizora.serving.prices import PriceTable


def _capacities(rows: list[Row]) -> list[float]:
    return [r.replicas * r.batch * 3600.0 / r.latency_s for r in rows
            if r.priced and r.latency_s]


def rates(rows: list[Row], stream: load.Load, points: int = 16) -> list[float]:
    caps = _capacities(rows)
    if not caps:
        return [stream.rate_per_hour]
    grid = np.geomspace(min(caps) / 20.0, max(caps) * 0.97, points)
    near = [c * f for c in caps for f in _NEAR]
    return sorted({*map(float, grid), *near, stream.rate_per_hour})


_NEAR = (0.6, 0.8, 0.9, 0.95)   # fractions of each capacity swept too: where the tail rises


def curves(rows: list[Row], stream: load.Load, prices: PriceTable,
           at: list[float]) -> dict[str, list[tuple[float, float]]]:
    """Per configuration with figures ("v5e:4x4 2 x 2x4 B=1"), (rate, p99) at each rate of
    `at` it keeps up with; a split whose every row is over a rate is not simulated at it."""
    out: dict[str, list[tuple[float, float]]] = {}
    for rate in at:
        keeps_up = {(r.topology, r.split) for r in rows if r.priced and r.latency_s
                    and r.replicas * r.batch * 3600.0 / r.latency_s > rate}
        times = arrivals.scaled(stream.arrivals_s, stream.rate_per_hour, rate)
        moved = dataclasses.replace(stream, rate_per_hour=rate, arrivals_s=times)
        for r in load.under_load([r for r in rows if (r.topology, r.split) in keeps_up],
                                 moved, prices):
            if r.p99_s is not None and r.stable:
                out.setdefault(f"{r.topology} {r.split} B={r.batch}", []).append(
                    (rate, r.p99_s))
    return out


def draw(rows: list[Row], stream: load.Load, prices: PriceTable, path: str, title: str,
         bound_s: float | None = None) -> dict[str, list[tuple[float, float]]]:
    """Writes the chart to `path` (PNG, whole or not at all); returns what it drew."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    drawn = curves(rows, stream, prices, rates(rows, stream))
    fig, ax = plt.subplots(figsize=(8, 5))
    colours = plt.get_cmap("tab20")
    slices = sorted({label.split(" ")[0] for label in drawn})
    for i, (label, pts) in enumerate(sorted(drawn.items())):
        style = ("-", "--", ":", "-.")[slices.index(label.split(" ")[0]) % 4]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", linestyle=style,
                markersize=3, color=colours(i % 20), label=label)
    ax.axvline(stream.rate_per_hour, color="grey", linestyle="--", linewidth=1,
               label=f"{stream.rate_per_hour:,.4g} requests per hour")
    if bound_s is not None:
        ax.axhline(bound_s, color="red", linestyle=":", linewidth=1,
                   label=f"p99 bound {bound_s:g} s")
    ax.set(xscale="log", yscale="log", xlabel="requests per hour (offered)",
           ylabel="p99 latency, s (queue + service)")
    plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    source = "Poisson" if stream.source == "poisson" else "trace, gaps scaled"
    fig.suptitle(f"{title}\n(simulated: {source}, {stream.requests:,} requests after "
                 f"{stream.warmup:,} warm-up, batch wait {stream.wait_s:g} s)", fontsize=10)
    chart.save_png(fig, path)
    return drawn

"""The PNG plots of the grid (matplotlib, Agg): speedups of the decision over the
baselines, Q2 against the simulator, and what placement adds. All simulated."""

from __future__ import annotations

import os
from typing import Any

from aoizora.evaluation.grid import PAPER
from aoizora.evaluation.tables import _f, flat_row


def write_plots(out_dir: str, results: list[dict[str, Any]]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in results if r["status"] == "ok"]
    if not ok:
        return []
    keys = [r["key"] for r in ok]
    rows = [flat_row(r) for r in ok]
    ax = _paired_bars(plt, keys,
                      ([x["speedup_vs_existing"] or 0 for x in rows], "vs existing deployment"),
                      ([x["speedup_vs_alpa"] or 0 for x in rows], "vs Alpa-style"),
                      (PAPER["best_speedup"], "paper best 1.42x"), "speedup (simulated)",
                      "AoiZora's decision (Top-K, no pooling) over the baselines, simulated")
    ax.axhline(1.0, color="k", lw=0.8)
    out = [_save(ax.figure, out_dir, "speedup.png"), _q2_scatter(plt, ok, out_dir)]
    ax = _paired_bars(plt, keys,
                      ([100 * (x["gain_beyond_axis_orders"] or 0) for x in rows],
                       "best axis order / best placement - 1"),
                      ([100 * (x["gain_vs_default"] or 0) for x in rows],
                       "JAX default order / best placement - 1"),
                      (100 * PAPER["placement_effect_v5e8"], "paper: up to 16.6 % on v5e-8"),
                      "slower than the best placement (%)",
                      "What placement adds to the decision's sharding (simulated)")
    out.append(_save(ax.figure, out_dir, "placement_gain.png"))
    return out


def _q2_scatter(plt, ok: list[dict[str, Any]], out_dir: str) -> str:
    ncols = min(4, len(ok))
    nrows = (len(ok) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(max(5.0, 3.4 * ncols), 3.4 * nrows + 0.4),
                             squeeze=False)
    for ax in axes.flat[len(ok):]:
        ax.set_visible(False)
    for ax, r in zip(axes.flat, ok):
        by: dict[str, list] = {}
        for name, _, q2, sim in r["q2_vs_simulated"]:
            by.setdefault(name, []).append((q2 * 1e3, sim * 1e3))
        for name, pts in by.items():
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=8, label=name)
        ax.set_title(f"{r['key']}\nrho min {_f(r['spearman']['min'], '{:.2f}')}", fontsize=7)
        ax.set_xlabel("Q2 ms", fontsize=7)
        ax.set_ylabel("simulated ms", fontsize=7)
        ax.tick_params(labelsize=6)
        ax.legend(fontsize=5, markerscale=0.7)
    fig.suptitle("Q2 vs simulated latency, placements of each Top-K survivor", fontsize=8)
    fig.tight_layout()
    return _save(fig, out_dir, "q2_vs_simulated.png")


def _paired_bars(plt, keys, left, right, paper, ylabel: str, title: str):
    """Two bars per setting ((values, label) each) and the paper's figure as a dashed line."""
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(keys) + 3), 4.5))
    x, w = range(len(keys)), 0.4
    for (values, label), dx in ((left, -w / 2), (right, w / 2)):
        ax.bar([i + dx for i in x], values, w, label=label)
    ax.axhline(paper[0], color="r", ls="--", lw=0.8, label=paper[1])
    ax.set_xticks(list(x), keys, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return ax


def _save(fig, out_dir: str, name: str) -> str:
    import matplotlib.pyplot as plt

    path = os.path.join(out_dir, name)
    fig.savefig(path + ".tmp.png", dpi=110)
    plt.close(fig)
    os.replace(path + ".tmp.png", path)
    return path

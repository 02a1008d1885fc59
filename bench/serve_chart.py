#!/usr/bin/env python3
"""The serving frontiers of several `aoizora serve --json` runs on one chart (serving/chart.py),
for slices planned in separate runs (one generation at a time, say).

    bench/serve_chart.py serve_v5e.json serve_v6e.json -o frontier.png [--title T]

Prints each slice's points (latency, videos per hour, USD per video, frontiers), all simulated.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from aoizora.serving import chart  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="aoizora serve --json outputs")
    ap.add_argument("-o", "--out", required=True, help="the PNG to write")
    ap.add_argument("--title", default="serving frontiers")
    a = ap.parse_args()
    rows = []
    for path in a.files:
        with open(path) as f:
            rows += chart.rows_from_json(json.load(f))
    drawn = chart.draw(rows, a.out, a.title)
    print("| slice | split | s / video | videos / h | USD / video | frontier |")
    print("|---|---|---|---|---|---|")
    for topology, pts in sorted(drawn.items()):
        for latency, vph, usd, split, on_t, on_c in pts:
            on = ", ".join(k for k, b in (("throughput", on_t), ("cost", on_c)) if b) or "-"
            cost = "-" if usd is None else f"{usd:.4f}"
            print(f"| {topology} | {split} | {latency:.3f} | {vph:,.1f} | {cost} | {on} |")
    print(f"wrote {a.out} (all figures simulated)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Serving under load on the rows of earlier `aoizora serve --json` runs: every configuration
fed one stream of requests through the queue simulator (serving/load.py), the table and the
pick under a p99 bound as `aoizora serve --rate` prints them, without planning anything again.

    bench/serve_load.py serve_v5e.json serve_tpu7x.json --rate 30/h [--p99 S] \
        [--requests N] [--seed K] [--batch-wait T] [--load-chart PNG] [--markdown]

The rows keep the code and the prices of the runs that wrote them; every figure simulated.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from aoizora.serving import chart, load, load_chart, load_table, prices  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="aoizora serve --json outputs")
    ap.add_argument("--rate", required=True, help="requests per hour, as serve --rate")
    ap.add_argument("--p99", type=float, help="the p99 bound, seconds")
    ap.add_argument("--requests", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-wait", type=float, default=0.0)
    ap.add_argument("--load-chart", help="also draw p99 against the rate (PNG)")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table instead")
    a = ap.parse_args()
    rows = []
    for path in a.files:
        with open(path) as f:
            rows += chart.rows_from_json(json.load(f))
    stream = load.stream(a.rate, "poisson", a.requests, None, a.seed, a.batch_wait)
    table = prices.load()
    got = load.under_load(rows, stream, table)
    chosen = None if a.p99 is None else load.pick(got, a.p99)
    if a.markdown:
        _markdown(got, stream, chosen, a.p99)
    else:
        from rich.console import Console

        for line in load_table.lines(got, stream, chosen, a.p99, Console(width=80)):
            print(line)
    if a.load_chart:
        load_chart.draw(rows, stream, table, a.load_chart, "serving under load", a.p99)
        print(f"wrote {a.load_chart} (all figures simulated)")
    return 0


def _markdown(rows, stream, chosen, bound_s) -> None:
    print(load_table.heading(stream))
    print()
    print("| slice | split | B | capacity / h | busy | p50 s | p90 s | p99 s | USD / video |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r.p99_s is None:
            continue
        usd = "-" if r.usd_per_video is None else f"{r.usd_per_video:.3g}"
        tail = (f"{r.p50_s:.4g} | {r.p90_s:.4g} | {r.p99_s:.4g}" if r.stable
                else "- | - | overloaded")
        print(f"| {r.topology} | {r.split} | {r.batch} | {r.capacity_per_hour:,.1f} | "
              f"{r.utilisation:.0%} | {tail} | {usd} |")
    if chosen is not None:
        print(f"\npick (--p99 {bound_s:g} s): {chosen.why}")


if __name__ == "__main__":
    sys.exit(main())

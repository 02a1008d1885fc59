"""Held-out coverage of the joint draws' spreads (hardware/figure_spread.py): per generation
and part, how many leave-one-out points lie inside their 90 % interval when each point's
spread comes from the other points alone, before the widening (the check) and after it
(complete by construction: the widening is the least that covers them), and the spread of
each part a plan draws from.

    .venv/bin/python bench/coverage.py [--residuals FILE]

Prints a Markdown table (docs/hardware-profiles.md, "How sure"). Reads only the residuals
file; no compile, no simulation.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

from aoizora.hardware import error_bands, figure_spread  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--residuals", default=error_bands.RESIDUALS)
    rows = error_bands.read(ap.parse_args().residuals)
    widen = figure_spread.widening(rows)
    after = {(c["generation"], c["part"]): c for c in figure_spread.coverage(rows, widen)}
    spreads = figure_spread.part_spreads(rows, widen)
    print("| generation | part | points | inside, held out | outside | widening "
          "| inside, widened | spread s (90 %: x exp(+-1.645 s)) |")
    print("|---|---|---|---|---|---|---|---|")
    total = [0, 0]
    for c in figure_spread.coverage(rows):
        key = (c["generation"], c["part"])
        s = spreads[key][0]
        total[0] += c["inside"]
        total[1] += c["points"]
        print(f"| {c['generation']} | {c['part']} | {c['points']} | {c['inside']} "
              f"| {', '.join(c['outside']) or '-'} | x{widen[c['generation']]:.2f} "
              f"| {after[key]['inside']} | {s:.3f} |")
    print(f"\nheld out: {total[0]} of {total[1]} points inside their 90 % interval "
          f"({100 * total[0] / total[1]:.0f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

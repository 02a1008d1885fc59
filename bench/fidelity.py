"""The hardware model against published measurements of real TPUs: every point of
calibration/published.json, its published time, the time simulated on the current profile
of its generation (or on --hardware files), and the error.

    PYTHONPATH=python:build/dev/pyroot .venv/bin/python bench/fidelity.py \
        [--data calibration/published.json] [--hardware FILE ...] [--json]

Published figures were measured on real TPUs by their sources; the "simulated" column is
our flow-level simulator on the model (one collective alone, partition i on chip i), not a
measurement. Nothing is fitted here. Points held out (TPU7x, whose two cores per chip are
not modelled yet) are shown and left out of the worst error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

from aoizora import measurements  # noqa: E402


def _size(b: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale and b % (scale // 4) == 0:
            return f"{b / scale:g} {unit}"
    return f"{b} B"


def rows(points, hardware: dict[str, str]) -> list[dict]:
    out = []
    for p in points:
        sim = p.simulate(hardware.get(p.generation))
        out.append({"id": p.id, "generation": p.generation, "topology": p.topology,
                    "kind": p.kind, "bytes_per_device": p.bytes_per_device,
                    "published_s": p.seconds, "simulated_s": sim,
                    "error_pct": 100 * (sim - p.seconds) / p.seconds,
                    "approximate": p.approximate, "held_out": bool(p.held_out),
                    "profile": hardware.get(p.generation, f"shipped:{p.generation}")})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=measurements.PUBLISHED)
    ap.add_argument("--hardware", nargs="*", default=[], metavar="FILE",
                    help="profile files replacing their generation's shipped profile")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    hardware = {}
    for path in args.hardware:
        with open(path, encoding="utf-8") as f:
            hardware[json.load(f)["generation"]] = path
    table = rows(measurements.load(args.data), hardware)
    if args.json:
        print(json.dumps(table, indent=1))
        return 0
    print("published: measured on real TPUs (see each point's source); simulated: AoiZora's "
          "simulator on the model, one collective alone, NOT measured")
    print(f"{'point':34} {'kind':19} {'bytes/dev':>10} {'published':>12} {'simulated':>12} "
          f"{'error':>8}  profile")
    for r in table:
        mark = " ~" if r["approximate"] else "  "
        held = "  (held out)" if r["held_out"] else ""
        print(f"{r['id']:34} {r['kind']:19} {_size(r['bytes_per_device']):>10} "
              f"{r['published_s'] * 1e6:10.2f}us{mark}{r['simulated_s'] * 1e6:10.2f}us "
              f"{r['error_pct']:+7.1f}%  {r['profile']}{held}")
    used = [r for r in table if not r["held_out"]]
    if used:
        worst = max(used, key=lambda r: abs(r["error_pct"]))
        within = sum(abs(r["error_pct"]) <= 15 for r in used)
        print(f"worst |error| over the {len(used)} points used: {worst['error_pct']:+.1f}% "
              f"({worst['id']}); {within}/{len(used)} within 15 %. ~ marks a figure published "
              "as 'about'.")
    return 0


if __name__ == "__main__":
    sys.exit(main())

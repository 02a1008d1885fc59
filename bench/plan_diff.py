#!/usr/bin/env python3
"""Do two plan.json files say the same thing? Every field but the measured ones (planning
time, its phases, the executor's description) is compared; the differences are printed
with their paths, and the exit status is 1 when there are any.

    bench/plan_diff.py before.plan.json after.plan.json

For checking that a change meant to keep behaviour (a refactor) plans every setting as
before: plan the same setting cold with both commits (docs/results/package_move.md).
"""

import argparse
import json
import sys

MEASURED = ("seconds", "decision_seconds", "phases", "executor")


def differences(a, b, path: str = "") -> list[str]:
    """The paths where two JSON values differ, with both values (short)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            if path == "planning" and key in MEASURED:
                continue
            where = f"{path}.{key}" if path else key
            if key not in a or key not in b:
                out.append(f"{where}: only in {'after' if key not in a else 'before'}")
            else:
                out += differences(a[key], b[key], where)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {str(a)[:80]} -> {str(b)[:80]}"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    args = ap.parse_args()
    with open(args.before) as f, open(args.after) as g:
        before, after = json.load(f), json.load(g)
    found = differences(before, after)
    for line in found:
        print(line)
    c = before["choice"]
    print(f"{'differ in ' + str(len(found)) + ' places' if found else 'the same plan'}: "
          f"{c['candidate']} @ {c['placement']} before")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

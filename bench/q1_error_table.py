"""Q1's error as a figure: one row per setting, from `bench/q1_vs_simulated.py --json` files.

Each file holds one setting's rows (every fitting candidate: Q1 and the best simulated step of
its three best placements by Q2; every latency predicted or simulated, never measured). The
table gives Spearman(Q1, simulated), Q1 / simulated - 1 (median, range, share within 20 %),
and the simulator's winner with its Q1 rank:

    python bench/q1_error_table.py docs/results/q1_error/*.json > docs/results/q1_error/README.md

A file is named <model>_<topology>_<video>.json (`:` written `-`); the name is the setting.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from q1_vs_simulated import summary  # noqa: E402


def table(paths: list[str]) -> str:
    out = ["| setting | candidates | Spearman(Q1, simulated) | median Q1/sim - 1 | range | "
           "within 20 % | simulator's winner | its Q1 rank |",
           "|---|---|---|---|---|---|---|---|"]
    for path in sorted(paths):
        with open(path) as f:
            rows = json.load(f)
        s = summary(rows)
        name = os.path.splitext(os.path.basename(path))[0]
        out.append(f"| {name} | {s['candidates']} | {s['spearman']:.3f} | "
                   f"{s['median_rel_err']:+.1%} | {s['min_rel_err']:+.1%} .. "
                   f"{s['max_rel_err']:+.1%} | {s['within_20pct']:.0%} | {s['winner']} | "
                   f"{s['winner_q1_rank']} |")
    return "\n".join(out)


def main() -> int:
    print("# Q1 against the simulated step, per setting\n")
    print("Made by `python bench/q1_error_table.py docs/results/q1_error/*.json` from the rows "
          "`bench/q1_vs_simulated.py --json` wrote (Q1 predicted, steps simulated; nothing "
          "measured). docs/stage1.md, \"Where Q1 and the compiled program part\", says where "
          "they part.\n")
    print(table(sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

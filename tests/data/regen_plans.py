"""Regenerates the saved plan tests/data/plans/wan_tiny.v5e_2x2.json, which
tests/python/test_measure.py runs with `aoizora measure plan --platform cpu`.

    .venv/bin/python tests/data/regen_plans.py

The plan is the planner's own output, unedited: wan-tiny at the tiny video on v5e:2x2,
compiled for the TPU (deviceless, libtpu), so its candidates carry the splash kernel that
`measure plan` must replace on CPU devices. Planning takes about a minute (no cache), which
is why the tests read this file instead of planning.
"""

from __future__ import annotations

import os
import subprocess
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plans", "wan_tiny.v5e_2x2.json")


def main() -> None:
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.join(os.path.dirname(__file__), "..", "..", "python"),
         os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-m", "aoizora.cli", "plan", "--model", "wan-tiny",
                    "--video", "tiny", "--topology", "v5e:2x2", "--top-k", "1", "--workers", "1",
                    "--no-cache", "--quiet", "--out", OUT], check=True, env=env)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

"""The README's "Using a plan" block runs as written: one forward of the planned model with
random weights under the plan's layout, on CPU devices, from a shipped wan-tiny plan
(tests/data/plans, compiled for TPU v5e:2x2, so its attention is the Pallas splash kernel)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
PLAN = os.path.join(ROOT, "tests", "data", "plans", "wan_tiny.v5e_2x2.json")


def _using_a_plan_block() -> str:
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    section = text[text.index("## Using a plan"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readmes_plan_example_runs_one_forward_as_written(tmp_path):
    block = _using_a_plan_block()
    assert 'Plan.load("plan.json")' in block  # as the user types it: the plan beside them
    shutil.copy(PLAN, tmp_path / "plan.json")
    run = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    shape, sharding = run.stdout.strip().splitlines()[-1].split(" ", 1)[0], run.stdout
    # The tiny video's latents come back whole, sharded over the plan's mesh.
    assert shape.startswith("(") and "NamedSharding" in sharding

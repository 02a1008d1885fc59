"""Your own model from the command line (`aoizora plan --model FILE.py:make_spec`): the
example Flux-style DiT (examples/flux_dit.py, a FunctionSpec) planned end to end for a TPU
slice (deviceless) and for CPU devices, and loaded as `module:function` from PYTHONPATH.
Bad references are in test_bad_input.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aoizora.inputs import user_model
from aoizora.models.base import FunctionSpec

EXAMPLES = Path(__file__).parents[2] / "examples"
EXAMPLE = f"{EXAMPLES / 'flux_dit.py'}:make_spec"


def _plan(tmp_path, *extra) -> tuple[dict, str]:
    """Runs `aoizora plan` on the example; (plan.json, the report's text)."""
    out, report = tmp_path / "plan.json", tmp_path / "report.html"
    env = {**os.environ, "AOIZORA_CACHE": str(tmp_path / "cache")}
    run = subprocess.run(
        [sys.executable, "-m", "aoizora.cli", "plan", "--model", EXAMPLE, "--topology",
         "v5e:2x4", "--top-k", "2", "--out", str(out), "--report", str(report), "--quiet",
         *extra], capture_output=True, text=True, env=env, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    # The table title may wrap at the pipe's 80 columns: compare the words.
    assert "flux-dit-small, its own arguments (a function spec) on v5e:2x4" in " ".join(
        run.stdout.split())
    return json.loads(out.read_text()), report.read_text()


def _check(plan: dict, platform: str) -> None:
    assert plan["model"]["name"] == "flux-dit-small"
    assert plan["model"]["source"]["reference"] == EXAMPLE
    assert plan["workload"] == {"function": "flux-dit-small", "video": None, "frames": None,
                                "tokens": None}
    assert plan["topology"]["compile_target"]["platform"] == platform
    choice = plan["choice"]
    assert len(choice["device_coords"]) == 8
    # A function has no hand-tuned deployment: the Alpa-style pick is its only baseline.
    assert list(plan["baselines"]) == ["alpa-style"]
    split = choice["extra"]["step_split"]
    assert split["blocks"] == 4  # the example's four blocks under lax.scan
    assert "unattributed" not in split["forward_s"]  # the critical path covers the step
    assert sum(split["forward_s"].values()) == pytest.approx(choice["simulated_s"], rel=1e-6)


def test_example_model_plans_for_a_tpu_slice_from_the_command_line(tmp_path):
    plan, report = _plan(tmp_path)
    _check(plan, "tpu")
    assert "its own arguments (a function spec)" in report and "None" not in report.split(
        'id="why"')[0]


def test_example_model_plans_for_cpu_devices_from_the_command_line(tmp_path):
    plan, _ = _plan(tmp_path, "--compile-target", "cpu")
    _check(plan, "cpu")


def test_module_reference_loads_from_pythonpath(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))
    spec = user_model.load("flux_dit:make_spec")
    assert isinstance(spec, FunctionSpec) and spec.name == "flux-dit-small"
    assert spec.source["reference"] == "flux_dit:make_spec" and len(spec.source["sha256"]) == 64


def test_editing_the_model_file_changes_the_cache_key(tmp_path):
    path = tmp_path / "m.py"
    path.write_text((EXAMPLES / "flux_dit.py").read_text())
    before = user_model.load(f"{path}:make_spec").key()
    path.write_text(path.read_text().replace("1e-6", "1e-5"))  # a helper, not fn's own code
    assert user_model.load(f"{path}:make_spec").key() != before


def test_model_spec_reference_is_planned_like_a_preset_with_video_and_frames(tmp_path):
    from argparse import Namespace

    from aoizora.commands.plan import check_workload
    from aoizora.models import WanConfig

    path = tmp_path / "small_wan.py"
    path.write_text("from aoizora.models import get_model\n"
                    "def make_spec():\n"
                    "    return get_model('wan2.1-t2v-1.3b').replace(name='wan-1.3b-10', "
                    "layers=10)\n")
    args = Namespace(model=f"{path}:make_spec", video=None, frames=None, topology=None,
                     hardware=None)
    check_workload(args)
    assert isinstance(args.model, WanConfig) and args.model.layers == 10
    assert (args.video, args.topology) == ("480p", "v5e:2x4")

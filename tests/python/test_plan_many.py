"""`aoizora plan-many`: the settings file's one-line errors, and two tiny settings (v5e:2x2
and v5e:2x4, real lowering and deviceless TPU compiles on the session's Ray) planned, both
plans written and tabled; a rerun keeps the plans this code wrote, plans a missing one (an
interrupted run) and replans one another code wrote.

Each setting lowers only its first three candidates (the baselines compile as usual), so the
cold run takes seconds, not minutes."""

from __future__ import annotations

import contextlib
import io
import json
import os

import pytest

from aoizora import cli
from aoizora.planning import strategies
from aoizora.errors import UserError
from aoizora.plan_format import Plan
from aoizora.inputs.settings_file import load

SETTINGS = """\
- {model: wan-tiny, video: tiny, topology: v5e:2x2, top_k: 1}
- model: wan-tiny
  video: tiny
  topology: v5e:2x4
  top_k: 1
"""
KEYS = ("wan-tiny_v5e-2x2_tiny-9f_k1", "wan-tiny_v5e-2x4_tiny-9f_k1")


def main(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def fleet(ray_executor, tmp_path_factory):
    """(settings file, out dir, first run's (rc, stdout, stderr)), planned with --executor ray
    (which joins the session's Ray) into a cache of its own."""
    root = tmp_path_factory.mktemp("fleet")
    mp = pytest.MonkeyPatch()
    mp.setenv("AOIZORA_CACHE", str(root / "cache"))
    full = strategies.enumerate_candidates
    mp.setattr(strategies, "enumerate_candidates", lambda *a, **k: full(*a, **k)[:3])
    path = root / "settings.yaml"
    path.write_text(SETTINGS)
    out = root / "plans"
    first = main("plan-many", path, "--executor", "ray", "--out-dir", out, "--quiet")
    yield path, out, first
    mp.undo()


def test_every_setting_is_planned_written_and_tabled(fleet):
    path, out, (rc, stdout, stderr) = fleet
    assert rc == 0, stderr
    assert sorted(os.listdir(out)) == [f"{k}.json" for k in KEYS]   # no temporary left
    for key, topology in zip(KEYS, ("v5e:2x2", "v5e:2x4")):
        plan = Plan.load(str(out / f"{key}.json"))
        assert plan.topology["name"] == topology and plan.planning["top_k"]
        assert plan.planning["plan_many"]["setting"]["topology"] == topology
        assert plan.planning["executor"].startswith("ray (")
        # its row, and its line beneath the table where the sharding did not fit in it
        row = " ".join(line for line in stdout.splitlines() if key in line)
        assert "planned" in row and plan.choice.candidate in row
    assert "2 settings, 1 at once, jobs on ray" in stderr


def test_rerun_keeps_the_plans_done_and_plans_the_missing_one(fleet):
    path, out, _ = fleet
    kept, missing = (out / f"{k}.json" for k in KEYS)
    before = kept.stat().st_mtime_ns
    missing.unlink()                        # as if interrupted before the second plan
    rc, stdout, stderr = main("plan-many", path, "--out-dir", out, "--quiet", "--json")
    rows = {r["key"]: r for r in json.loads(stdout)}
    assert rc == 0 and kept.stat().st_mtime_ns == before
    assert rows[KEYS[0]]["status"] == "kept" and f"{KEYS[0]}: kept, planned before" in stderr
    assert rows[KEYS[1]]["status"] == "planned" and missing.exists()
    assert rows[KEYS[1]]["cache_hits"] == rows[KEYS[1]]["jobs"] > 0   # the cache Ray filled


def test_a_plan_by_other_code_is_planned_again(fleet):
    path, out, _ = fleet
    plan = out / f"{KEYS[0]}.json"
    d = json.loads(plan.read_text())
    d["planning"]["plan_many"]["code"] = "0123456789abcdef"
    plan.write_text(json.dumps(d))
    rc, stdout, stderr = main("plan-many", path, "--out-dir", out, "--quiet", "--json")
    assert rc == 0 and "made by other code, planning again" in stderr
    assert [r["status"] for r in json.loads(stdout)] == ["planned", "kept"]
    assert json.loads(plan.read_text())["planning"]["plan_many"]["code"] != "0123456789abcdef"


def test_settings_planned_at_once_on_ray_give_the_same_plans(fleet):
    path, out, _ = fleet
    before = {k: Plan.load(str(out / f"{k}.json")).choice for k in KEYS}
    rc, stdout, stderr = main("plan-many", path, "--executor", "ray", "--concurrent", "2",
                              "--force", "--out-dir", out, "--quiet", "--json")
    assert rc == 0 and "2 settings, 2 at once" in stderr
    assert [r["status"] for r in json.loads(stdout)] == ["planned", "planned"]
    for k in KEYS:
        after = Plan.load(str(out / f"{k}.json")).choice
        assert (after.candidate, after.device_coords) == (before[k].candidate,
                                                          before[k].device_coords)


def test_a_setting_lost_with_the_executor_stops_the_run_or_with_keep_going_is_listed(
        fleet, monkeypatch):
    """The executor lost under the first setting (a Ray cluster gone): the run stops in one
    line, exit 75, the plan written before kept; with --keep-going the next setting is
    planned and the lost one listed at the end, exit 75 still (a rerun plans it)."""
    from aoizora.errors import ExecutorLost
    from aoizora.planning import planner

    path, out, _ = fleet
    real = planner.plan

    def lost_on_2x2(model, video, frames, topology, *args, **kwargs):
        if topology == "v5e:2x2":
            e = ExecutorLost("lost the Ray cluster ray://10.0.0.1:10001 mid-plan "
                             "(ConnectionError: gone)")
            e.kept = "kept the 3 results finished before it in the cache C (a rerun reads them)"
            raise e
        return real(model, video, frames, topology, *args, **kwargs)

    monkeypatch.setattr(planner, "plan", lost_on_2x2)
    lost, kept = (out / f"{k}.json" for k in KEYS)
    lost.unlink(missing_ok=True)
    before = kept.stat().st_mtime_ns
    rc, _, stderr = main("plan-many", path, "--out-dir", out, "--quiet")
    assert rc == 75 and stderr.strip().splitlines()[-1] == (
        "aoizora plan-many: error: lost the Ray cluster ray://10.0.0.1:10001 mid-plan "
        "(ConnectionError: gone); kept the 3 results finished before it in the cache C (a "
        f"rerun reads them); the 1 plan(s) in {out} are kept; the same command resumes: "
        f"aoizora plan-many {path} --out-dir {out} --quiet")
    assert not lost.exists() and kept.stat().st_mtime_ns == before
    rc, stdout, stderr = main("plan-many", path, "--out-dir", out, "--quiet", "--json",
                              "--keep-going", "--force")
    rows = json.loads(stdout)
    assert rc == 75 and [r["status"] for r in rows] == ["lost", "planned"]
    assert rows[0]["reason"].startswith("lost the Ray cluster ray://10.0.0.1:10001 mid-plan")
    assert stderr.strip().splitlines()[-1] == (
        f"plan-many: 1 setting(s) lost with the executor: {KEYS[0]}; the same command plans "
        "them, keeping the plans written")
    assert not lost.exists() and kept.stat().st_mtime_ns != before


@pytest.mark.parametrize("text, words", [
    ("- {model: wan-huge, topology: v5e:2x4}\n", "setting 1 (line 1): unknown model 'wan-huge'"),
    ("- {model: wan-tiny, video: tiny, topology: v5e:2x4}\n- {model: wan-tiny, topology: "
     "v9:2x2, video: tiny}\n", "setting 2 (line 2): topology v9:2x2: unknown topology"),
    ("- model: wan-tiny\n  frame: 9\n  topology: v5e:2x4\n", "unknown field 'frame'"),
    ("- {model: wan-tiny, video: tiny, topology: v5e:2x4, top_k: yes}\n",
     "top_k must be int, found True"),
    ("- {model: wan-tiny, video: tiny, topology: v5e:2x4, top_k: 0}\n", "top_k 0: use 1 to"),
    ("- {model: wan2.1-t2v-1.3b, frames: 22, topology: v5e:2x4}\n", "must be 4k+1"),
    ("- {model: wan-tiny, video: tiny}\n", "setting 1 (line 1): missing topology"),
    ("- {model: wan-tiny, video: tiny, topology: v5e:2x4, hardware: none.json}\n", "none.json"),
    ("model: wan-tiny\n", "expected a list of settings"),
    ("", "expected a list of settings"),
    ("- model: wan-tiny\n  topology: [v5e\n", ":3:1: not YAML"),
    ("- {model: wan-tiny, video: tiny, topology: v5e:2x4}\n"
     "- {model: wan-tiny, video: tiny, topology: v5e:2x4, frames: 9}\n",
     "settings 1 and 2 (line 2) would write the same plan"),
])
def test_bad_settings_file_is_one_line_before_any_work(tmp_path, text, words):
    path = tmp_path / "settings.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as e:
        load(str(path))
    assert words in str(e.value) and "\n" not in str(e.value)
    assert str(e.value).startswith(str(path))


def test_settings_fill_defaults_and_find_files_beside_the_settings_file(tmp_path):
    (tmp_path / "topo").mkdir()
    topo = {"name": "two", "generation": "v5e", "dims": [2, 1], "wrap": [False, False]}
    (tmp_path / "topo" / "two.json").write_text(json.dumps(topo))
    path = tmp_path / "s.yaml"
    path.write_text("- {model: wan2.1-t2v-1.3b, topology: v5e:2x4}\n"
                    "- {model: wan2.2-ti2v-5b, topology: topo/two.json}\n")
    a, b = load(str(path))
    assert (a.video, a.frames, a.top_k, a.key) == ("480p", 21, None, "wan-1.3b_v5e-2x4_480p-21f")
    assert b.video == "720p" and b.topology == str(tmp_path / "topo" / "two.json")
    assert b.key == "wan2.2-ti2v-5b_two_720p-21f" and "topology_sha256" in b.record()


def test_plan_many_refuses_concurrent_local_and_workers_with_ray(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SETTINGS)
    rc, _, err = main("plan-many", path, "--concurrent", "2")
    assert rc == 2 and "--concurrent" in err and len(err.splitlines()) == 1
    rc, _, err = main("plan-many", path, "--executor", "ray", "--workers", "2")
    assert rc == 2 and "leave out --workers" in err


# ---- the summary at 80 and 120 columns (terminal.py) -----------------------------------------

@pytest.mark.parametrize("width", [80, 120])
def test_the_summary_fits_the_terminal_with_every_name_whole(width, monkeypatch):
    """rich cut three settings' names to the same "wan-t...": each setting, sharding and
    placement is whole on a line now, in the table or beneath it."""
    from pathlib import Path

    from aoizora.commands import plan_many as command
    from aoizora.inputs.settings_file import Request
    from aoizora.planning import plan_many
    from conftest import assert_fits

    monkeypatch.setenv("COLUMNS", str(width))
    rows = []
    for p in sorted((Path(__file__).resolve().parents[2] / "docs/results/video")
                    .glob("*.plan.json")):
        d = json.loads(p.read_text())
        r = Request("wan2.1-t2v-1.3b", d["workload"]["video"], d["workload"]["frames"],
                    d["topology"]["name"], hardware=p.stem)
        rows.append(plan_many.row_of(r, "kept", str(p), d))
    rows.append(plan_many.Row("wan-14b_v5e-2x2_720p-81f", "no-fit",
                              reason="no sharding fits: every candidate needs more than "
                                     "16 GB of HBM per chip"))
    out = io.StringIO()
    command.print_table(rows, out)
    text = out.getvalue()
    assert_fits(text, width, [r.key for r in rows] + [r.candidate for r in rows[:-1]]
                + [r.placement for r in rows[:-1]] + ["16 GB"])

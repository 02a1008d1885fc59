"""Every command under bad input and bad luck (issue 22, issue 13 items 8-9): bad input is
refused before any work with one line on stderr and exit 2 (and `{"error": ...}` on stdout
under --json); outputs are checked first and written all or none with the user's umask; only
expected failures skip a candidate; JSON topologies plan end to end; SIGINT and SIGTERM stop
the workers. Commands run in-process through cli.main, except the signal tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aoizora import atomic, cli
from aoizora.planning import planner
from aoizora.compile import compiler as C
from aoizora.planning import strategies as S
from aoizora.compile.batch import run_jobs
from aoizora.errors import CompileError, UserError
from aoizora.compile.jobs import Job
from aoizora.models import get_model, get_workload

HLO8 = str(Path(__file__).parents[1] / "data" / "hlo" / "matmul.v5e_2x4.hlo")
TINY = ["--model", "wan-tiny", "--video", "tiny", "--quiet"]


def run(argv, capsys):
    """(exit status, stdout, stderr) of `aoizora argv` in this process."""
    try:
        rc = cli.main([str(a) for a in argv])
    except SystemExit as e:  # argparse
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def refused(argv, capsys, *words):
    rc, out, err = run(argv, capsys)
    assert rc == 2, (argv, out, err)
    assert err.count("\n") == 1 and "error:" in err, err
    for w in words:
        assert w in err, (w, err)
    return err


@pytest.fixture(autouse=True)
def no_planning(monkeypatch):
    """Bad input is refused before any work: planning at all fails the test."""
    def plan(*a, **k):
        raise AssertionError("planned despite bad input")
    monkeypatch.setattr(planner, "plan", plan)


# ---- numbers and their ranges ---------------------------------------------------------------

@pytest.mark.parametrize("argv,word", [
    (["plan", "--top-k", "0"], "--top-k"), (["plan", "--top-k", "-3"], "--top-k"),
    (["plan", "--top-k", "1000000"], "--top-k"), (["plan", "--workers", "-1"], "--workers"),
    (["plan", "--workers", "0"], "--workers"), (["plan", "--frames", "abc"], "--frames"),
    (["compare", "--top-k", "0"], "--top-k"), (["eval", "--jobs", "-1"], "--jobs"),
    (["eval", "--top-k", "0"], "--top-k"),
    (["rank", "--hlo", HLO8, "--topology", "v5e:2x4", "--top", "0"], "--top"),
    (["rank", "--hlo", HLO8, "--topology", "v5e:2x4", "--search-iterations", "-5"],
     "--search-iterations"),
    (["rank", "--hlo", HLO8, "--topology", "v5e:2x4", "--max-axis-orders", "0"],
     "--max-axis-orders"),
    (["simulate", "--hlo", HLO8, "--topology", "v5e:2x4", "--overhead", "nan"], "--overhead"),
    (["simulate", "--hlo", HLO8, "--topology", "v5e:2x4", "--overhead", "inf"], "--overhead"),
    (["simulate", "--hlo", HLO8, "--topology", "v5e:2x4", "--overhead", "-1"], "--overhead"),
    (["simulate", "--hlo", HLO8, "--topology", "v5e:2x4", "--hop-latency", "-1"],
     "--hop-latency"),
    (["simulate", "--hlo", HLO8, "--topology", "v5e:2x4", "--max-iterations", "-1"],
     "--max-iterations"),
])
def test_number_out_of_range_is_refused_in_one_line(argv, word, capsys):
    refused(argv, capsys, word)


@pytest.mark.parametrize("argv", [
    ["rank", "--hlo", HLO8, "--topology", "v5e:2x4", "--mesh", "3x3"],
    ["rank", "--hlo", HLO8, "--topology", "v5e:2x4", "--mesh", "2xa"],
    ["simulate", "--hlo", HLO8, "--topology", "v5e:2x4", "--mesh", "3x3"],
    ["simulate", "--hlo", HLO8, "--topology", "v5e:2x4", "--placement", "row-major",
     "--mesh", "3x3"],
])
def test_mesh_that_does_not_match_the_program_is_refused(argv, capsys):
    refused(argv, capsys, "--mesh")


def test_argparse_errors_take_one_line(capsys):
    refused(["plan", "--no-such-option"], capsys, "unrecognized")
    refused(["no-such-command"], capsys, "invalid choice")
    refused(["rank", "--topology", "v5e:2x4"], capsys, "--hlo")


def test_json_errors_are_a_json_object_on_stdout(capsys):
    for argv in (["plan", "--json", "--top-k", "0"], ["plan", "--json", "--frames", "22"],
                 ["rank", "--json", "--hlo", "/no/such.hlo", "--topology", "v5e:2x4"]):
        rc, out, err = run(argv, capsys)
        assert rc == 2 and err.count("\n") == 1
        assert json.loads(out)["error"] in err


def test_valid_controls_still_answer(capsys):
    rc, out, _ = run(["rank", "--hlo", HLO8, "--topology", "v5e:2x4", "--top", "1",
                      "--mesh", "2x4", "--json"], capsys)
    assert rc == 0 and len(json.loads(out)["ranked"]) == 1
    rc, out, _ = run(["simulate", "--hlo", HLO8, "--topology", "v5e:2x4", "--overhead", "0",
                      "--hop-latency", "1e-6", "--json"], capsys)
    assert rc == 0 and json.loads(out)["step_seconds"] > 0


# ---- workloads ------------------------------------------------------------------------------

@pytest.mark.parametrize("argv,word", [
    (["--frames", "-3"], "--frames"), (["--frames", "0"], "--frames"),
    (["--frames", "22"], "4k+1"), (["--video", "1080p"], "--video"),
    (["--model", "no-such-model"], "--model"),
    (["--model", "wan-tiny", "--video", "tiny", "--frames", "21"], "fixed 9 frames"),
    (["--topology", "v5e:3x3"], "--topology"),
])
def test_bad_workload_is_refused_before_planning(argv, word, capsys):
    refused(["plan", "--quiet", *argv], capsys, word)
    refused(["compare", "--quiet", *argv], capsys, word)


def test_planner_refuses_zero_work(monkeypatch):
    monkeypatch.undo()  # the real planner: it must refuse before it lowers anything
    for frames in (-3, 0, 22):
        with pytest.raises(UserError, match="--frames"):
            planner.plan("wan-tiny", "480p", frames, "v5e:2x2",
                         planner.Settings(cache=None, workers=1))


# ---- your own model (--model FILE.py:FUNCTION) --------------------------------------------

_SPEC_HEAD = """import jax, jax.numpy as jnp
from aoizora.models.base import FunctionSpec
x = jax.ShapeDtypeStruct((2, 16, 8), jnp.float32)
w = jax.ShapeDtypeStruct((8, 32), jnp.float32)
"""


@pytest.mark.parametrize("body,words", [
    ("def other(): pass\n", ["has no make_spec"]),
    ("make_spec = 3\n", ["make_spec is a int, not a function"]),
    ("def make_spec(:\n", ["importing", "raised SyntaxError"]),
    ("def make_spec():\n    raise ValueError('width must be even')\n",
     ["make_spec() raised ValueError: width must be even (m.py:6)"]),
    ("def make_spec():\n    return 42\n",
     ["returned int: expected a FunctionSpec or a ModelSpec"]),
    ("def make_spec():\n    return FunctionSpec('f', lambda a, b: a @ b, (x, w), "
     "(('batch', 'length', None),), ('batch', 'length', None))\n",
     ["2 arguments but 1 axes entries"]),
    ("def make_spec():\n    return FunctionSpec('f', lambda a, b: a @ b, (x, w), "
     "(('batch', 'length'), (None, 'mlp')), ('batch', 'length', None))\n",
     ["argument 0 float32[2, 16, 8] has 3 dims but axes ('batch', 'length') name 2"]),
    ("def make_spec():\n    return FunctionSpec('f', lambda a, b: a @ b, (x, w), "
     "(('batch', 'seq', None), (None, 'mlp')), ('batch', 'length', None))\n",
     ["unknown logical axis 'seq' (use batch, length, heads, mlp, fsdp, layers or None)"]),
    ("def make_spec():\n    return FunctionSpec('f', lambda a, b: b @ a, (x, w), "
     "(('batch', 'length', None), (None, 'mlp')), ('batch', 'length', None))\n",
     ["f does not trace on its arguments: TypeError", "(m.py:6)"]),
    ("def make_spec():\n    return FunctionSpec('f', lambda a, b: a @ b, (x, w), "
     "(('batch', 'length', None), (None, 'mlp')), ('batch', None))\n",
     ["the output float32[2, 16, 32] has 3 dims"]),
])
def test_bad_model_reference_is_one_line(body, words, tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text(_SPEC_HEAD + body)
    refused(["plan", "--quiet", "--model", f"{path}:make_spec"], capsys, *words)


@pytest.mark.parametrize("ref,words", [
    ("no/such/model.py:make_spec", ["no such file no/such/model.py"]),
    ("no_such_aoizora_pkg.model:make_spec", ["no module named 'no_such_aoizora_pkg'"]),
    ("model.py:", ["expected MODULE:FUNCTION"]),
])
def test_model_reference_that_names_nothing_is_one_line(ref, words, capsys):
    refused(["plan", "--quiet", "--model", ref], capsys, *words)


def test_a_model_file_without_its_function_asks_for_it(capsys):
    example = str(Path(__file__).parents[2] / "examples" / "flux_dit.py")
    refused(["plan", "--quiet", "--model", example], capsys,
            f"--model {example}: a file, not a preset", f"--model {example}:FUNCTION")
    refused(["plan", "--quiet", "--model", "no/such/flux_dit.py"], capsys,
            "--model no/such/flux_dit.py: no such file", "FILE.py:FUNCTION")


def test_function_spec_refuses_video_and_frames(capsys):
    example = str(Path(__file__).parents[2] / "examples" / "flux_dit.py")
    refused(["plan", "--quiet", "--model", f"{example}:make_spec", "--video", "480p"], capsys,
            "--video/--frames", "flux-dit-small is a function spec")


def test_hlo_partition_count_must_match_the_slice(capsys):
    refused(["rank", "--hlo", HLO8, "--topology", "v5e:4x4"], capsys, "8 partitions", "16")


# ---- HLO bytes ------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["inspect", "rank", "simulate"])
def test_bad_hlo_files_are_refused(command, tmp_path, capsys):
    topo = [] if command == "inspect" else ["--topology", "v5e:2x4"]
    binary = tmp_path / "binary.hlo"
    binary.write_bytes(b"HloModule m\n\xff\xfe\x00junk")
    empty = tmp_path / "empty.hlo"
    empty.write_text("")
    refused([command, "--hlo", binary, *topo], capsys, "UTF-8", "offset 12")
    refused([command, "--hlo", tmp_path, *topo], capsys, "folder")
    refused([command, "--hlo", empty, *topo], capsys, "empty")
    refused([command, "--hlo", tmp_path / "missing.hlo", *topo], capsys, "no such file")


# ---- topology files -------------------------------------------------------------------------

GOOD_TOPOLOGY = {"name": "my-v5e-4", "generation": "v5e", "dims": [2, 2], "wrap": [False, False]}


@pytest.mark.parametrize("text,word", [
    ('{"name": "a", "generation": "v5e", "dims": [2, 2], "dims": [2, 4]}', "duplicate key"),
    ('{"name": "z", "chips": [], "links": []}', "at least one chip"),
    ('{"name": "f", "generation": "v5e", "dims": [2.7, 2]}', "dims"),
    ('{"name": "f", "generation": "v5e", "dims": [0, 2]}', "dims"),
    ('{"name": "n", "generation": "v5e", "dims": [2, 2], "spec": {"hop_latency": -1e-3}}',
     "hop_latency"),
    ('{"name": "n", "generation": "v5e", "dims": [2, 2], "spec": {"peak_flops": -1}}',
     "peak_flops"),
    ('{"name": "n", "generation": "v5e", "dims": [2, 2], "spec": {"link_bandwidth": -4}}',
     "link_bandwidth"),
    ('{"name": "n", "generation": "v5e", "dims": [2, 2], "spec": {"hbm_bytes": NaN}}',
     "hbm_bytes"),
    ('{"name": "e", "chips": [[0], [1]], "links": [{"src": 0, "dst": 1, "latency": -1}]}',
     "latency"),
    ('{"name": "e", "chips": [[0], [1]], "links": [{"src": 0, "dst": 1, "bandwidth": 0}]}',
     "bandwidth"),
    ('{"name": "w", "generation": "v5e", "dims": [2, 2], "wrap": [1, 0]}', "wrap"),
    ('[1, 2]', "object"), ('{"name": ', "not JSON"),
])
def test_bad_topology_file_is_refused(text, word, tmp_path, capsys):
    path = tmp_path / "topo.json"
    path.write_text(text)
    refused(["topology", path], capsys, word)
    refused(["plan", *TINY, "--topology", path, "--out", tmp_path / "p.json"], capsys, word)
    refused(["simulate", "--hlo", HLO8, "--topology", path], capsys, word)


def test_topology_file_that_is_not_a_file_is_refused(tmp_path, capsys):
    folder = tmp_path / "dir.json"
    folder.mkdir()
    refused(["topology", folder], capsys, "folder")
    binary = tmp_path / "b.json"
    binary.write_bytes(b"\xff\xfe{}")
    refused(["topology", binary], capsys, "UTF-8")
    refused(["topology", "--list", "v5e:2x4"], capsys, "--list")


def test_topology_file_may_not_reuse_a_catalog_name_for_another_slice(tmp_path, capsys):
    # Named v5e:2x4, a 4x4 file would be planned as 16 devices under the catalog's name.
    path = tmp_path / "topo.json"
    path.write_text('{"name": "v5e:2x4", "generation": "v5e", "dims": [4, 4]}')
    for argv in (["topology", path], ["plan", *TINY, "--topology", path]):
        refused(argv, capsys, "v5e:2x4", "dims 2x4x1", "dims 4x4x1", "another 'name'")
    path.write_text('{"name": "v5e:2x4", "generation": "v5e", "dims": [2, 4], '
                    '"spec": {"link_bandwidth": 9e10}}')
    refused(["topology", path], capsys, "v5e:2x4", "link_bandwidth", "--hardware")
    path.write_text('{"name": "v5e:2x4", "generation": "v5e", "dims": [2, 4]}')  # the same
    rc, out, _ = run(["topology", path, "--json"], capsys)
    assert rc == 0 and json.loads(out)["name"] == "v5e:2x4"


def test_good_topology_file_is_described(tmp_path, capsys):
    path = tmp_path / "topo.json"
    path.write_text(json.dumps(GOOD_TOPOLOGY))
    rc, out, _ = run(["topology", path, "--json"], capsys)
    assert rc == 0 and json.loads(out)["name"] == "my-v5e-4"


# ---- plan files -----------------------------------------------------------------------------

def _choice(seconds):
    return {"candidate": "dp4", "mesh_shape": [4], "axis_names": ["data"],
            "strategy": {"data": 4}, "placement": "jax-default",
            "device_coords": [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]],
            "chip_ids": [0, 1, 2, 3], "q1_s": 1e-3, "q2_s": 1e-3, "simulated_s": seconds,
            "extra": {}}


def _plan_dict():
    return {"schema": "aoizora.plan/1", "model": {"name": "wan-tiny"},
            "workload": {"video": "tiny", "frames": 9},
            "topology": {"name": "v5e:2x2", "generation": "v5e"}, "choice": _choice(2e-3),
            "runners_up": [], "baselines": {"existing": _choice(3e-3)}, "planning": {}}


def _edit(d, path, value):
    *head, last = path
    for k in head:
        d = d[k]
    d[last] = value


@pytest.mark.parametrize("path,value,word", [
    ((), [1, 2], "a JSON array"),
    (("schema",), "other/1", "schema"),
    (("choice", "simulated_s"), "fast", "simulated_s"),
    (("choice", "mesh_shape"), [3], "device_coords"),
    (("choice", "device_coords"), [[0, 0, 0]] * 4, "distinct"),
    (("baselines", "existing", "q2_s"), -1, "q2_s"),
    (("choice",), None, "choice"),
    (("choice", "surprise"), 1, "surprise"),
])
def test_bad_plan_file_is_refused(path, value, word, tmp_path, capsys):
    d = _plan_dict()
    if path:
        _edit(d, path, value)
    else:
        d = value
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(d))
    refused(["compare", "--plan", f], capsys, word)


@pytest.mark.parametrize("doc,said", [
    ({"traceEvents": [{"ph": "X"}]}, "a Perfetto/Chrome trace (traceEvents)"),
    ([{"ph": "X", "ts": 0}], "a Perfetto/Chrome trace (an array of events)"),
    ({"model": 1, "choice": 2}, "a JSON object without a 'schema' key (keys: model, choice)"),
    ({"schema": "aoizora.prices/1"}, "a file of schema 'aoizora.prices/1'"),
    ([1, 2], "a JSON array of 2 items"),
])
def test_a_file_that_is_not_a_plan_is_said_for_what_it_is(doc, said, tmp_path, capsys):
    f = tmp_path / "trace.json"
    f.write_text(json.dumps(doc))
    err = refused(["compare", "--plan", f], capsys, f"not an AoiZora plan (schema "
                  "aoizora.plan/1, written by `aoizora plan`): " + said)
    assert "None" not in err


SAVED_PLAN = Path(__file__).parents[1] / "data" / "plans" / "wan_tiny.v5e_2x2.json"


@pytest.mark.parametrize("topology,coords,words", [
    # a plan of v5e:2x2 edited to v5e:4x4: its name only, or its figures too
    ({"name": "v5e:4x4"}, None, ("topology.dims 2x2x1", "v5e:4x4 (4x4x1)")),
    ({"name": "v5e:4x4", "dims": [4, 4, 1], "devices": 16, "chips": 16}, None,
     ("choice holds 4 devices but topology v5e:4x4 has 16",)),
    # as many devices, one outside the slice
    ({}, [[0, 0, 0], [1, 0, 0], [0, 2, 0], [1, 1, 0]], ("choice.device_coords[2] (0, 2, 0)",
                                                        "outside topology v5e:2x2")),
    # a topology file's plan: its own figures
    ({"name": "mine.json", "dims": [2, 4, 1], "devices": 8}, None,
     ("choice holds 4 devices but topology mine.json has 8",)),
])
def test_saved_plan_whose_devices_do_not_fit_its_slice_is_refused(topology, coords, words,
                                                                  tmp_path, capsys):
    d = json.loads(SAVED_PLAN.read_text())
    d["topology"].update(topology)
    if coords:
        d["choice"]["device_coords"] = coords
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(d))
    refused(["compare", "--plan", f], capsys, *words, "plan again")


def test_saved_plan_on_its_own_slice_compares(tmp_path, capsys):
    rc, out, err = run(["compare", "--plan", SAVED_PLAN, "--json"], capsys)
    assert rc == 0, err
    assert json.loads(out)[0]["label"] == "AoiZora"


def test_saved_plan_compares_and_refuses_planning_options_beside_it(tmp_path, capsys):
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(_plan_dict()))
    rc, out, _ = run(["compare", "--plan", f, "--json"], capsys)
    assert rc == 0 and json.loads(out)[1]["speedup"] == 1.5
    refused(["compare", "--plan", f, "--model", "wan-tiny"], capsys, "--model")
    refused(["compare", "--plan", f, "--topology", "v5e:2x4"], capsys, "--topology")
    (tmp_path / "notjson.json").write_text("{")
    refused(["compare", "--plan", tmp_path / "notjson.json"], capsys, "not JSON")


# ---- outputs --------------------------------------------------------------------------------

def test_outputs_are_checked_before_planning(tmp_path, capsys):
    old = tmp_path / "plan.json"
    old.write_text("the user's previous plan")
    a_file = tmp_path / "file"
    a_file.write_text("x")
    cases = [
        (["--out", old, "--report", old], "both name"),
        (["--out", old, "--trace", tmp_path / "." / "plan.json"], "both name"),
        (["--out", old, "--trace", tmp_path], "folder"),
        (["--out", tmp_path], "folder"),
        (["--out", old, "--report", "/proc/report.html"], "cannot write"),
        (["--out", a_file / "plan.json"], "not a folder"),
    ]
    # A folder that does not exist is a typo, not a folder to make: each output refuses it.
    missing = tmp_path / "typo" / "deeper"
    for flag in (["--out"], ["--report"], ["--trace"], ["--emit", "maxdiffusion"]):
        cases.append(([*flag, missing / "f.json"], f"no such folder {tmp_path / 'typo'}:"))
    for argv, word in cases:
        refused(["plan", *TINY, *argv], capsys, word)
    assert old.read_text() == "the user's previous plan"
    assert not (tmp_path / "typo").exists()
    refused(["eval", "--out", a_file], capsys, "folder")
    refused(["eval", "--report-only", "--out", tmp_path / "empty"], capsys, "no results")
    refused(["simulate", "--hlo", HLO8, "--topology", "v5e:2x4", "--trace", tmp_path],
            capsys, "folder")


def test_eval_writes_nowhere_it_was_not_told(tmp_path, monkeypatch, capsys):
    # From a repository root a default of docs/results would be the shipped results.
    monkeypatch.chdir(tmp_path)
    refused(["eval", "--grid", "tiny", "--list"], capsys, "--out")
    assert list(tmp_path.iterdir()) == []


def test_batch_writes_all_files_or_none(tmp_path):
    old = tmp_path / "plan.json"
    old.write_text("previous")

    def fails(tmp):
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        with atomic.Batch() as batch:
            batch.write(str(old), "new plan")
            batch.produce(str(tmp_path / "trace.json"), fails)
    assert old.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]  # no temporary left
    with atomic.Batch() as batch:
        batch.write(str(old), "new plan")
        batch.write(str(tmp_path / "report.html"), "<html>")
    assert old.read_text() == "new plan" and (tmp_path / "report.html").exists()


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_outputs_take_the_users_umask(umask, mode, tmp_path):
    previous = os.umask(umask)
    try:
        atomic.write_atomic(str(tmp_path / "plan.json"), "{}")
    finally:
        os.umask(previous)
    assert (tmp_path / "plan.json").stat().st_mode & 0o777 == mode


# ---- expected failures skip a candidate; bugs fail loudly ------------------------------------

@pytest.fixture
def tiny_job():
    cfg, w = get_model("wan-tiny"), get_workload("tiny")
    cand = next(c for c in S.enumerate_candidates(cfg, w, 4) if c.name == "dp2-ring2")
    return Job("lower", cand, cfg, w, "cpu:4")


@pytest.mark.parametrize("bug", [TypeError, KeyError, AttributeError, IndexError])
def test_bug_in_our_code_is_not_a_skipped_candidate(bug, tiny_job, monkeypatch):
    def build(*a, **k):
        raise bug("a bug")
    monkeypatch.setattr(C, "build", build)
    with pytest.raises(bug):
        run_jobs([tiny_job], workers=0, cache=None)


def test_expected_failures_skip_and_memory_is_told_by_type(tiny_job, monkeypatch):
    from jax.errors import JaxRuntimeError

    for exc, oom in ((ValueError("not divisible"), False), (MemoryError(), True),
                     (JaxRuntimeError("RESOURCE_EXHAUSTED: 20 GiB of HBM"), True),
                     (JaxRuntimeError("INVALID_ARGUMENT: no"), False)):
        def build(*a, **k):
            raise exc
        monkeypatch.setattr(C, "build", build)
        out = run_jobs([tiny_job], workers=0, cache=None)[0]
        assert not out.ok and out.out_of_memory == oom, exc
        assert out.error.startswith("dp2-ring2:") and "\n" not in out.error
    assert issubclass(CompileError, Exception) and C.CompileError is CompileError


def test_internal_error_exits_non_zero_with_a_last_line(monkeypatch, capsys):
    from aoizora.commands import topology

    def run_(args):
        return {}["missing"]
    monkeypatch.setattr(topology, "run", run_)
    rc, _, err = run(["topology", "v5e:2x2"], capsys)
    assert rc == cli.EXIT_INTERNAL
    assert "Traceback" in err and err.strip().splitlines()[-1].startswith(
        "aoizora topology: error: internal error")


def test_the_cores_internal_error_is_a_bug_and_its_other_errors_are_user_errors(monkeypatch,
                                                                                capsys):
    """An InternalError is a CoreError (so a ValueError) but not bad input: exit 70, not 2."""
    from aoizora import errors
    from aoizora.commands import topology

    for exc, want in ((errors.InternalError("simulated deadlock"), cli.EXIT_INTERNAL),
                      (errors.ParseError("x.hlo:1:2: expected ']'"), cli.EXIT_USAGE)):
        def run_(args, exc=exc):
            raise exc
        monkeypatch.setattr(topology, "run", run_)
        rc, _, err = run(["topology", "v5e:2x2"], capsys)
        assert rc == want, (exc, err)


# ---- JSON topologies end to end -------------------------------------------------------------

def test_plan_and_compare_on_a_topology_file(tmp_path, monkeypatch, capsys):
    monkeypatch.undo()   # the real planner
    monkeypatch.setenv("AOIZORA_CACHE", str(tmp_path / "cache"))
    topo = tmp_path / "my-v5e-4.json"
    topo.write_text(json.dumps(GOOD_TOPOLOGY))
    out, report, trace = (tmp_path / n for n in ("plan.json", "report.html", "trace.json"))
    previous = os.umask(0o022)
    try:
        rc, stdout, err = run(["plan", *TINY, "--topology", topo, "--top-k", "1",
                               "--workers", "1", "--out", out, "--report", report,
                               "--trace", trace], capsys)
    finally:
        os.umask(previous)
    assert rc == 0, err
    plan = json.loads(out.read_text())
    assert plan["topology"]["name"] == "my-v5e-4" and plan["topology"]["chips"] == 4
    assert plan["choice"]["simulated_s"] > 0 and plan["workload"]["frames"] == 9
    assert not any("unknown topology" in s for s in plan["planning"]["skipped"])
    for f in (out, report, trace):
        assert f.stat().st_mode & 0o777 == 0o644, f
    assert not list(tmp_path.glob(".tmp-*"))
    rc, stdout, err = run(["compare", *TINY, "--topology", topo, "--top-k", "1",
                           "--workers", "1", "--json"], capsys)
    assert rc == 0, err
    assert json.loads(stdout)[0]["simulated_s"] == plan["choice"]["simulated_s"]


# ---- signals --------------------------------------------------------------------------------

def _workers(pid: int) -> list[int]:
    """Compile worker processes (multiprocessing spawn children) of `pid`."""
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids = (task / "children").read_text().split()
        except OSError:
            continue
        for k in kids:
            try:
                if b"spawn_main" in Path(f"/proc/{k}/cmdline").read_bytes():
                    out.append(int(k))
            except OSError:
                pass
    return out


def _descendants(pid: int) -> list[int]:
    """`pid` and every process below it (a worker's fork server and the analysis compiles
    it forks, optimized_hlo.py)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo += [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                pass
    return out


def _holds_libtpu(pid: int) -> bool:
    """Has `pid` or a process below it (an analysis compile, optimized_hlo.py) loaded
    libtpu? Then its signal handlers would be installed there, unless the worker stopped
    them."""
    for p in _descendants(pid):
        try:
            if "libtpu" in Path(f"/proc/{p}/maps").read_text():
                return True
        except OSError:
            pass
    return False


# `group`: the signal goes to the whole process group, workers included, as Ctrl-C in a
# terminal and `timeout` send it; libtpu's failure handlers in the workers must stay silent.
@pytest.mark.parametrize("sig,code,word,group", [
    (signal.SIGTERM, 143, "terminated", False), (signal.SIGINT, 130, "interrupted", False),
    (signal.SIGTERM, 143, "terminated", True), (signal.SIGINT, 130, "interrupted", True)])
def test_signal_stops_the_workers_and_exits_in_one_line(sig, code, word, group, tmp_path,
                                                         alive):
    env = {**os.environ, "AOIZORA_CACHE": str(tmp_path / "cache")}
    # --oracle compiles every candidate, so the workers run for many seconds: without it the
    # tiny plan could finish within the 2 s below, leaving nothing to interrupt.
    proc = subprocess.Popen(
        [sys.executable, "-m", "aoizora.cli", "plan", *TINY, "--topology", "v5e:2x2",
         "--oracle", "--workers", "2", "--out", str(tmp_path / "plan.json")],
        # A shell that starts the tests in the background (no job control) leaves SIGINT
        # ignored, and an ignored signal is inherited: give the plan the default handler.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        start_new_session=group,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    deadline = time.time() + 120
    workers: list[int] = []
    while time.time() < deadline and len(workers) < 2 and proc.poll() is None:
        time.sleep(0.5)
        workers = _workers(proc.pid)
    assert workers, "no worker processes started"
    while group and time.time() < deadline and proc.poll() is None and not all(
            _holds_libtpu(w) for w in workers):
        time.sleep(0.2)
    time.sleep(2)
    if group:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert err.strip().splitlines() == [f"aoizora plan: {word}"], err
    assert "stack trace" not in err and "symbolize" not in err, err
    deadline = time.time() + 10
    while time.time() < deadline and any(alive(w) for w in workers):
        time.sleep(0.2)
    assert not any(alive(w) for w in workers)
    assert not (tmp_path / "plan.json").exists() and not list(tmp_path.glob(".tmp-*"))

"""`aoizora measure` on CPU devices (issue 14 part 4): the collective sweep writes a file
`aoizora calibrate` reads, a saved plan runs with random weights beside its simulated times,
and every output says CPU timings are not a TPU measurement. The test session's jax has 16
CPU devices (aoizora.compile.jaxenv), so commands run in-process through cli.main.

The plan under test is tests/data/plans/wan_tiny.v5e_2x2.json, the planner's own output
(tests/data/regen_plans.py): planning it takes about a minute, measuring it seconds."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import jax
import pytest

from aoizora.hardware import fitted_profile, measurements
from aoizora.errors import UserError
from aoizora.measure import collectives, local_slice, plan_run, platform, sizes
from aoizora.plan_format import Plan
from test_bad_input import refused, run

TINY_PLAN = Path(__file__).parents[1] / "data" / "plans" / "wan_tiny.v5e_2x2.json"


# ---- sizes and group shapes (no timing) -----------------------------------------------------

def test_sizes_run_in_powers_of_four_and_refuse_partial_f32():
    assert sizes.parse_sizes("1KiB..64MiB") == [1024 * 4 ** i for i in range(9)]
    assert sizes.parse_sizes("16MiB,1KiB") == [1024, 16 << 20]
    assert sizes.fmt(64 << 20) == "64MiB" and sizes.fmt(6) == "6B"
    for bad in ("3", "1KB", "64MiB..1KiB", ""):
        with pytest.raises(UserError):
            sizes.parse_sizes(bad)


def test_cpu_devices_stand_in_for_a_v5e_slice_in_chip_order():
    sl = local_slice.local_slice("cpu", jax.devices("cpu")[:8])
    assert (sl.topology, sl.generation, sl.stand_in) == ("v5e:2x4", "v5e", True)
    shapes = {s.name: s for s in local_slice.group_shapes(sl)}
    assert list(shapes) == ["x", "y", "slice"]
    # v5e:2x4 numbers its chips x fastest: x lines are pairs, y lines run 4 long.
    assert shapes["x"].groups == ((0, 1), (2, 3), (4, 5), (6, 7))
    assert shapes["y"].groups == ((0, 2, 4, 6), (1, 3, 5, 7))
    assert shapes["slice"].groups == (tuple(range(8)),) and shapes["x"].shape == "line"
    mesh = local_slice.mesh(sl)
    assert [d.id for d in mesh.devices.flat] == [d.id for d in sl.devices]
    permute = collectives._group_record("collective-permute", shapes["y"])
    assert permute["pairs"][:4] == [[0, 2], [2, 4], [4, 6], [6, 0]]
    with pytest.raises(UserError, match="stand in"):
        local_slice.local_slice("cpu", jax.devices("cpu")[:6])


def _groups_in_hlo(text: str, key: str) -> list:
    m = re.search(key + r"=\{(\{[\d,]+\}(?:,\{[\d,]+\})*)\}", text)
    return [[int(v) for v in g.split(",")] for g in re.findall(r"\{([\d,]+)\}", m.group(1))]


def test_tpu_devices_name_their_slice_and_xla_compiles_the_recorded_groups():
    """Compile-only TPU devices (libtpu, no TPU) stand for a TPU VM's: the slice is named by
    device kind and coordinates, and the groups a point records are the ones XLA compiles."""
    from jax.sharding import NamedSharding, PartitionSpec as P

    from aoizora.compile import tpu

    two_core = local_slice.local_slice("tpu", list(tpu.compile_only_devices("tpu7x:2x2x1")))
    assert two_core.topology == "tpu7x:2x2x1" and not two_core.stand_in
    shapes = {s.name: s for s in local_slice.group_shapes(two_core)}
    assert list(shapes) == ["x", "y", "core", "slice"]
    assert shapes["core"].groups == ((0, 1), (2, 3), (4, 5), (6, 7))   # core fastest
    sl = local_slice.local_slice("tpu", list(tpu.compile_only_devices("v5e:2x4")))
    assert (sl.topology, sl.generation) == ("v5e:2x4", "v5e")
    mesh = local_slice.mesh(sl)
    topo_id = {d.id: i for i, d in enumerate(sl.devices)}
    x = jax.ShapeDtypeStruct((8 * 256,), jax.numpy.float32,
                             sharding=NamedSharding(mesh, P(mesh.axis_names)))
    for kind, shape, key, field in (("all-gather", "y", "replica_groups", "groups"),
                                    ("collective-permute", "slice", "source_target_pairs",
                                     "pairs")):
        s = next(g for g in local_slice.group_shapes(sl) if g.name == shape)
        body = collectives._body(kind, s.axes, len(s.groups[0]))
        text = collectives._program(body, mesh).lower(x).compile().as_text()
        compiled = [[topo_id[d] for d in g] for g in _groups_in_hlo(text, key)]
        assert sorted(compiled) == sorted(collectives._group_record(kind, s)[field])


# ---- the sweep and calibrate ----------------------------------------------------------------

def test_collective_sweep_is_a_file_calibrate_reads(tmp_path, capsys, monkeypatch):
    out = tmp_path / "m.json"
    (tmp_path / "cwd").mkdir()
    rc, stdout, err = run(["measure", "collectives", "--platform", "cpu", "--devices", "4",
                           "--kinds", "all-gather", "all-reduce", "--sizes", "1KiB,16MiB",
                           "--repeats", "2", "-o", out, "--quiet", "--json"], capsys)
    assert rc == 0, err
    doc = json.loads(out.read_text())
    assert json.loads(stdout)["points"] == doc["points"]
    prov = doc["provenance"]
    assert prov["measured_on"] == platform.HARNESS_NOTE and prov["platform"] == "cpu"
    assert {"device_kind", "jax", "jaxlib", "libtpu", "date"} <= set(prov)
    assert prov["topology"] == "v5e:2x2" and prov["repeats"] == 2
    # 2 kinds x 3 group shapes (x, y, the slice) x 2 sizes, nothing skipped.
    assert len(doc["points"]) == 12 and doc["skipped"] == []
    by = {(p["kind"], p["group"]["name"], p["bytes_per_device"]): p for p in doc["points"]}
    for p in doc["points"]:
        assert p["generation"] == "v5e" and p["topology"] == "v5e:2x2"
        assert 0 < p["min_seconds"] <= p["seconds"] <= p["max_seconds"]
    for kind in ("all-gather", "all-reduce"):
        for group in ("x", "y", "slice"):
            assert by[(kind, group, 16 << 20)]["seconds"] > by[(kind, group, 1024)]["seconds"]
    assert by[("all-gather", "y", 1024)]["group"]["groups"] == [[0, 2], [1, 3]]
    assert measurements.read(str(out)).provenance["measured_on"] == platform.HARNESS_NOTE

    # CPU timings fit a profile only as a harness check, and the profile says so.
    refused(["calibrate", out, "-o", tmp_path / "profile.json"], capsys, "--harness-check")
    rc, stdout, err = run(["calibrate", out, "-o", tmp_path / "profile.json", "--harness-check",
                           "--json"], capsys)
    assert rc == 0, err
    fit = json.loads(stdout)
    assert fit["measured_on"] == platform.HARNESS_NOTE and len(fit["points"]) == 12
    profile = json.loads((tmp_path / "profile.json").read_text())
    assert profile["provenance"]["note"].startswith(fitted_profile.HARNESS_CHECK)

    # The command the sweep's last line suggests is one that works on its file.
    from aoizora.commands.measure import print_collectives

    print_collectives(doc, str(out))
    last = capsys.readouterr().out.splitlines()[-1]
    suggested = re.search(r"`aoizora (calibrate [^`]+)`", last).group(1).split()
    assert "--harness-check" in suggested, last
    monkeypatch.chdir(tmp_path / "cwd")
    rc, _, err = run(suggested, capsys)
    assert rc == 0 and (tmp_path / "cwd" / "profile.json").exists(), err


# ---- a saved plan ---------------------------------------------------------------------------

def _small_plan(tmp_path) -> Path:
    """The saved plan with three of its baselines: xdit-usp is the same program on the same
    devices as existing (run once), alpa-style another sharding."""
    d = json.loads(TINY_PLAN.read_text())
    d["baselines"] = {k: d["baselines"][k] for k in ("existing", "xdit-usp", "alpa-style")}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(d))
    return path


def test_plan_runs_with_random_weights_beside_its_simulated_times(tmp_path, capsys):
    path = _small_plan(tmp_path)
    plan = Plan.load(str(path))
    rc, stdout, err = run(["measure", "plan", path, "--platform", "cpu", "--repeats", "2",
                           "--trace", tmp_path / "trace", "--quiet", "--json"], capsys)
    assert rc == 0, err
    report = json.loads(stdout)
    rows = {r["label"]: r for r in report["rows"]}
    assert list(rows) == ["plan", "existing", "xdit-usp", "alpa-style"]
    assert rows["plan"]["simulated_s"] == plan.choice.simulated_s
    assert rows["alpa-style"]["simulated_s"] == plan.baselines["alpa-style"].simulated_s
    for r in rows.values():
        assert r["error"] is None and r["measured_s"] > 0
        assert r["measured_over_simulated"] == pytest.approx(r["measured_s"] / r["simulated_s"])
        assert (r["planned_kernel"], r["kernel"]) == ("splash", "blockwise")
    assert rows["xdit-usp"]["same_run_as"] == "existing"
    assert rows["xdit-usp"]["measured_s"] == rows["existing"]["measured_s"]
    assert rows["alpa-style"]["candidate"] != rows["existing"]["candidate"]
    # The splash kernel does not lower on CPU: one line says what ran instead, for which pairs.
    subs = report["kernel_substitutions"]
    assert len(subs) == 1 and "blockwise" in subs[0] and "splash" in subs[0]
    assert all(label in subs[0] for label in rows)
    assert report["provenance"]["measured_on"] == platform.HARNESS_NOTE
    assert list((tmp_path / "trace").rglob("*.xplane.pb")), "no XProf trace written"

    from aoizora.commands.measure import print_plan_report

    print_plan_report(report)
    text = capsys.readouterr().out
    assert "not a TPU measurement" in text and "simulated ms" in text and "measured ms" in text
    for label in rows:
        assert label in text
    assert f"{plan.choice.simulated_s * 1e3:.3f}" in text
    assert text.count("substituted:") == 1 and text.count("ran the blockwise kernel") == 1


def test_a_plan_compiled_for_cpu_says_its_simulated_times_price_cpu_programs():
    plan = Plan.load(str(TINY_PLAN))
    assert plan_run._notes(plan, "cpu", jax.devices("cpu")) == []
    plan.topology["compile_target"] = {"platform": "cpu", "name": "cpu", "devices": 4}
    assert "compiled for CPU devices" in plan_run._notes(plan, "cpu", jax.devices("cpu"))[0]


# ---- bad input ------------------------------------------------------------------------------

def _wide_plan(tmp_path) -> Path:
    """A well-formed plan for 32 devices (v5e:4x8): more than the session's 16."""
    coords = [[x, y, 0] for y in range(8) for x in range(4)]
    choice = {"candidate": "dp32", "mesh_shape": [32], "axis_names": ["data"],
              "strategy": {"name": "dp32", "data": 32}, "placement": "jax-default",
              "device_coords": coords, "chip_ids": list(range(32)), "simulated_s": 1e-3}
    d = {"schema": "aoizora.plan/1", "model": {"name": "wan-tiny"},
         "workload": {"video": "tiny", "frames": 9},
         "topology": {"name": "v5e:4x8", "generation": "v5e"}, "choice": choice}
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(d))
    return path


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    cpu = ["--platform", "cpu", "--quiet"]
    refused(["measure", "plan", tmp_path / "missing.json", *cpu], capsys, "no such file")
    (tmp_path / "broken.json").write_text("{\"schema\": ")
    refused(["measure", "plan", tmp_path / "broken.json", *cpu], capsys, "not JSON")
    refused(["measure", "plan", _wide_plan(tmp_path), *cpu], capsys,
            "needs 32 CPU devices but jax has 16")
    refused(["measure", "plan", TINY_PLAN, "--platform", "tpu", "--quiet"], capsys,
            "no TPU devices", "--platform cpu")
    shutil.copy(TINY_PLAN, tmp_path / "p.json")
    (tmp_path / "afile").write_text("")
    refused(["measure", "plan", tmp_path / "p.json", *cpu, "--trace", tmp_path / "afile"],
            capsys, "--trace")
    out = ["-o", tmp_path / "m.json"]
    refused(["measure", "collectives", *cpu, *out, "--sizes", "6B"], capsys, "multiple of 4")
    refused(["measure", "collectives", *cpu, *out, "--devices", "6"], capsys, "stand in")
    refused(["measure", "collectives", *cpu, *out, "--devices", "64"], capsys,
            "needs 64 CPU devices")
    refused(["measure", "collectives", *cpu, "-o", tmp_path], capsys, "folder")
    refused(["measure", "collectives", *cpu, *out, "--kinds", "broadcast"], capsys, "--kinds")
    assert not (tmp_path / "m.json").exists()

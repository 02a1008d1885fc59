"""`aoizora calibrate` (calibrate.py, fit_parameters.py, fitted_profile.py): fitting synthetic
points simulated on a known profile recovers its figures; held-out points and other
generations never move the fit; a parameter the points cannot determine keeps its base
value; a bad measurements file is one line and exit 2; the written profile loads."""

from __future__ import annotations

import json
import pathlib

import pytest

from aoizora import cli
from aoizora.hardware import calibrate, hardware_file, measurements

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOMINAL_V5P = ROOT / "calibration" / "nominal" / "v5p.json"
RING = [[0, 1], [1, 3], [3, 2], [2, 0]]          # one hop each on v5p:2x2x1
DIAGONAL = [[0, 3], [3, 0], [1, 2], [2, 1]]      # two hops each


def _nominal() -> dict:
    return json.loads(NOMINAL_V5P.read_text())


def _true_profile(tmp_path) -> tuple[dict, pathlib.Path]:
    """A v5p profile with known figures, different from the nominal ones."""
    prof = _nominal()
    prof["link_bandwidth"] = 70e9
    prof["hop_latency"] = 0.5e-6
    prof["collective_latency"]["collective-permute"] = 6e-6
    prof["collective_latency"]["all-gather"] = 3e-6
    path = tmp_path / "true.json"
    path.write_text(json.dumps(prof))
    return prof, path


def _point(pid, kind, nbytes, seconds=1.0, pairs=None, groups=None, generation="v5p",
           topology="v5p:2x2x1", **extra) -> dict:
    group = {"pairs": pairs} if pairs else {"groups": groups or [[0, 1, 2, 3]]}
    return {"id": pid, "generation": generation, "topology": topology, "kind": kind,
            "group": group, "bytes_per_device": nbytes, "seconds": seconds,
            "source": "synthetic", **extra}


def _synthetic(truth_path, specs) -> list[dict]:
    """Points whose seconds are simulated on the profile at `truth_path`."""
    out = []
    for d in specs:
        p = measurements._point(d)
        out.append({**d, "seconds": p.simulate(str(truth_path))})
    return out


def _doc(points, programs=()) -> dict:
    return {"schema": measurements.SCHEMA, "points": list(points), "programs": list(programs)}


def _read(tmp_path, doc) -> measurements.Measurements:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    return measurements.read(str(path))


def _fit(m, base=None):
    return calibrate.fit(m, base or _nominal(), "v5p", "nominal", "2026-01-01")


def _params(fit) -> dict:
    return {p.name: p for p in fit.parameters}


PERMUTES = [_point(f"ring-{b}", "collective-permute", b, pairs=RING)
            for b in (1024, 65536, 1 << 20, 16 << 20)]
MIXED = PERMUTES + [_point(f"diag-{b}", "collective-permute", b, pairs=DIAGONAL)
                    for b in (1024, 1 << 20)] + [
                   _point(f"ag-{b}", "all-gather", b) for b in (4096, 4 << 20)]


def test_fit_recovers_the_figures_the_points_were_simulated_on(tmp_path):
    # One- and two-hop permutes and all-gathers separate all four parameters.
    truth, path = _true_profile(tmp_path)
    fit = _fit(_read(tmp_path, _doc(_synthetic(path, MIXED))))
    got = _params(fit)
    assert all(p.fitted for p in got.values()), [(p.name, p.reason) for p in got.values()]
    assert got["link_bandwidth"].value == pytest.approx(70e9, rel=0.01)
    assert got["hop_latency"].value == pytest.approx(0.5e-6, rel=0.02)
    assert got["collective_latency.collective-permute"].value == pytest.approx(6e-6, rel=0.01)
    assert got["collective_latency.all-gather"].value == pytest.approx(3e-6, rel=0.02)
    assert max(abs(q.error_after) for q in fit.points) < 0.005
    assert max(abs(q.error_before) for q in fit.points) > 0.15   # the nominal figures miss


# One step of a program on v5p:2x2x1: a [8192,4096] x [4096,4096] matmul per device (275
# GFLOP, about 0.6 ms at v5p's peak) and the all-reduce of its 64 MiB result.
STEP_HLO = """HloModule step, num_partitions=4

%add (a: bf16[], b: bf16[]) -> bf16[] {
  %a = bf16[] parameter(0)
  %b = bf16[] parameter(1)
  ROOT %s = bf16[] add(%a, %b)
}

ENTRY %main (x: bf16[8192,4096], w: bf16[4096,4096]) -> bf16[8192,4096] {
  %x = bf16[8192,4096]{1,0} parameter(0)
  %w = bf16[4096,4096]{1,0} parameter(1)
  %d = bf16[8192,4096]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %r = bf16[8192,4096]{1,0} all-reduce(%d), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%add
}
"""


def _program(tmp_path, seconds=1.0, **extra) -> dict:
    (tmp_path / "step.hlo").write_text(STEP_HLO)
    return {"id": "step", "generation": "v5p", "topology": "v5p:2x2x1", "mesh": [4],
            "hlo": "step.hlo", "seconds": seconds, "source": "synthetic", **extra}


def test_a_whole_program_fits_the_mxu_efficiency_beside_the_links(tmp_path):
    truth, path = _true_profile(tmp_path)
    truth["mxu_efficiency"] = 0.6
    path.write_text(json.dumps(truth))
    step = _program(tmp_path)
    step["seconds"] = measurements._program(step, str(tmp_path)).simulate(str(path))
    fit = _fit(_read(tmp_path, _doc(_synthetic(path, PERMUTES), programs=[step])))
    got = _params(fit)
    assert got["mxu_efficiency"].fitted and got["mxu_efficiency"].value == pytest.approx(0.6, rel=0.01)
    assert got["link_bandwidth"].value == pytest.approx(70e9, rel=0.01)
    prog = next(q for q in fit.points if q.id == "step")
    assert prog.used and prog.kind == "program" and abs(prog.error_after) < 0.005
    assert prog.error_before < -0.2        # at efficiency 1 the step runs too fast
    assert any(n.startswith("mxu_efficiency is set by one point alone (step)") for n in fit.notes)
    assert not any("link_bandwidth is set by one point" in n for n in fit.notes)


def test_a_whole_video_alone_fits_only_the_mxu_efficiency(tmp_path, capsys):
    # A video timed on a profile with a slower link *and* slower matmuls: one point fits one
    # figure, and it is the compute's (issue 32 item 4). Before whole programs fitted alone,
    # the link bandwidth came first and took the point.
    truth, path = _true_profile(tmp_path)
    truth["mxu_efficiency"] = 0.5
    path.write_text(json.dumps(truth))
    step = _program(tmp_path)
    video = {**step, "id": "video", "kind": "video", "steps": 30,
             "stages": [{"stage": "text_encoder", "sharding": "te", "hlo": "step.hlo", "mesh": [4]},
                        {"stage": "vae_decode", "sharding": "vae", "hlo": "step.hlo", "mesh": [4]}],
             "reshards": [{"name": "latents -> VAE", "max_chip_bytes": 1 << 20}]}
    video["seconds"] = measurements._program(video, str(tmp_path)).simulate(str(path))
    doc = _doc([], programs=[video])
    fit = _fit(_read(tmp_path, doc))
    assert [(p.name, p.fitted) for p in fit.parameters] == [("mxu_efficiency", True)]
    assert abs(fit.points[0].error_after) < 0.005 and fit.points[0].kind == "video"
    (tmp_path / "m.json").write_text(json.dumps(doc))
    out = tmp_path / "fitted.json"
    assert cli.main(["calibrate", str(tmp_path / "m.json"), "--base", "v5p", "-o", str(out)]) == 0
    capsys.readouterr()
    prov = json.loads(out.read_text())["provenance"]
    assert (prov["fitted_parameters"], prov["fitted_to"]) == (["mxu_efficiency"], ["video"])
    assert "the link and latency figures (no collective point among the points" in prov["note"]


def test_collective_points_alone_never_fit_the_mxu_efficiency(tmp_path):
    _, path = _true_profile(tmp_path)
    fit = _fit(_read(tmp_path, _doc(_synthetic(path, PERMUTES),
                                    programs=[{"id": "no-hlo", "generation": "v5p",
                                               "seconds": 2.5}])))
    assert "mxu_efficiency" not in _params(fit)
    assert ("no-hlo", "a whole program without a compiled HLO to simulate") in fit.unused


def test_hop_latency_the_points_cannot_separate_keeps_its_base_value(tmp_path):
    # Every point one hop, one permute: hop and permute latency move every point alike.
    _, path = _true_profile(tmp_path)
    fit = _fit(_read(tmp_path, _doc(_synthetic(path, PERMUTES))))
    got = _params(fit)
    assert not got["hop_latency"].fitted
    assert got["hop_latency"].value == got["hop_latency"].base == 1e-6
    assert "collective_latency.collective-permute" in got["hop_latency"].reason
    # The two together are recovered: 0.5 + 6 us of truth = 1 + 5.5 us fitted.
    assert got["collective_latency.collective-permute"].value == pytest.approx(5.5e-6, rel=0.01)
    assert got["link_bandwidth"].value == pytest.approx(70e9, rel=0.01)
    assert any("hop_latency kept at the base value" in n for n in fit.notes)


def test_held_out_points_and_other_generations_never_move_the_fit(tmp_path):
    _, path = _true_profile(tmp_path)
    points = _synthetic(path, PERMUTES)
    alone = _fit(_read(tmp_path, _doc(points)))
    wild = [_point("held", "collective-permute", 4096, seconds=1.0, pairs=RING,
                   held_out="a check only"),
            _point("v5e-far-off", "all-gather", 4096, seconds=1.0, generation="v5e",
                   topology="v5e:2x2")]
    fit = _fit(_read(tmp_path, _doc(points + wild)))
    assert [(p.name, p.value) for p in fit.parameters] == [
        (p.name, p.value) for p in alone.parameters]
    held = next(q for q in fit.points if q.id == "held")
    assert not held.used and held.error_after < -0.99       # simulated as a check, far off
    assert "v5e-far-off" not in {q.id for q in fit.points}
    assert ("v5e-far-off", "generation v5e") in fit.unused


def test_a_point_inconsistent_with_the_others_is_reported_not_fitted_away(tmp_path):
    _, path = _true_profile(tmp_path)
    points = _synthetic(path, PERMUTES)
    points.append(_point("odd", "collective-permute", 4 << 20, pairs=RING))
    points[-1]["seconds"] = 3 * measurements._point(points[-1]).simulate(str(path))
    fit = _fit(_read(tmp_path, _doc(points)))
    assert any("point odd" in n and "inconsistent" in n for n in fit.notes), fit.notes


def test_cli_writes_a_profile_that_loads_and_records_its_fit(tmp_path, capsys):
    _, path = _true_profile(tmp_path)
    doc = _doc(_synthetic(path, PERMUTES) + [
        _point("held", "collective-permute", 4096, seconds=1e-5, pairs=RING, held_out="check")],
        programs=[{"id": "a-step", "generation": "v5p", "seconds": 2.5}])
    m = tmp_path / "m.json"
    m.write_text(json.dumps(doc))
    out = tmp_path / "fitted.json"
    rc = cli.main(["calibrate", str(m), "--base", "v5p", "-o", str(out), "--json"])
    printed = json.loads(capsys.readouterr().out)
    assert rc == 0
    hardware_file.check(str(out))                          # the core reads it back
    prof = json.loads(out.read_text())
    prov = prof["provenance"]
    used = [q["id"] for q in printed["points"] if q["used"]]
    assert prov["fitted"] is True and prov["fitted_to"] == used == [p["id"] for p in
                                                                    doc["points"][:4]]
    assert sorted(prov["residuals"]) == sorted(used) and "held" not in prov["residuals"]
    assert prov["fitted_on"] == printed["date"]
    assert prov["fitted_parameters"] == [p["name"] for p in printed["parameters"] if p["fitted"]]
    assert prof["link_bandwidth"] == pytest.approx(70e9, rel=0.01)
    assert {"id": "a-step", "why": printed["not_used"][0]["why"]} in printed["not_used"]
    assert "without a compiled HLO" in printed["not_used"][0]["why"]
    # The profile drives a topology like any other.
    rc = cli.main(["topology", "v5p:2x2x1", "--json", "--hardware", str(out)])
    assert rc == 0
    assert json.loads(capsys.readouterr().out)["spec"]["link_bandwidth"] == prof["link_bandwidth"]


def test_cli_table_prints_every_point_before_and_after(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")   # one line a point (test_terminal: at 80)
    out = tmp_path / "v4.json"
    rc = cli.main(["calibrate", str(measurements.PUBLISHED), "--base",
                   str(ROOT / "calibration" / "nominal" / "v4.json"), "-o", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    for pid in ("v4-2x2x1-psum-16KiB", "v4-2x2x1-psum-128KiB", "v4-2x2x1-psum-1MiB"):
        line = next(l for l in text.splitlines() if l.startswith(pid))
        assert line.count("%") == 2, line                   # error before and after
    assert "-41.5%" in text          # the 16 KiB point on the nominal profile (ring model)
    assert json.loads(out.read_text())["provenance"]["fitted"] is True


def test_v4_dma_points_one_and_two_hops_apart_fit_the_hop_latency():
    """Issue 14's v4 remote DMA (1.85 us + K KiB / 43.4 GB/s, +0.92 us per extra hop) as
    one-pair permutes at one and two hops: the fit separates the hop latency (0.92 us) from
    the permute's fixed cost (0.93 us), beside the psum points. With every permute one hop,
    a hop moves each point as the fixed costs do, and it keeps its base."""
    m = measurements.read(measurements.PUBLISHED)
    base = json.loads((ROOT / "calibration" / "nominal" / "v4.json").read_text())
    got = {p.name: p for p in calibrate.fit(m, base, "v4", "nominal", "").parameters}
    assert got["hop_latency"].fitted
    assert got["hop_latency"].value == pytest.approx(0.92e-6, rel=0.02)
    assert got["collective_latency.collective-permute"].value == pytest.approx(0.93e-6, rel=0.03)
    one_hop = measurements.Measurements([p for p in m.points if "-2hop-" not in p.id])
    kept = {p.name: p for p in calibrate.fit(one_hop, base, "v4", "nominal", "").parameters}
    assert not kept["hop_latency"].fitted and kept["hop_latency"].value == 1e-6


def _fit_tpu7x(tmp_path, capsys, grid: str) -> dict:
    base = json.loads((ROOT / "calibration" / "nominal" / "tpu7x.json").read_text())
    base["algorithms"]["grid"] = grid
    (tmp_path / "base.json").write_text(json.dumps(base))
    rc = cli.main(["calibrate", str(measurements.PUBLISHED), "--base", str(tmp_path / "base.json"),
                   "-o", str(tmp_path / f"{grid}.json"), "--json"])
    assert rc == 0
    return json.loads(capsys.readouterr().out)


def test_tpu7x_points_fit_a_physical_link_only_with_xlas_ring(tmp_path, capsys):
    """The published TPU7x all-gathers (two 4-way groups, one per core, each a 2x2 box of
    chips). XLA runs them as rings both ways (SparseCore offload, CW and CCW colours): with
    the grid as a ring the fit gives 89.2 GB/s per link, under the 100 GB/s nominal, and
    profiles/tpu7x.json ships it. Dimension by dimension, one link at a time, the same points
    need a 178 GB/s link, above what a link can carry, and the fit says so."""
    ring = _fit_tpu7x(tmp_path, capsys, "bidirectional-ring")
    params = {p["name"]: p for p in ring["parameters"]}
    assert params["link_bandwidth"]["value"] == pytest.approx(89.2e9, rel=0.01)
    assert params["collective_latency.all-gather"]["value"] == pytest.approx(10.16e-6, rel=0.02)
    used = [q for q in ring["points"] if q["used"]]
    published = measurements.read(measurements.PUBLISHED)
    assert [q["id"] for q in used] == [p.id for p in published.points + published.programs
                                       if p.generation == "tpu7x"]
    assert used[-1]["kind"] == "program"     # the whole TPU7x-8 step fits the MXU efficiency
    assert max(abs(q["error_after"]) for q in used) < 0.01
    assert not any("above the base figure" in n for n in ring["notes"])
    by_dimension = _fit_tpu7x(tmp_path, capsys, "dimension-order")
    link = next(p for p in by_dimension["parameters"] if p["name"] == "link_bandwidth")
    assert link["value"] == pytest.approx(178.4e9, rel=0.01)
    assert any("link_bandwidth fitted above the base figure" in n for n in by_dimension["notes"])
    shipped = hardware_file.shipped("tpu7x")
    assert shipped["provenance"]["fitted"] is True
    assert shipped["link_bandwidth"] == pytest.approx(params["link_bandwidth"]["value"])
    assert shipped["mxu_efficiency"] == pytest.approx(params["mxu_efficiency"]["value"])
    assert (shipped["cores_per_chip"], shipped["algorithms"]["grid"]) == (2, "bidirectional-ring")


def _bad_file(tmp_path, body) -> pathlib.Path:
    path = tmp_path / "bad.json"
    path.write_text(body if isinstance(body, str) else json.dumps(body))
    return path


GOOD = _point("p", "collective-permute", 4096, seconds=5e-6, pairs=RING)


@pytest.mark.parametrize("body, message", [
    ("{not json", "not JSON"),
    ({"schema": "aoizora.measurements/9", "points": []},
     "not a measurements file (schema aoizora.measurements/1, as `aoizora measure collectives` "
     "writes): a file of schema 'aoizora.measurements/9'"),
    ({"traceEvents": []}, "not a measurements file (schema aoizora.measurements/1, as "
                          "`aoizora measure collectives` writes): a Perfetto/Chrome trace"),
    ({"points": []}, "a JSON object without a 'schema' key (keys: points)"),
    ({"schema": measurements.SCHEMA}, "'points' must be a list"),
    (_doc([{k: v for k, v in GOOD.items() if k != "seconds"}]), "missing 'seconds'"),
    (_doc([{**GOOD, "seconds": -1}]), "'seconds' must be a positive"),
    (_doc([{**GOOD, "seconds": "5us"}]), "'seconds' must be a positive"),
    (_doc([{**GOOD, "bytes_per_device": 4097}]), "multiple of 4"),
    (_doc([{**GOOD, "kind": "all-gahter"}]), "unknown kind"),
    (_doc([{**GOOD, "topology": "v5p:3x3x3"}]), "unknown topology"),
    (_doc([{**GOOD, "generation": "v4"}]), "'generation' is 'v4' but v5p:2x2x1 is 'v5p'"),
    (_doc([{**GOOD, "group": {"pairs": [[0, 9]]}}]), "device id 9"),
    (_doc([GOOD, GOOD]), "appears more than once"),
    (_doc([GOOD], programs=[{"id": "x"}]), "program x: needs a positive 'seconds'"),
    (_doc([GOOD], programs=[{"id": "x", "seconds": 1, "hlo": "step.hlo", "topology": "v5p:2x2x1"}]),
     "program x: an 'hlo' needs the 'topology' it ran on and its 'mesh'"),
    (_doc([GOOD], programs=[{"id": "x", "seconds": 1, "hlo": "gone.hlo", "generation": "v5p",
                             "topology": "v5p:2x2x1", "mesh": [4]}]), "'hlo'"),
    (_doc([GOOD], programs=[{"id": "x", "seconds": 1, "hlo": "step.hlo", "generation": "v5p",
                             "topology": "v5p:2x2x1", "mesh": [2, 4]}]), "'mesh' [2, 4] has 8"),
])
def test_bad_measurements_file_is_one_line_and_exit_2(tmp_path, capsys, body, message):
    (tmp_path / "step.hlo").write_text(STEP_HLO)
    path = _bad_file(tmp_path, body)
    out = tmp_path / "out.json"
    rc = cli.main(["calibrate", str(path), "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and message in err and str(path) in err, err
    assert not out.exists()


@pytest.mark.parametrize("argv, message", [
    (["--base", "v9"], "--base v9"),
    (["--base", "v4"], "no measured point of generation v4"),
    ([], "name the one to fit with --base"),
])
def test_bad_base_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    points = [GOOD, _point("e", "all-gather", 4096, generation="v5e", topology="v5e:2x2")]
    path = _bad_file(tmp_path, _doc(points))
    out = tmp_path / "out.json"
    rc = cli.main(["calibrate", str(path), "-o", str(out), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and message in err, err
    assert not out.exists()


def test_cpu_timings_are_refused_unless_a_harness_check_and_every_loader_says_so(tmp_path,
                                                                                capsys):
    """`aoizora measure --platform cpu` timings fit no TPU profile silently: refused in one
    line; under --harness-check the profile's note says so and each command loading it warns
    once on stderr."""
    from aoizora.hardware import fitted_profile
    from aoizora.measure import platform

    points = [_point(f"e-{b}", "all-gather", b, seconds=s, groups=[[0, 1, 2, 3]],
                     generation="v5e", topology="v5e:2x2")
              for b, s in ((4096, 3e-4), (1 << 20, 9e-4))]
    doc = {**_doc(points), "provenance": {"platform": "cpu", "measured_on": platform.HARNESS_NOTE}}
    m = _bad_file(tmp_path, doc)
    out = tmp_path / "prof.json"
    rc = cli.main(["calibrate", str(m), "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--harness-check" in err and "CPU" in err, err
    assert not out.exists()
    # The flag on TPU timings is a mistake too.
    tpu = tmp_path / "tpu.json"
    tpu.write_text(json.dumps({**doc, "provenance": {"platform": "tpu"}}))
    assert cli.main(["calibrate", str(tpu), "-o", str(out), "--harness-check"]) == 2
    assert "was not timed on CPU devices" in capsys.readouterr().err

    assert cli.main(["calibrate", str(m), "-o", str(out), "--harness-check", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["harness_check"] is True
    prof = json.loads(out.read_text())
    assert prof["provenance"]["note"].startswith(fitted_profile.HARNESS_CHECK)
    assert "published" not in prof["provenance"]["note"]
    assert fitted_profile.harness_check(prof)
    hlo = str(ROOT / "tests" / "data" / "hlo" / "ring_alltoall.v5e_2x4.hlo")
    for argv in (["topology", "v5e:2x4"], ["rank", "--hlo", hlo, "--topology", "v5e:2x4"],
                 ["simulate", "--hlo", hlo, "--topology", "v5e:2x4"]):
        assert cli.main([*argv, "--hardware", str(out)]) == 0
        err = capsys.readouterr().err
        assert err.count(fitted_profile.HARNESS_CHECK) == 1 and "warning:" in err, (argv, err)
    # A shipped-style profile loads without a word.
    assert cli.main(["topology", "v5e:2x4", "--hardware",
                     str(ROOT / "calibration" / "nominal" / "v5e.json")]) == 0
    assert "warning" not in capsys.readouterr().err

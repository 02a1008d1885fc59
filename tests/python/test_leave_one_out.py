"""Leave-one-out (leave_one_out.py, bench/fidelity.py --leave-one-out): a point is predicted
by the calibration's fit to the other points alone. Synthetic case: four one-hop permutes on
v5p:2x2x1 simulated on a known profile, one of them published 25 % slower than the model can
run it. Fitted without it, the other three recover the known figures exactly, so its
prediction is the known profile's time and its error -20 %; a fit that saw it (a left-out
point leaking into its own fit) would pull towards it and show far less."""

from __future__ import annotations

import json
import pathlib

import pytest

from aoizora.hardware import leave_one_out, measurements

ROOT = pathlib.Path(__file__).resolve().parents[2]
RING = [[0, 1], [1, 3], [3, 2], [2, 0]]   # one hop each on v5p:2x2x1
SIZES = (4096, 262144, 4 << 20, 16 << 20)
ODD = "ring-262144"                       # published 1.25x its true time


def _nominal() -> dict:
    return json.loads((ROOT / "calibration" / "nominal" / "v5p.json").read_text())


def _truth(tmp_path) -> pathlib.Path:
    prof = _nominal()
    prof["link_bandwidth"] = 70e9
    prof["collective_latency"]["collective-permute"] = 6e-6
    path = tmp_path / "truth.json"
    path.write_text(json.dumps(prof))
    return path


def _measurements(tmp_path, truth, sizes=SIZES) -> measurements.Measurements:
    points = []
    for b in sizes:
        d = {"id": f"ring-{b}", "generation": "v5p", "topology": "v5p:2x2x1",
             "kind": "collective-permute", "group": {"pairs": RING}, "bytes_per_device": b,
             "seconds": 1.0, "source": "synthetic"}
        t = measurements._point(d).simulate(str(truth))
        points.append({**d, "seconds": t * (1.25 if d["id"] == ODD else 1.0)})
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"schema": measurements.SCHEMA, "points": points}))
    return measurements.read(str(path))


def test_a_point_is_predicted_by_the_fit_to_the_others_alone(tmp_path):
    truth = _truth(tmp_path)
    m = _measurements(tmp_path, truth)
    rows = {r.id: r for r in leave_one_out.run(m, _nominal(), "v5p")}
    assert list(rows) == [f"ring-{b}" for b in SIZES]
    odd = rows[ODD]
    # The other three are exact on the known profile, so the fit without ODD is that profile.
    true_s = next(p for p in m.points if p.id == ODD).simulate(str(truth))
    assert odd.left_out_s == pytest.approx(true_s, rel=0.005)
    assert odd.left_out_error == pytest.approx(1 / 1.25 - 1, abs=0.005)
    # In sample, the fit was pulled towards ODD: its error there is much smaller.
    assert abs(odd.in_sample_error) < 0.15
    # Every other point is predicted with ODD among its fit's points: not exact either.
    assert all(abs(r.left_out_error) > 0.005 for r in rows.values())
    assert all(abs(r.left_out_error) >= abs(r.in_sample_error) - 1e-9 for r in rows.values())


def test_a_generation_with_one_point_cannot_leave_it_out(tmp_path):
    m = _measurements(tmp_path, _truth(tmp_path), sizes=(4 << 20,))
    (row,) = leave_one_out.run(m, _nominal(), "v5p")
    assert row.left_out_s is None and row.left_out_error is None
    assert "only point" in row.why_not
    assert row.in_sample_error == pytest.approx(0.0, abs=0.005)   # exact by construction

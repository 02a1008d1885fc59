"""Per-field basis of hardware profiles (field_basis.py, derive_fixed_costs.py): the shipped
v6e profile says what is fitted, derived and nominal, and none of its fixed costs is nominal;
the rule derives them from the closest fitted generation; a malformed basis is refused in one
line when the profile is loaded; topology, plan.json, the plan's screen and the report say
which figures are nominal."""

from __future__ import annotations

import json
import pathlib
import types

import pytest

from aoizora import cli
from aoizora.hardware import derive_fixed_costs, field_basis, hardware_file
from aoizora.errors import UserError
from aoizora.plan_summary import hardware_line
from aoizora.report import hardware, page

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _nominal(gen: str) -> dict:
    return json.loads((ROOT / "calibration" / "nominal" / f"{gen}.json").read_text())


def test_shipped_v6e_has_no_nominal_fixed_cost_but_the_grid_step():
    v6e = hardware_file.shipped("v6e")
    s = field_basis.summary(v6e)
    assert s["stated"] and s["fitted"] == ["mxu_efficiency"]
    fixed = {"hop_latency", "grid_step_seconds", *field_basis.FIXED_COSTS}
    assert fixed & set(s["nominal"]) == {"grid_step_seconds"}    # no public figure
    v5e = hardware_file.shipped("v5e")
    derived = {d["field"]: d for d in s["derived"]}
    assert set(derived) == {"hop_latency", *field_basis.FIXED_COSTS}
    hop = derived.pop("hop_latency")
    assert hop["from"] == "v4 hop_latency" and hop["rule"] == derive_fixed_costs.HOP_RULE
    assert v6e["hop_latency"] == hardware_file.shipped("v4")["hop_latency"]
    for d in derived.values():
        assert d["from"] == "v5e collective_latency.all-gather" and d["rule"]
        kind = d["field"].split(".", 1)[1]
        assert v6e["collective_latency"][kind] == v5e["collective_latency"]["all-gather"]


def test_every_shipped_profile_states_every_field():
    for gen in ("v4", "v5e", "v5p", "v6e", "tpu7x"):
        doc = hardware_file.shipped(gen)
        assert set(doc["provenance"]["basis"]) == set(field_basis.fields(doc)), gen
        for name in doc["provenance"]["fitted_parameters"]:
            assert doc["provenance"]["basis"][name]["basis"] == "fitted", (gen, name)


def test_the_rule_takes_the_closest_fitted_generation():
    fitted = [hardware_file.shipped(g) for g in ("v4", "v5e", "v5p", "tpu7x")]
    base = _nominal("v6e")
    assert derive_fixed_costs.closest(base, fitted)["generation"] == "v5e"   # 2-D, one core
    changed = derive_fixed_costs.derive(base, fitted)
    assert changed == list(field_basis.FIXED_COSTS) + ["hop_latency"]
    assert len(set(base["collective_latency"].values())) == 1
    # The hop latency comes from the one generation whose points differ in hops (v4), not
    # from v5e, which did not fit one; without v4 it stays nominal.
    assert base["hop_latency"] == fitted[0]["hop_latency"] != 1e-6
    assert base["provenance"]["basis"]["hop_latency"]["from"] == "v4 hop_latency"
    base = _nominal("v6e")
    assert derive_fixed_costs.derive(base, fitted[1:]) == list(field_basis.FIXED_COSTS)
    assert base["hop_latency"] == 1e-6
    assert base["provenance"]["basis"]["hop_latency"] == {"basis": "nominal"}
    # Without v5e, the nearest is a 3-D one-core chip with the nearest link bandwidth.
    base = _nominal("v6e")
    src = derive_fixed_costs.closest(base, [f for f in fitted if f["generation"] != "v5e"])
    assert src["generation"] == "v5p"
    # A field already fitted or derived is never overwritten; nothing fitted, nothing derived.
    assert derive_fixed_costs.derive(_nominal("v6e"), [_nominal("v5e")]) == []


def test_a_derived_field_without_its_rule_is_refused_in_one_line(tmp_path):
    doc = hardware_file.shipped("v6e")
    del doc["provenance"]["basis"]["collective_latency.all-reduce"]["rule"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(UserError) as e:
        hardware_file.check(str(path))
    msg = str(e.value)
    assert "provenance.basis.collective_latency.all-reduce.rule" in msg and "\n" not in msg


def test_topology_shows_the_basis(capsys):
    assert cli.main(["topology", "v6e:2x4"]) == 0
    out = " ".join(capsys.readouterr().out.split())   # wrapped at the terminal's width
    assert ("basis: fitted: mxu_efficiency; derived: hop_latency from v4 hop_latency; "
            "all-gather latency, all-reduce latency, reduce-scatter latency") in out
    assert "collective-broadcast latency from v5e collective_latency.all-gather; nominal: " in out
    assert cli.main(["topology", "v6e:2x4", "--json"]) == 0
    basis = json.loads(capsys.readouterr().out)["hardware_basis"]
    assert "peak_flops" in basis["nominal"] and basis["fitted"] == ["mxu_efficiency"]


def test_a_plan_says_it_rests_on_nominal_figures():
    from aoizora.planning.stage2 import Stage2

    topology = Stage2.for_topology("v6e:2x4").describe()     # what plan.json records
    basis = topology["hardware_basis"]
    assert "grid_step_seconds" in basis["nominal"] and "hop_latency" not in basis["nominal"]
    plan = types.SimpleNamespace(topology=topology)
    assert "rests on nominal figures" in hardware_line(plan)
    html = hardware.section(plan, page._missing)
    assert "rests on nominal figures" in html and "derived" in html
    old = types.SimpleNamespace(topology={"hardware": "shipped:v6e"})   # an older plan
    assert hardware_line(old) == "" and "does not record" in hardware.section(old, page._missing)

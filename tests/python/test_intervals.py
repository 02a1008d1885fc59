"""Intervals and ties (intervals.py) on constructed plans: a forward's interval scales its
compute and its exposed communication by their own bands; a candidate whose interval
overlaps the plan's is reported as a tie with the part that separates them, one whose does
not is not; plan.json, the CLI table and the report carry both."""

from __future__ import annotations

import io
import json

import pytest

from aoizora import plan_schema
from aoizora.hardware import error_bands
from aoizora.planning import intervals
from aoizora.plan_format import Choice, Plan

# Compute known to 10 %, communication to 50 %: a communication-heavy step is the less sure.
BANDS = error_bands.Bands("v5e", error_bands.Band(0.5, error_bands.OWN, "ag"),
                          error_bands.Band(0.1, error_bands.OWN, "step"))


def _split(compute: float, comm: float) -> dict:
    return {"forward_s": {"compute": compute, "all-gather": comm}, "step_s": compute + comm}


def _choice(name: str, compute: float, comm: float, x: int = 0) -> Choice:
    return Choice(candidate=name, mesh_shape=[8], axis_names=["data"], strategy={},
                  placement=f"p{x}", device_coords=[[i, 0, 0] for i in range(8)],
                  chip_ids=list(range(8)), q2_s=compute + comm,
                  simulated_s=compute + comm, extra={"step_split": _split(compute, comm)})


def _plan(plan: Choice, **baselines: Choice) -> Plan:
    p = Plan(model={"name": "m"}, workload={"video": "tiny", "frames": 9},
             topology={"name": "v5e:2x4", "generation": "v5e"}, choice=plan,
             baselines=dict(baselines))
    intervals.annotate(p, BANDS, intervals.POINT)
    return p


def test_a_forward_scales_compute_and_communication_by_their_own_bands():
    iv = intervals.forward(_split(1.0, 0.5), BANDS)
    assert iv["low_s"] == pytest.approx(1.0 / 1.1 + 0.5 / 1.5)
    assert iv["high_s"] == pytest.approx(1.0 / 0.9 + 0.5 / 0.5)
    assert iv["point_s"] == 1.5
    # An unattributed remainder takes the wider band at both ends.
    split = {"forward_s": {"compute": 1.0, "unattributed": 0.5}, "step_s": 1.5}
    assert intervals.forward(split, BANDS)["high_s"] == pytest.approx(1.0 / 0.9 + 0.5 / 0.5)


def test_a_video_is_its_steps_its_reshards_and_its_stages():
    fwd = intervals.forward(_split(1.0, 0.5), BANDS)
    parts = {"text_encoder_s": 0.2, "denoising_s": 30 * 1.5, "vae_decode_s": 0.8,
             "reshard_s": 0.01}
    iv = intervals.video(parts, 30, fwd, BANDS)
    assert iv["point_s"] == pytest.approx(46.01)
    # Stages (no split kept) in the wider band, 50 %; reshards are communication.
    assert iv["high_s"] == pytest.approx(30 * fwd["high_s"] + 0.01 / 0.5 + 1.0 / 0.5)
    assert iv["low_s"] == pytest.approx(30 * fwd["low_s"] + 0.01 / 1.5 + 1.0 / 1.5)
    assert intervals.video({**parts, "vae_decode_s": None}, 30, fwd, BANDS) is None


def test_overlapping_intervals_are_a_tie_with_what_separates_them():
    # The plan: 1.0 s all compute, [0.909, 1.111]. The baseline: 1.05 s of which 0.3 s
    # gathers, [0.882, 1.433]: they overlap, and communication separates them most.
    p = _plan(_choice("plan", 1.0, 0.0), usp=_choice("usp", 0.75, 0.3, 1))
    (tie,) = intervals.ties(p)
    assert tie["name"] == "usp" and tie["role"] == "baseline"
    assert tie["most"] == "communication"
    assert tie["by_part_s"]["communication"] == pytest.approx(0.3)
    assert tie["by_part_s"]["compute"] == pytest.approx(-0.25)
    assert "usp" in intervals.sentence(p) and "Ties" in intervals.sentence(p)


def test_separate_intervals_are_no_tie():
    # 1.3 s of compute: [1.182, 1.444] starts above the plan's 1.111.
    p = _plan(_choice("plan", 1.0, 0.0), slow=_choice("slow", 1.3, 0.0, 1))
    assert intervals.ties(p) == []
    assert "No candidate's interval overlaps it" in intervals.sentence(p)
    # The same gap in communication is within its wider band: a tie.
    p = _plan(_choice("plan", 1.0, 0.0), slow=_choice("slow", 1.0, 0.3, 1))
    assert [t["name"] for t in intervals.ties(p)] == ["slow"]


def test_the_existing_baseline_is_not_its_own_tie_twice():
    usp = _choice("dp2-usp2x2", 0.75, 0.3, 1)
    p = _plan(_choice("plan", 1.0, 0.0), **{"xdit-usp": usp, "existing": usp})
    assert [t["name"] for t in intervals.ties(p)] == ["xdit-usp"]
    # A runner-up that is a baseline's own pair is one tie, named by the baseline's tag.
    p.runners_up = [_choice("dp2-usp2x2", 0.75, 0.3, 1)]
    intervals.annotate(p, BANDS, intervals.POINT)
    assert [(t["name"], t["role"]) for t in intervals.ties(p)] == [("xdit-usp", "baseline")]


def test_plan_json_keeps_intervals_and_ties_and_the_schema_checks_them():
    p = _plan(_choice("plan", 1.0, 0.0), usp=_choice("usp", 0.75, 0.3, 1))
    d = p.to_dict()
    plan_schema.check(d)
    again = Plan.from_dict(d)
    assert again.uncertainty["ties"][0]["name"] == "usp"
    assert again.choice.extra["interval"]["forward"]["high_s"] == pytest.approx(1 / 0.9)
    bad = p.to_dict()
    bad["baselines"]["usp"]["extra"]["interval"]["forward"]["low_s"] = 2.0
    with pytest.raises(ValueError, match=r"baselines.usp.extra.interval.forward: low_s 2.0"):
        plan_schema.check(bad)
    bad = p.to_dict()
    bad["uncertainty"]["rule"] = "best"
    with pytest.raises(ValueError, match="uncertainty.rule"):
        plan_schema.check(bad)


def _printed(plan: Plan, width: int) -> list[str]:
    from rich.console import Console

    from aoizora import plan_summary

    out = io.StringIO()
    plan_summary.print_comparison(plan, Console(file=out, width=width))
    plan_summary.print_choice(plan, Console(file=out, width=width))
    return out.getvalue().splitlines()


def test_the_cli_table_shows_each_interval_and_marks_the_tie():
    p = _plan(_choice("plan", 1.0, 0.0), usp=_choice("usp", 0.75, 0.3, 1),
              slow=_choice("slow", 1.3, 0.0, 2))
    lines = _printed(p, 120)
    assert any("interval" in line for line in lines[:4])   # a column of the table
    usp = next(line for line in lines if line.startswith("usp"))
    slow = next(line for line in lines if line.startswith("slow"))
    assert usp.endswith("0.882-1.43 tie")
    assert slow.endswith("1.18-1.44")
    assert "Ties (intervals overlap): usp [882 ms, 1.43 s]" in " ".join(" ".join(lines).split())


def test_a_table_too_narrow_for_the_intervals_lists_them_beneath():
    p = _plan(_choice("plan", 1.0, 0.0), usp=_choice("usp", 0.75, 0.3, 1),
              slow=_choice("slow", 1.3, 0.0, 2))
    lines = _printed(p, 60)
    start = lines.index("interval (s / forward; tie: it overlaps the plan's):")
    assert [line.split() for line in lines[start + 1:start + 4]] == [
        ["AoiZora", "0.909-1.11"], ["usp", "0.882-1.43", "tie"], ["slow", "1.18-1.44"]]


def test_an_interval_in_microseconds_is_not_labelled_seconds():
    """duration picks the unit ("188 us"), so every label beside it says what the figure is
    per, never "seconds": the sentence, the report's column and its drawn section."""
    from aoizora.report import uncertainty

    p = _plan(_choice("plan", 150e-6, 200e-6), usp=_choice("usp", 100e-6, 300e-6, 1))
    said = intervals.sentence(p)
    assert said.startswith("Interval per forward: [") and " us, " in said, said
    assert "seconds" not in said
    html = uncertainty.section(p)
    assert "<th>per forward</th>" in html and "seconds per forward" not in html


def test_the_report_shows_intervals_and_ties():
    from aoizora.report import uncertainty

    p = _plan(_choice("plan", 1.0, 0.0), usp=_choice("usp", 0.75, 0.3, 1),
              slow=_choice("slow", 1.3, 0.0, 2))
    html = uncertainty.section(p)
    assert 'id="uncertainty"' in html
    usp = next(r for r in html.split("<tr>") if r.startswith("<td>usp"))
    slow = next(r for r in html.split("<tr>") if r.startswith("<td>slow"))
    assert "tie; differs most in communication" in usp and "tie" not in slow
    old = Plan.from_dict({k: v for k, v in p.to_dict().items() if k != "uncertainty"})
    assert uncertainty.section(old) == ""


def test_an_unbounded_high_end_is_null_in_plan_json_and_infinite_again_when_read(tmp_path):
    """A band of 100 % or more leaves a part any slower: the high end is infinite in memory,
    null in plan.json (strict JSON: no `Infinity` token that jq or a browser refuses), and
    infinite again when the plan is read; the schema takes the null."""
    wide = error_bands.Bands("v6e", error_bands.Band(1.2, error_bands.OWN, "ag"),
                             error_bands.Band(0.1, error_bands.OWN, "step"))
    p = Plan(model={"name": "m"}, workload={"video": "tiny", "frames": 9},
             topology={"name": "v6e:2x4", "generation": "v6e"}, choice=_choice("plan", 1.0, 0.2),
             baselines={"slow": _choice("slow", 1.0, 0.3, 1)})
    intervals.annotate(p, wide, intervals.POINT)
    assert p.choice.extra["interval"]["forward"]["high_s"] == float("inf")
    path = tmp_path / "plan.json"
    p.save(str(path))
    text = path.read_text()
    d = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in plan.json"))
    assert d["choice"]["extra"]["interval"]["forward"]["high_s"] is None
    assert d["uncertainty"]["ties"][0]["high_s"] is None       # the tie's interval too
    plan_schema.check(d)
    again = Plan.load(str(path))
    assert again.choice.extra["interval"]["forward"]["high_s"] == float("inf")
    assert [t["name"] for t in intervals.ties(again)] == ["slow"]

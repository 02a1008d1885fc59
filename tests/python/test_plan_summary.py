"""The plan on the terminal (plan_summary), drawn from shipped plans at 80 columns: every
row's label whole and unlike any other, the placement in words, "existing" named, a long
note once beneath the table, ties said and how they were broken (placement_ties); and
compare --json's speedup a number."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from aoizora import cli, plan_schema
from aoizora.errors import UserError
from aoizora.planning.placement_ties import q2_ties_not_simulated, tie_sentence, ties
from aoizora.plan_format import Choice
from aoizora.plan_summary import comparison_rows, print_choice, print_comparison

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests/data/plans/wan_tiny.v5e_2x2.json"
V6E = ROOT / "docs/results/v6e/wan-14b_v6e-2x4_720p-81f.plan.json"
SHIPPED = sorted((ROOT / "docs/results").glob("*/*.plan.json")) + \
    sorted((ROOT / "tests/data/plans").glob("*.json"))
WHY = ("Failed to find assignment for logical_axis_index 1 of size 2 in create_device_mesh "
       "for mesh shape (2, 2) on a 2x2 slice, physical_mesh (2, 2, 1)")


def _render(plan, width: int = 80) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    print_choice(plan, console)
    print_comparison(plan, console)
    return console.file.getvalue()


def _row_labels(text: str, rows: int) -> list[str]:
    """The label cell of each table row: what stands left of the first figure's column on
    the row's first line (the line that ends in its speedup), and its next lines' where the
    label goes on (a row's sharding may fold onto a second line too)."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("───"))
    head = lines[rule - 1]       # the header's last line: the label column's is empty
    col = len(head) - len(head.lstrip())
    body = lines[rule + 1:]
    labels: list[str] = []
    for line in body:
        if len(labels) == rows and not line[:col].strip().startswith("="):
            break
        # a row ends with its speedup, then its seconds per video where the plan has them,
        # then its interval where the table holds it
        if re.search(r"(\d\.\d{3}x|-)(\s+([\d.e+-]+|-))?"
                     r"(\s+([\d.]+-[\d.]+( P[\d.]+)?|-)( tie)?)?$", line.rstrip()):
            labels.append(line[:col].strip())
        elif labels and line[:col].strip():
            labels[-1] += " " + line[:col].strip()
    return labels


def _undeployable_plan():
    """The tiny plan with two baselines JAX's default order cannot lay out (one reason) and
    one whose sharding did not compile, as plans write them."""
    plan = plan_schema.load(str(TINY))
    for tag in ("xdit-usp", "maxdiffusion-data2-ulysses"):
        plan.baselines[tag].extra["no_default_order"] = WHY
    plan.planning["baselines_failed"] = {
        "wan-fsdp-ulysses": {"candidate": "uly4w", "why": "compile failed: RESOURCE_EXHAUSTED:"
                             " Ran out of memory in memory space vmem while allocating"}}
    del plan.baselines["wan-fsdp-ulysses"]
    return plan


# ---- the table at 80 columns ---------------------------------------------------------------

@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_at_80_columns_every_row_label_is_whole_and_unlike_the_others(path):
    plan = plan_schema.load(str(path))
    text = _render(plan)
    rows = comparison_rows(plan)
    labels = _row_labels(text, len(rows))
    assert len(labels) == len(rows), text
    assert len(set(labels)) == len(labels), labels
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    for label, row in zip(labels, rows):  # the tag whole, MaxDiffusion's shortened to md-
        assert label.split(" = ")[0].split(" [")[0] == row.tag.replace("maxdiffusion-", "md-")
    if any(r.tag.startswith("maxdiffusion-") for r in rows):
        assert "md-X: MaxDiffusion's recipe maxdiffusion-X" in text


def test_the_existing_row_says_which_recipe_it_is():
    text = _render(plan_schema.load(str(TINY)))
    labels = _row_labels(text, 9)
    assert labels[1] == "existing = xdit-usp"
    # the tpu7x-16 plans: the existing deployment is a MaxDiffusion recipe, named in full below
    plan = plan_schema.load(str(ROOT / "docs/results/tpu7x/wan-14b_tpu7x-2x2x2_480p-81f.plan.json"))
    text = _render(plan)
    assert _row_labels(text, len(comparison_rows(plan)))[1] == "existing = md-data2-ulysses"
    assert "existing = maxdiffusion-data2-ulysses: the fastest of the deployments" in text


def test_the_placement_is_said_in_words_beside_its_machine_name():
    text = " ".join(_render(plan_schema.load(str(V6E))).split())
    assert ("placement: context groups on 2x2 blocks, data across them (pairs 2 apart along "
            "y) (search(axes y2@2|x,y2@1))") in text


def test_a_long_reason_is_printed_once_beneath_the_table():
    plan = _undeployable_plan()
    text = _render(plan)
    rows = comparison_rows(plan)
    labels = _row_labels(text, len(rows))
    assert "md-data2-ulysses [1]" in labels and "xdit-usp [1]" in labels
    assert "wan-fsdp-ulysses [2]" in labels
    flat = " ".join(text.split())
    assert flat.count(WHY) == 1
    assert f"[1] not deployable with JAX's default order on this slice: {WHY}; shown on " \
           "AoiZora's best placement for its sharding" in flat
    assert "[2] not compared: compile failed: RESOURCE_EXHAUSTED" in flat
    table = text[:text.index("[1] not deployable")]
    assert "Failed" not in table and "RESOURCE" not in table
    # compare --json keeps each row's whole label, as the report does
    assert [r.label for r in rows if r.tag == "xdit-usp"] == [
        f"xdit-usp (not deployable with JAX's default order on this slice: {WHY}; shown on "
        "AoiZora's best placement for its sharding)"]


# ---- ties --------------------------------------------------------------------------------------

def _choice(placement: str, q2: float, sim: float, placements: list) -> Choice:
    return Choice("dp2-ring2", [2, 2], ["data", "context"], {}, placement,
                  [[0, 0, 0], [0, 1, 0], [1, 0, 0], [1, 1, 0]], q2_s=q2, simulated_s=sim,
                  extra={"placements": [{"name": n, "q2_s": q, "simulated_s": s}
                                        for n, q, s in placements]})


def test_ties_say_what_separated_each_from_the_choice():
    c = _choice("axes x|y", 1.0, 2.0, [
        ("axes x|y", 1.0, 2.0), ("row-major", 1.0, 2.0), ("snake yx", 1.000001, 2.0),
        ("snake xy", 1.0, 2.000004), ("default (v5e 2x2 ring)", 1.0, 2.1),
        ("axes y|x", 1.000002, None), ("tile-cycle", 1.5, None)])
    assert [(t.name, t.broken_by) for t in ties(c)] == [
        ("row-major", "name"), ("snake yx", "Q2"), ("snake xy", "simulated")]
    assert ties(c)[2].margin_s == pytest.approx(4e-6)
    assert q2_ties_not_simulated(c) == ["axes y|x"]
    said = tie_sentence(c)
    assert said.startswith("Tie: row-major, snake yx and snake xy simulate within 0.001% of "
                           "the chosen placement")
    for part in ("row-major: the same step and Q2, its name sorts after",
                 "snake yx: the same step, Q2 1 us more", "snake xy: 4 us slower",
                 "Ties go to the least simulated step, then the least Q2, then the first name",
                 "1 more listed placement has the chosen placement's Q2"):
        assert part in said, part


def test_a_placement_apart_by_more_than_the_resolution_is_no_tie():
    c = _choice("axes x|y", 1.0, 2.0, [("axes x|y", 1.0, 2.0), ("row-major", 1.0, 2.0001)])
    assert ties(c) == [] and tie_sentence(c) is None


def test_jax_default_order_is_not_a_tie_with_itself():
    c = _choice("jax-default", 1.0, 2.0, [("default (v5e 2x2 ring)", 1.0, 2.0)])
    assert tie_sentence(c) is None


def test_the_summary_says_the_tie_of_a_shipped_plan():
    # wan-tiny on v5e:2x2: axes x|y and row-major are the same step and Q2
    text = " ".join(_render(plan_schema.load(str(TINY))).split())
    assert ("Tie: row-major simulates within 0.001% of the chosen placement (row-major: the "
            "same step and Q2, its name sorts after)") in text
    plan = plan_schema.load(str(ROOT / "docs/results/tpu7x/wan-14b_tpu7x-2x2x1_480p-81f.plan.json"))
    assert "Tie" not in _render(plan)


# ---- compare --json -------------------------------------------------------------------------

def test_compare_json_gives_the_speedup_as_a_number(capsys):
    assert cli.main(["compare", "--plan", str(TINY), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    plan = plan_schema.load(str(TINY))
    assert rows[0]["speedup"] == 1.0
    for row in rows[1:]:
        assert isinstance(row["speedup"], float)
        assert row["speedup"] == pytest.approx(row["simulated_s"] / plan.choice.simulated_s)
    assert rows[1]["label"] == "existing"


# ---- every name whole at 80 and 120 columns -------------------------------------------------

def _drawn(plan):
    """The plan as if priced under joint draws: each baseline's speedup interval and P."""
    plan.uncertainty = {"ranked_by": (plan.uncertainty or {}).get(
                            "ranked_by", "seconds per forward"),
                        "ties": [], "draws": 100, "seed": 0, "generation": "v5e"}
    for i, b in enumerate(plan.baselines.values()):
        b.extra["speedup"] = {"low": 1.35 + i / 100, "high": 2.0, "median": 1.5,
                              "p_faster": 1.0, "tie": False}
    return plan


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_sharding_and_placement_is_whole_on_one_line(path, width):
    """rich folded a name too long for its cell (jax-defaul / t, ag8w-b512x51 / 2x512):
    each name now stands whole on one line, in the table or beneath it."""
    for drawn, plan in ((False, plan_schema.load(str(path))),
                        (True, _drawn(plan_schema.load(str(path))))):
        text = _render(plan, width)
        lines = text.splitlines()
        assert max(len(line) for line in lines) <= width, text
        assert "…" not in text and "..." not in text
        for r in comparison_rows(plan):
            for name in (r.sharding, r.placement):
                assert any(name in line for line in lines), (name, text)
        if drawn:   # the P(faster) column, or its lines beneath
            assert re.search(r"\d\.\d\d-2\.00 P1\.00", text), text
        elif "draws" in plan.uncertainty:   # a plan priced under draws: its own intervals
            assert re.search(r"\d\.\d\d-\d\.\d\d P[01]\.\d\d", text), text


def test_a_malformed_retry_record_is_refused(tmp_path):
    """planning.retries (the jobs a lost worker made run twice) is checked like the rest."""
    import json

    d = json.loads(SHIPPED[0].read_text())
    d["planning"]["retries"] = [{"job": "dp2-ag4", "why": 3}]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    with pytest.raises(UserError, match="planning.retries"):
        plan_schema.load(str(path))

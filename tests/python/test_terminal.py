"""Every command's human output at 80 and at 120 columns (terminal.py): no line over the
width, no number or name cut to "...", no word split across lines. Fast: shipped plans,
the compiled fixtures of tests/data/hlo and the published measurements; nothing is planned
or compiled. plan and compare print plan_summary (test_plan_summary.py checks its table's
cells at both widths); serve and plan-many are checked in test_serving.py and
test_plan_many.py."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

from aoizora import cli
from aoizora.terminal import fit_table, wrap
from conftest import assert_fits

ROOT = Path(__file__).resolve().parents[2]
HLO = sorted((ROOT / "tests/data/hlo").glob("*.v5e_2x4.hlo"))
SLICES = ["v5e:2x4", "v6e:4x4", "tpu7x:2x2x2", "v5p:2x2x2"]
WIDTHS = [80, 120]


def _words(text: str) -> set[str]:
    return set(text.split())


def _check(text: str, width: int, whole=()) -> None:
    assert_fits(text, width, whole)


def _out(argv, capsys, monkeypatch, width: int) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    assert cli.main(argv) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("hlo", HLO, ids=lambda p: p.name)
def test_inspect_rank_and_simulate_fit_the_width(hlo, width, capsys, monkeypatch):
    text = _out(["inspect", "--hlo", str(hlo)], capsys, monkeypatch, width)
    names = re.findall(r"^    \S+\s+(\S+):", text, re.M)
    assert names, text                  # every collective named whole on its line
    _check(text, width, names)
    text = _out(["rank", "--hlo", str(hlo), "--topology", "v5e:2x4", "--search-iterations",
                 "50"], capsys, monkeypatch, width)
    _check(text, width, ["(0,0,0)"])
    text = _out(["simulate", "--hlo", str(hlo), "--topology", "v5e:2x4"], capsys,
                monkeypatch, width)
    _check(text, width, [str(hlo)])


@pytest.mark.parametrize("width", WIDTHS)
def test_topology_basis_wraps_at_words(width, capsys, monkeypatch):
    """The basis line ran to 400 characters; wrapped, every field it names is whole."""
    from aoizora.hardware import field_basis

    for name in SLICES:
        text = _out(["topology", name], capsys, monkeypatch, width)
        basis = field_basis.of_profile(name.split(":")[0])
        _check(text, width, [f + "," for f in basis["nominal"][:-1]])
    _check(_out(["topology", "--list"], capsys, monkeypatch, width), width)


@pytest.mark.parametrize("width", WIDTHS)
def test_calibrate_fits_the_width(width, tmp_path, capsys, monkeypatch):
    from aoizora.hardware import measurements

    text = _out(["calibrate", str(measurements.PUBLISHED), "--base",
                 str(ROOT / "calibration" / "nominal" / "v4.json"), "-o",
                 str(tmp_path / "v4.json")], capsys, monkeypatch, width)
    _check(text, width, ["v4-2x2x1-psum-16KiB", "-41.5%"])
    assert re.search(r"; and \d+ more\)", text) or "not used" not in text


def test_a_table_narrows_its_wrapping_columns_and_keeps_every_word_whole():
    console = Console(width=40, file=io.StringIO(), color_system=None)
    t = Table()
    t.add_column("name", no_wrap=True)
    t.add_column("why")
    t.add_row("ag8w-b512x512x512", "a reason of several words that wraps")
    assert fit_table(t, console)
    console.print(t)
    text = console.file.getvalue()
    _check(text, 40, ["ag8w-b512x512x512"])
    assert _words(text) >= {"a", "reason", "several", "words", "wraps"}


def test_a_table_whose_words_cannot_fit_says_so():
    console = Console(width=20, file=io.StringIO(), color_system=None)
    t = Table()
    t.add_column("name")
    t.add_column("other")
    t.add_row("ag8w-b512x512x512", "dp2-uly4w-b9472x1024")
    assert not fit_table(t, console)
    assert [c.width for c in t.columns] == [None, None]


def test_wrap_never_breaks_a_word():
    lines = wrap("x " * 5 + "collective_latency.collective-broadcast", 20, "  ")
    assert lines[-1] == "    collective_latency.collective-broadcast"
    assert all(len(line) <= 20 for line in lines[:-1])


PLANS = sorted((ROOT / "docs/results").glob("*/*.plan.json")) + \
    sorted((ROOT / "tests/data/plans").glob("*.json"))


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_fits_the_width_for_every_shipped_plan(width, capsys, monkeypatch):
    """compare --plan as a user runs it (the table, its notes, seconds per video): what plan
    prints after planning, less the planning."""
    from aoizora import plan_schema
    from aoizora.plan_summary import comparison_rows

    for path in PLANS:
        text = _out(["compare", "--plan", str(path)], capsys, monkeypatch, width)
        rows = comparison_rows(plan_schema.load(str(path)))
        _check(text, width, [r.sharding for r in rows] + [r.placement for r in rows])


def test_the_width_is_columns_else_80_off_a_terminal(monkeypatch):
    """serve and plan-many drew 200 columns into a pipe or a file: every command takes one
    width now, COLUMNS where set."""
    from aoizora.terminal import width

    monkeypatch.setenv("COLUMNS", "97")
    assert width(io.StringIO()) == 97
    monkeypatch.delenv("COLUMNS")
    assert width(io.StringIO()) == 80

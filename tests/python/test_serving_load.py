"""Serving under load (serving/load.py, load_table.py, load_chart.py and `serve --rate`): the
configurations' figures from their rows, the cheapest one within a p99 bound and why, rows
not simulated and why, the table at 80 columns, `serve --json`'s "load", the chart, and bad
input in one line before any work."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from aoizora.serving import arrivals, load, prices
from aoizora.serving.frontier import Row

TABLE = prices.PriceTable("t", {"v5e": prices.Price(1.2, "2026-01-27", "s"),
                                "v6e": prices.Price(2.7, "2024-12-12", "s")})

# One 16-chip v5e slice in three splits and one 8-chip v6e slice: seconds per video at
# batch 1. Capacities per hour: 1 x 4x4: 3600 / 20 = 180; 4 x 2x2: 4 x 3600 / 60 = 240;
# 16 x 1x1: 16 x 3600 / 400 = 144; v6e 1 x 2x4: 3600 / 30 = 120.
ROWS = [Row("v5e:4x4", "1 x 4x4", 1, 16, 1, 20.0, 180.0, 0.1),
        Row("v5e:4x4", "4 x 2x2", 4, 16, 1, 60.0, 240.0, 0.08),
        Row("v5e:4x4", "16 x 1x1", 16, 16, 1, 400.0, 144.0, 0.13),
        Row("v6e:2x4", "1 x 2x4", 1, 8, 1, 30.0, 120.0, 0.18),
        Row("v5e:4x4", "2 x 2x4", 2, 16, 1, None, None, None, priced=False,
            why_not="no plan on v5e:2x4: no sharding fits")]


def _stream(rate: float, n: int = 20_000, warmup: int = 2_000) -> load.Load:
    return load.Load(rate, arrivals.poisson(rate, n, 11), "poisson", warmup, 11)


def _by_split(rows):
    return {(r.topology, r.split): r for r in rows}


def test_each_configuration_is_simulated_from_its_own_seconds_per_video():
    got = _by_split(load.under_load(ROWS, _stream(60.0), TABLE))
    whole = got["v5e:4x4", "1 x 4x4"]
    assert whole.capacity_per_hour == pytest.approx(180.0) and whole.stable
    assert whole.utilisation == pytest.approx(60 / 180, rel=0.05)
    assert whole.p50_s >= 20.0 and whole.p99_s > whole.p90_s > whole.p50_s
    # Sixteen replicas at a quarter of their capacity: a request almost never waits.
    slow = got["v5e:4x4", "16 x 1x1"]
    assert slow.p50_s == pytest.approx(400.0) and slow.mean_wait_s < 1.0
    # Every chip of the slice paid for the hour, over the 60 requests of that hour.
    assert whole.usd_per_video == pytest.approx(16 * 1.2 / 60)
    assert got["v6e:2x4", "1 x 2x4"].usd_per_video == pytest.approx(8 * 2.7 / 60)
    unplanned = got["v5e:4x4", "2 x 2x4"]
    assert unplanned.p99_s is None and unplanned.why_not.startswith("no plan on v5e:2x4")


def test_over_its_capacity_a_configuration_is_overloaded_and_never_picked():
    rows = load.under_load(ROWS, _stream(200.0), TABLE)
    by = _by_split(rows)
    assert not by["v5e:4x4", "1 x 4x4"].stable and by["v5e:4x4", "4 x 2x2"].stable
    p = load.pick(rows, 10_000.0)
    assert p.row is by["v5e:4x4", "4 x 2x2"]     # the only one that keeps up


def test_the_pick_is_the_cheapest_within_the_bound_and_says_why():
    rows = load.under_load(ROWS, _stream(60.0), TABLE)
    by = _by_split(rows)
    # The v6e slice (8 x 2.7 = 21.6 USD an hour) costs more than the v5e one (19.2).
    # On v5e every split costs the same per video; the lowest p99 wins.
    p = load.pick(rows, 1_000.0)
    assert p.row is by["v5e:4x4", "1 x 4x4"]
    assert "the cheapest per video of the 4 configurations that meet it" in p.why
    assert "2 more cost the same" in p.why
    # A smaller slice, cheaper per video at this rate (4 x 1.2 USD an hour over 60), two
    # thirds busy: its tail is over a bound of 100 s, the whole v5e:4x4's is not.
    small = Row("v5e:2x2", "1 x 2x2", 1, 4, 1, 40.0, 90.0, 0.05)
    rows = load.under_load(ROWS + [small], _stream(60.0), TABLE)
    p = load.pick(rows, 100.0)
    assert p.row.split == "1 x 4x4" and "of the 2 configurations that meet it" in p.why
    assert "1 x 2x2 on v5e:2x2 at batch 1 would cost 0.08 USD per video but its p99 is" \
        in p.why
    assert load.pick(rows, 1_000.0).row.topology == "v5e:2x2"


def test_a_bound_nothing_meets_says_the_lowest_p99():
    rows = load.under_load(ROWS, _stream(60.0), TABLE)
    p = load.pick(rows, 1.0)
    assert p.row is None and p.why.startswith("no configuration meets p99 <= 1 s: the lowest "
                                              "p99, 1 x 4x4 on v5e:4x4 at batch 1, is")


def test_a_batch_without_its_smaller_sizes_priced_is_not_simulated():
    at_two = Row("v5e:4x4", "1 x 4x4", 1, 16, 2, 30.0, 240.0, 0.08)   # batch 2 alone
    got = load.under_load([at_two], _stream(60.0), TABLE)[0]
    assert got.p99_s is None and got.why_not.startswith(
        "seconds per call at batch 1 not priced")
    # With batch 1 of the same split priced too, batch 2 runs, on both figures.
    both = load.under_load([ROWS[0], at_two], _stream(200.0), TABLE)
    assert both[1].p99_s is not None and both[1].stable and not both[0].stable
    assert 1.0 < both[1].mean_batch <= 2.0


def test_the_table_fits_80_columns_with_the_pick():
    from rich.console import Console

    from aoizora.serving import load_table
    from conftest import assert_fits

    stream = _stream(60.0)
    rows = load.under_load(ROWS, stream, TABLE)
    chosen = load.pick(rows, 1_000.0)
    console = Console(file=io.StringIO(), width=80)
    text = "\n".join(load_table.lines(rows, stream, chosen, 1_000.0, console))
    assert_fits(text, 80, ["180.0", "16 x 1x1", "meets"])
    assert "(simulated)" in " ".join(text.split())
    assert "pick (--p99 1000 s): 1 x 4x4 on v5e:4x4 at batch 1" in " ".join(text.split())
    assert "not simulated: 2 x 2x4 on v5e:4x4 at batch 1: no plan" in " ".join(text.split())


def test_the_load_chart_draws_p99_rising_with_the_rate(tmp_path):
    from aoizora.serving import load_chart

    stream = _stream(60.0, n=4_000, warmup=400)
    path = tmp_path / "load.png"
    drawn = load_chart.draw(ROWS, stream, TABLE, str(path), "test", bound_s=100.0)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert set(drawn) == {"v5e:4x4 1 x 4x4 B=1", "v5e:4x4 4 x 2x2 B=1",
                          "v5e:4x4 16 x 1x1 B=1", "v6e:2x4 1 x 2x4 B=1"}
    for label, pts in drawn.items():
        p99 = [p for _, p in pts]
        assert p99 == sorted(p99), label          # one stream, gaps scaled: monotone
    capacity = {"v6e:2x4 1 x 2x4 B=1": 120.0, "v5e:4x4 4 x 2x2 B=1": 240.0}
    for label, cap in capacity.items():
        assert max(rate for rate, _ in drawn[label]) < cap


# ---- the command ------------------------------------------------------------------------

@pytest.fixture
def fake_survey(monkeypatch):
    from aoizora.serving import survey

    def fake(request, settings, progress_for, log):
        return SimpleNamespace(rows=ROWS, notes=[], replicas={})

    monkeypatch.setattr(survey, "survey", fake)


def _serve_here(capsys, *args):
    from aoizora import cli

    rc = cli.main(["serve", "--no-cache", "--quiet", "--prices", prices.SHIPPED, *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_serve_rate_prints_the_load_table_and_the_pick(fake_survey, capsys, monkeypatch):
    from conftest import assert_fits

    monkeypatch.setenv("COLUMNS", "80")
    rc, out, _ = _serve_here(capsys, "--rate", "60/h", "--p99", "1000", "--requests", "5000")
    assert rc == 0, out
    assert_fits(out, 80)
    flat = " ".join(out.split())
    assert "under load: 60 requests per hour (Poisson, seed 0), 4,500 requests measured " \
           "after 500 warm-up" in flat
    assert "pick (--p99 1000 s): 1 x 4x4 on v5e:4x4 at batch 1" in flat
    rc, out, _ = _serve_here(capsys, "--rate", "60/h", "--p99", "1", "--requests", "5000")
    assert rc == 1 and "no configuration meets p99 <= 1 s" in " ".join(out.split())


def test_serve_json_carries_the_load(fake_survey, capsys, tmp_path):
    trace = tmp_path / "arrivals.csv"
    trace.write_text("\n".join(str(60.0 * k) for k in range(300)))
    rc, out, _ = _serve_here(capsys, "--arrivals", str(trace), "--p99", "1000", "--json")
    doc = json.loads(out)["load"]
    assert rc == 0 and doc["arrivals"] == str(trace) and doc["seed"] is None
    assert doc["rate_per_hour"] == pytest.approx(60.0) and doc["warmup"] == 30
    assert doc["requests"] == 270 and len(doc["rows"]) == len(ROWS)
    assert doc["pick"]["row"]["split"] == "1 x 4x4" and "simulated" in doc["note"]
    # One arrival a minute, 20 s a call: nobody waits on the whole slice.
    whole = next(r for r in doc["rows"] if r["split"] == "1 x 4x4")
    assert whole["p99_s"] == pytest.approx(20.0) and whole["mean_wait_s"] == 0.0


def _serve(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "aoizora.cli", "serve", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, message", [
    (["--rate", "0"], "--rate '0': the rate must be a number > 0"),
    (["--rate=-5/h"], "--rate '-5/h': the rate must be a number > 0"),
    (["--p99", "60"], "--p99 needs --rate R/h"),
    (["--arrivals", "BAD"], "--arrivals BAD"),
    (["--rate", "30/h", "--warmup", "20000"], "--warmup 20000: leaves fewer than 2"),
])
def test_bad_load_input_is_one_line_and_exit_2(args, message, tmp_path):
    if "BAD" in args:
        bad = tmp_path / "bad.csv"
        bad.write_text("0\n5\n3\n")
        args = [str(bad) if a == "BAD" else a for a in args]
        message = f"--arrivals {bad}: line 3: 3 s comes before the line above (5 s)"
    r = _serve(*args)
    assert r.returncode == 2, r.stderr
    lines = [line for line in r.stderr.splitlines() if "error" in line]
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert "serve: [" not in r.stderr   # nothing was planned


def test_a_trace_sets_its_own_rate_and_length(tmp_path):
    from aoizora.errors import UserError

    trace = tmp_path / "a.csv"
    trace.write_text("\n".join(str(10.0 * k) for k in range(50)))      # 360 an hour
    with pytest.raises(UserError, match=r"^--rate and --arrivals .*: the trace sets the rate"):
        load.stream("30/h", str(trace), None, None)
    with pytest.raises(UserError, match=r"^--requests 60: the trace .* has 50 arrivals"):
        load.stream(None, str(trace), 60, None)
    got = load.stream(None, str(trace), 20, 5)
    assert got.rate_per_hour == pytest.approx(360.0) and got.requests == 15
    assert got.arrivals_s.tolist() == [10.0 * k for k in range(20)]

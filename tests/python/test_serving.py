"""aoizora serve (serving/): the splits of a slice into replicas and which may be priced apart,
the price table and a user's replacing it, the frontier and the pick under a latency bound on
hand-made figures, the units of videos per hour and cost per video, the one-line refusals,
and one survey end to end on the tiny Wan."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from types import SimpleNamespace

import pytest

from aoizora.errors import UserError
from aoizora.serving import frontier, prices, splits, survey
from aoizora.serving.frontier import Row


def _names(slice_name: str) -> dict[str, splits.Split]:
    return {s.name: s for s in splits.enumerate_splits(slice_name)}


def _chips_of(s: splits.Split) -> list[tuple[int, int, int]]:
    bx, by, bz = s.replica_dims
    return [(ox + x, oy + y, oz + z) for ox, oy, oz in s.origins
            for z in range(bz) for y in range(by) for x in range(bx)]


# ---- splits ------------------------------------------------------------------------------

def test_v5e_4x4_splits_into_1_2_4_and_16_replicas_in_both_orientations():
    got = _names("v5e:4x4")
    assert list(got) == ["1 x 4x4", "2 x 2x4", "2 x 4x2", "4 x 2x2", "16 x 1x1"]
    assert got["2 x 2x4"].origins == ((0, 0, 0), (2, 0, 0))
    assert got["2 x 4x2"].origins == ((0, 0, 0), (0, 2, 0))
    # The 4x2 box is v5e:2x4 transposed (v5e:4x2 is no catalog slice), and says so.
    assert got["2 x 4x2"].planned_as == got["2 x 2x4"].planned_as == "v5e:2x4"
    assert got["2 x 4x2"].transposed and not got["2 x 2x4"].transposed
    assert got["2 x 4x2"].describe() == "2 x 4x2 (as v5e:2x4)"
    assert got["4 x 2x2"].planned_as == "v5e:2x2" and got["16 x 1x1"].planned_as == "v5e:1x1"


@pytest.mark.parametrize("slice_name", ["v5e:4x4", "v6e:2x4", "tpu7x:2x2x2", "v5p:4x4x4"])
def test_every_split_covers_every_chip_once(slice_name):
    for s in splits.enumerate_splits(slice_name):
        chips = _chips_of(s)
        assert len(chips) == len(set(chips)) == s.replicas * s.chips_per_replica
        assert all(c < d for chip in chips for c, d in zip(chip, s.slice_dims)), s.name
        assert s.replicas * s.chips_per_replica == math.prod(s.slice_dims)


def test_tpu7x_replicas_are_whole_chips_planned_as_catalog_slices():
    got = _names("tpu7x:2x2x2")
    assert list(got) == ["1 x 2x2x2", "2 x 1x2x2", "2 x 2x1x2", "2 x 2x2x1", "8 x 1x1x1"]
    assert {got[n].planned_as for n in ("2 x 1x2x2", "2 x 2x1x2", "2 x 2x2x1")} == {
        "tpu7x:2x2x1"}
    assert got["8 x 1x1x1"].planned_as == "tpu7x:1x1x1"   # one chip: both of its cores


def test_splits_of_slices_without_wraparound_are_priced_apart():
    for name in ("v5e:4x4", "v6e:2x4", "tpu7x:2x2x2"):
        for s in splits.enumerate_splits(name):
            assert not s.shares_links, (name, s.name, s.why)


def test_a_split_that_cuts_a_wraparound_axis_is_not_priced_apart():
    v5p = _names("v5p:4x4x4")   # a torus: every axis wraps
    assert [n for n, s in v5p.items() if not s.shares_links] == ["1 x 4x4x4"]
    assert "wraps along x" in v5p["2 x 2x4x4"].why
    v5e = _names("v5e:16x16")   # v5e wraps an axis of 16
    assert v5e["2 x 8x16"].shares_links and "along x" in v5e["2 x 8x16"].why
    assert v5e["2 x 16x8"].shares_links and "along y" in v5e["2 x 16x8"].why


def test_a_topology_that_is_no_catalog_slice_is_refused_with_a_guess():
    with pytest.raises(UserError, match=r"'v5e:3x3'.*catalog slices only.*did you mean"):
        splits.enumerate_splits("v5e:3x3")


# ---- prices ------------------------------------------------------------------------------

def test_every_shipped_figure_has_a_source_and_a_date():
    table = prices.load()
    assert table.prices, "the shipped table has no figure"
    for gen, p in table.prices.items():
        assert p.source.startswith("https://") and p.date[:2] == "20", gen
        assert p.usd_per_chip_hour > 0
    # A generation without a public figure says so instead of a guess.
    assert table.usd_per_chip_hour("tpu7x") is None and "found" in table.why_missing("tpu7x")


def _write(tmp_path, d, name="prices.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(d))
    return str(path)


def _user_table(**entries):
    return {"schema": prices.SCHEMA, "currency": "USD", "prices": entries}


def test_a_user_file_replaces_the_shipped_table_whole(tmp_path):
    path = _write(tmp_path, _user_table(v5e={"usd_per_chip_hour": 1.5, "date": "2026-01-02",
                                             "source": "our contract"}))
    table = prices.load(path)
    assert table.usd_per_chip_hour("v5e") == 1.5
    assert table.usd_per_chip_hour("v6e") is None   # shipped, but not in the user's file
    assert path in table.why_missing("v6e")


@pytest.mark.parametrize("entry, message", [
    ({"v9z": {"usd_per_chip_hour": 1.0, "date": "2026-01-01", "source": "x"}},
     r"unknown generation 'v9z'"),
    ({"v6": {"usd_per_chip_hour": 1.0, "date": "2026-01-01", "source": "x"}},
     r"unknown generation 'v6': did you mean 'v6e'"),
    ({"v5e": {"usd_per_chip_hour": -1.0, "date": "2026-01-01", "source": "x"}},
     r"prices.v5e.usd_per_chip_hour must be a number > 0"),
    ({"v5e": {"usd_per_chip_hour": 1.0, "source": "x"}}, r"prices.v5e needs a 'date'"),
    ({"v5e": {"usd_per_chip_hour": 1.0, "date": "May 2026", "source": "x"}},
     r"prices.v5e.date must be YYYY-MM-DD"),
    ({"v5e": {"usd_per_hour": 1.0, "date": "2026-01-01", "source": "x"}},
     r"unknown field 'usd_per_hour'"),
])
def test_a_bad_price_file_is_refused_naming_the_field(tmp_path, entry, message):
    path = _write(tmp_path, _user_table(**entry))
    with pytest.raises(UserError, match=message) as e:
        prices.load(path)
    assert str(e.value).startswith(f"--prices {path}: ") and "\n" not in str(e.value)


@pytest.mark.parametrize("doc,said", [
    ({"v5e": 1.2}, "a JSON object without a 'schema' key (keys: v5e)"),
    ({"schema": "aoizora.plan/1", "choice": {}}, "a file of schema 'aoizora.plan/1'"),
    ({"traceEvents": []}, "a Perfetto/Chrome trace (traceEvents)"),
])
def test_a_file_that_is_not_a_price_table_is_said_for_what_it_is(tmp_path, doc, said):
    with pytest.raises(UserError) as e:
        prices.load(_write(tmp_path, doc))
    assert str(e.value).endswith("not a price table (schema aoizora.prices/1, as "
                                 f"serving/prices.json): {said}")


# ---- the frontier and the pick, on hand-made figures ---------------------------------------

def _row(split, latency_s, vph, usd, **kw) -> Row:
    return Row("v5e:4x4", split, 1, 16, 1, latency_s, vph, usd, **kw)


FAST = _row("fast", 1.5, 1000.0, 0.05)
A = _row("a", 2.0, 1800.0, 0.02)
BIG = _row("big", 2.2, 2000.0, 0.03)      # more videos than A, each dearer
WIDE = _row("wide", 3.0, 4800.0, 0.01)
SLOWER_AND_WORSE = _row("dominated", 3.5, 4000.0, 0.015)   # WIDE beats it on both
SHARED = _row("shared", 0.5, 99999.0, 0.001, priced=False, why_not="not priced: ...")
ROWS = [FAST, A, BIG, WIDE, SLOWER_AND_WORSE, SHARED]


def test_the_frontier_drops_a_dominated_split_and_an_unpriced_one():
    assert frontier.frontier(ROWS, "throughput") == [FAST, A, BIG, WIDE]
    # Against cost BIG is dominated by A (faster and cheaper per video).
    assert frontier.frontier(ROWS, "cost") == [FAST, A, WIDE]


def test_a_row_without_a_price_is_on_no_cost_frontier():
    unpriced = _row("no-price", 1.0, 500.0, None)
    assert unpriced in frontier.frontier(ROWS + [unpriced], "throughput")
    assert unpriced not in frontier.frontier(ROWS + [unpriced], "cost")


def test_the_pick_keeps_the_bound_and_follows_the_objective():
    p = frontier.pick(ROWS, 2.5, "throughput")
    assert p.row is BIG            # WIDE serves more but takes 3 s; SHARED is not priced
    assert "2,000 videos per hour" in p.why
    assert "of the 3 splits that meet it" in p.why    # FAST, A, BIG: not the unpriced SHARED
    assert "wide on v5e:4x4 would give 4,800 videos per hour" in p.why and "takes 3 s" in p.why
    assert frontier.pick(ROWS, 2.5, "cost").row is A    # cheaper per video than BIG
    assert frontier.pick(ROWS, 10.0, "throughput").row is WIDE
    assert frontier.pick(ROWS, 2.0, "throughput").row is A    # the bound is inclusive


def test_a_pick_without_a_bound_weighs_every_split():
    p = frontier.pick(ROWS, None, "cost")
    assert p.row is WIDE and "no latency bound" in p.why and "would give" not in p.why
    assert "the lowest cost per video of the 5 splits with figures" in p.why
    assert frontier.pick(ROWS, None, "throughput").row is WIDE   # SHARED is not priced


def test_the_chart_draws_each_slice_with_its_own_frontier_and_skips_unpriced_rows(tmp_path):
    from aoizora.serving import chart

    other = Row("v6e:2x4", "1 x 2x4", 1, 8, 1, 1.0, 3000.0, None)   # no price: left panel only
    path = tmp_path / "frontier.png"
    drawn = chart.draw(ROWS + [other], str(path), "test")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert set(drawn) == {"v5e:4x4", "v6e:2x4"}       # SHARED (not priced) is not drawn
    v5e = {p[3]: p for p in drawn["v5e:4x4"]}
    assert list(v5e) == ["fast", "a", "big", "wide", "dominated"]   # by latency
    # The frontiers are over every slice given: v6e's 1 s, 3,000 videos an hour beats FAST,
    # A and BIG on throughput; on cost it has no price, so v5e's own cost frontier stands.
    assert [name for name, p in v5e.items() if p[4]] == ["wide"]
    assert [name for name, p in v5e.items() if p[5]] == ["fast", "a", "wide"]
    assert drawn["v6e:2x4"] == [(1.0, 3000.0, None, "1 x 2x4", True, False)]


def test_the_chart_reads_back_the_rows_of_serve_json():
    from dataclasses import asdict

    from aoizora.serving import chart

    assert chart.rows_from_json({"rows": [asdict(r) for r in ROWS]}) == ROWS


def test_a_bound_nothing_meets_says_what_the_fastest_takes():
    p = frontier.pick(ROWS, 1.0, "throughput")
    assert p.row is None
    assert p.why == ("no split meets the latency bound of 1 s: the fastest, fast on v5e:4x4, "
                     "takes 1.5 s per video")


def test_videos_per_hour_and_cost_per_video_count_every_chip_of_the_slice():
    two = _names("v6e:2x4")["2 x 2x2"]
    table = prices.PriceTable("t", {"v6e": prices.Price(2.7, "2024-12-12", "s")})
    request = survey.Request("wan-tiny", "tiny", None, ("v6e:2x4",), table)
    row = survey.row_of(request, two, 1, survey.ReplicaPlan("v6e:2x2", 3.0, "video", "p @ q"))
    assert row.videos_per_hour == pytest.approx(2 * 3600 / 3.0)          # 2400 per hour
    # 8 chips x 2.7 USD an hour, over 2400 videos in that hour.
    assert row.usd_per_video == pytest.approx(8 * 2.7 / 2400)            # 0.009 USD
    assert row.priced and row.plan == "p @ q"


def test_seconds_per_video_prefers_the_plans_own_whole_video_figure():
    choice = SimpleNamespace(simulated_s=0.1)
    whole = SimpleNamespace(choice=choice, video={"seconds": 4.2, "steps": 40})
    assert survey.seconds_per_video(whole, 30) == (4.2, "video: text encoder, 40 steps, VAE "
                                                        "decode, reshards")
    bare = SimpleNamespace(choice=choice, video={"not_priced": "not asked"})
    seconds, scope = survey.seconds_per_video(bare, 30)
    assert seconds == pytest.approx(3.0) and scope.startswith("transformer steps only")


def test_a_split_that_could_share_links_is_not_priced_apart():
    cut = _names("v5p:4x4x4")["2 x 2x4x4"]
    request = survey.Request("wan-tiny", "tiny", None, ("v5p:4x4x4",), prices.load())
    planned = survey.ReplicaPlan("v5p:2x4x4", 3.0, "video", "p @ q", step_s=0.1, steps=30)
    row = survey.row_of(request, cut, 1, planned)   # a plan, but not simulated together
    assert not row.priced and row.latency_s is None and row.pricing == ""
    assert row.why_not.startswith("not priced: replicas could share links and were not "
                                  "simulated together: the slice wraps along x")


def test_a_split_priced_apart_says_why_in_its_row():
    request = survey.Request("wan-tiny", "tiny", None, ("v5e:4x4",), prices.load())
    planned = survey.ReplicaPlan("v5e:2x4", 3.0, "video", "p @ q", step_s=0.1, steps=30)
    row = survey.row_of(request, _names("v5e:4x4")["2 x 2x4"], 1, planned)
    assert row.priced and row.latency_s == 3.0
    assert row.pricing.startswith("apart: disjoint boxes, no wraparound along x")
    whole = survey.row_of(request, _names("v5e:4x4")["1 x 4x4"], 1,
                          survey.ReplicaPlan("v5e:4x4", 2.0, "video", "p @ q"))
    assert whole.pricing == "alone: one replica: the whole slice"


# ---- the command's refusals, before any work -----------------------------------------------

def _serve(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "aoizora.cli", "serve", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, message", [
    (["--batch", "0"], "--batch 0: videos per call must be a whole number >= 1"),
    (["--batch", "1,x"], "--batch '1,x': expected whole numbers"),
    (["--topology", "v5e:4x4,v5e:3x3"], "--topology 'v5e:3x3': serve splits catalog slices"),
    (["--objective", "cost", "--latency-bound", "3", "--topology", "tpu7x:2x2x1"],
     "--objective cost: the price table"),
    (["--model", "wan-tiny", "--video", "tiny", "--frames", "21"], "--frames 21"),
    (["--chart", "/proc"], "--chart /proc: is a folder"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    r = _serve(*args)
    assert r.returncode == 2, r.stderr
    lines = [line for line in r.stderr.splitlines() if "error" in line]
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert "serve: [" not in r.stderr   # nothing was planned


@pytest.fixture
def fake_survey(monkeypatch):
    """serve's survey replaced by one that reports progress and returns ROWS: the requests
    it was given, in order."""
    from aoizora.serving import survey as survey_module

    asked = []

    def fake(request, settings, progress_for, log):
        asked.append(request)
        log("[1/1] planning a replica on v5e:2x4")
        with progress_for("v5e:2x4") as progress:
            progress.phase("Stage 1", 1)
            progress.note("planning")
        return SimpleNamespace(rows=ROWS, notes=[], replicas={})

    monkeypatch.setattr(survey_module, "survey", fake)
    return asked


def _serve_here(capsys, *args):
    from aoizora import cli

    rc = cli.main(["serve", "--no-cache", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_an_objective_without_a_bound_still_picks(fake_survey, capsys):
    rc, out, _ = _serve_here(capsys, "--objective", "cost")
    pick = [line for line in out.splitlines() if line.startswith("pick")]
    assert rc == 0 and len(pick) == 1, out
    assert pick[0].startswith("pick (no --latency-bound, --objective cost): wide on v5e:4x4")
    rc, out, _ = _serve_here(capsys)           # neither asked: the table alone
    assert rc == 0 and "pick" not in out


def test_serve_defaults_to_plans_slice_and_is_quiet_when_asked(fake_survey, capsys):
    from aoizora.commands.plan import DEFAULTS as PLAN

    rc, _, err = _serve_here(capsys, "--quiet")
    assert rc == 0 and err == ""
    assert fake_survey[0].topologies == (PLAN["topology"],)
    rc, _, err = _serve_here(capsys)
    assert rc == 0 and "planning a replica" in err


def test_an_unknown_generation_in_a_user_price_file_is_refused(tmp_path):
    path = _write(tmp_path, _user_table(v9z={"usd_per_chip_hour": 1.0, "date": "2026-01-01",
                                            "source": "x"}))
    r = _serve("--prices", path)
    assert r.returncode == 2 and "unknown generation 'v9z'" in r.stderr


# ---- end to end on the tiny Wan ------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_survey(tmp_path_factory):
    from aoizora.compile.cache import Cache
    from aoizora.planning.planner import Settings

    settings = Settings(top_k=1, workers=1, compile_target="cpu",
                        cache=Cache(str(tmp_path_factory.mktemp("cache"))))
    request = survey.Request("wan-tiny", "tiny", None, ("v5e:2x2",), prices.load())
    return survey.survey(request, settings), settings


def test_a_survey_prices_each_split_from_its_own_replicas_plan(tiny_survey):
    from aoizora.planning.planner import plan

    result, settings = tiny_survey
    rows = {r.split: r for r in result.rows}
    assert list(rows) == ["1 x 2x2", "4 x 1x1"]
    # Each row's latency is its replica shape's own plan (from the cache now), per video.
    for split, shape, replicas in (("1 x 2x2", "v5e:2x2", 1), ("4 x 1x1", "v5e:1x1", 4)):
        alone = plan("wan-tiny", "tiny", None, shape, settings).plan
        seconds, _ = survey.seconds_per_video(alone, 30)
        assert rows[split].latency_s == pytest.approx(seconds)
        assert rows[split].videos_per_hour == pytest.approx(replicas * 3600 / seconds)
        assert rows[split].plan == f"{alone.choice.candidate} @ {alone.choice.placement}"
    # All 4 chips for the hour that makes its videos, at the shipped v5e price.
    v5e = prices.load().usd_per_chip_hour("v5e")
    assert rows["4 x 1x1"].usd_per_video == pytest.approx(4 * v5e / rows["4 x 1x1"].videos_per_hour)
    assert not any(n.startswith("v5e: no cost per video") for n in result.notes)


def test_a_replica_plans_program_runs_together_on_a_wrapped_slice_as_alone(tiny_survey):
    # The plan's own graph and device order (from the cache now), copied into the 64 boxes
    # of 2x2 of a v5e:16x16 (it wraps both axes): at most half of each axis, so as alone.
    from aoizora import _core

    _, settings = tiny_survey
    request = survey.Request("wan-tiny", "tiny", None, ("v5e:16x16",), prices.load())
    replica, program = survey.plan_replica(request, "v5e:2x2", settings)
    assert replica.step_s == program.step_s and replica.steps >= 1
    alone = _core.simulate(program.graph, program.topology, list(program.device_of))
    assert alone.step_seconds == pytest.approx(program.step_s, rel=1e-9)
    s = _names("v5e:16x16")["64 x 2x2"]
    run = survey.simulate_together(s, program, _core.make_topology("v5e:16x16"))
    assert len(run.seconds) == 64
    assert run.slowest == pytest.approx(program.step_s, rel=1e-9)
    row = survey.row_of(request, s, 1, replica, run)
    assert row.priced and row.latency_s == pytest.approx(replica.latency_s, rel=1e-9)


def test_a_split_carries_its_plans_interval_across_the_joint_draws():
    """A replica plan with joint draws gives its split's latency the plan's 90 % interval,
    relative to its own figure (scaled with the latency); one without draws gives none."""
    choice = SimpleNamespace(simulated_s=0.1, extra={"interval": {
        "video": {"point_s": 4.0, "low_s": 3.0, "high_s": 6.0},
        "forward": {"point_s": 0.1, "low_s": 0.09, "high_s": 0.12}}})
    drawn = SimpleNamespace(choice=choice, uncertainty={"draws": 100})
    assert survey._relative_interval(drawn, "video") == (0.75, 1.5)
    assert survey._relative_interval(drawn, "transformer steps only") == pytest.approx(
        (0.9, 1.2))
    assert survey._relative_interval(SimpleNamespace(choice=choice, uncertainty={
        "bands": {}}), "video") is None
    request = survey.Request("wan-tiny", "tiny", None, ("v5e:4x4",), prices.load())
    planned = survey.ReplicaPlan("v5e:2x4", 3.0, "video", "p @ q", step_s=0.1, steps=30,
                                 relative_interval=(0.75, 1.5))
    row = survey.row_of(request, _names("v5e:4x4")["2 x 2x4"], 1, planned)
    assert row.latency_interval_s == (2.25, 4.5)


# ---- the table at 80 and 120 columns (terminal.py) -------------------------------------------

def _shipped_survey():
    """serve's rows for wan2.1-t2v-1.3b on v5e:4x4 and v6e:2x4 from the shipped plans of
    v5e:2x4 and v5e:2x2 (with a 90 % interval), every other replica shape not planned:
    nothing is planned or compiled."""
    from pathlib import Path

    from aoizora import plan_schema

    results = Path(__file__).resolve().parents[2] / "docs/results/maxdiffusion"
    request = survey.Request("wan2.1-t2v-1.3b", "480p", 21, ("v5e:4x4", "v6e:2x4"),
                             prices.load(None))
    by_slice = survey.check(request)
    replicas = {}
    for shape in ("v5e:2x4", "v5e:2x2"):
        plan = plan_schema.load(str(results / f"wan-1.3b_{shape.replace(':', '-')}_480p-21f"
                                     ".plan.json"))
        seconds, scope = survey.seconds_per_video(plan, 30)
        c = plan.choice
        replicas[shape] = survey.ReplicaPlan(shape, seconds, scope,
                                             f"{c.candidate} @ {c.placement}",
                                             step_s=c.simulated_s, steps=30,
                                             relative_interval=(0.71, 1.69))
    rows = [survey.row_of(request, s, 1, replicas.get(s.planned_as))
            for ss in by_slice.values() for s in ss]
    return request, survey.Survey(rows, by_slice, replicas,
                                  survey._notes(request, by_slice, replicas))


@pytest.mark.parametrize("width", [80, 120])
def test_the_survey_fits_the_terminal_with_every_figure_whole(width, monkeypatch):
    """rich cut figures and names to fit 80 columns (0.000..., 12,89...): each is whole on a
    line now, in the table or beneath it."""
    import io

    from aoizora.commands import serve
    from conftest import assert_fits

    monkeypatch.setenv("COLUMNS", str(width))
    request, result = _shipped_survey()
    chosen = frontier.pick(result.rows, None, "cost")
    out = io.StringIO()
    serve.print_survey(result, request, chosen,
                       SimpleNamespace(latency_bound=None, objective="cost"), out)
    text = out.getvalue()
    priced = [r for r in result.rows if r.latency_s is not None]
    assert len(priced) == 3
    whole = [f"{r.videos_per_hour:,.1f}" for r in priced]
    whole += [f"{r.usd_per_video:.3g}" for r in priced]
    whole += ["[{:.3g}-{:.3g}]".format(*r.latency_interval_s) for r in priced]
    whole += [name for r in result.replicas.values() for name in r.plan.split(" @ ")]
    assert_fits(text, width, whole)
    assert "pick (no --latency-bound, --objective cost): 4 x 2x2 on v5e:4x4" in text

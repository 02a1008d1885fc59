"""Seconds per video inside a plan (pipeline/plan_video.py, planner.py): one wan-tiny
plan on v5e:2x2 for the TPU target, its video record checked part by part."""

import copy
import json

import pytest

from aoizora import plan_schema
from aoizora.planning import planner
from aoizora.compile.cache import Cache
from aoizora.models import get_model, get_workload
from aoizora.models.scheduler import DENOISING
from aoizora.pipeline import plan_video
from aoizora.plan_format import Plan
from aoizora.plan_summary import comparison_rows, video_lines
from aoizora.planning.stage2 import Stage2

TOPOLOGY = "v5e:2x2"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return Cache(str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def result(cache):
    return planner.plan("wan-tiny", "tiny", 9, TOPOLOGY, planner.Settings(cache=cache))


def _sum(parts: dict) -> float:
    return sum(parts.values())


def test_the_plan_prices_one_video_by_part_at_the_presets_step_count(result):
    v = result.plan.video
    steps = DENOISING["wan-tiny"].steps
    assert v["kind"] == "simulated" and v["steps"] == steps
    assert v["parts"]["denoising_s"] == pytest.approx(steps * result.plan.choice.simulated_s)
    assert v["seconds"] == pytest.approx(_sum(v["parts"]))
    # each stage is the fastest of its priced shardings
    for stage in ("text_encoder", "vae_decode"):
        priced = [o["simulated_s"] for o in v["options"]
                  if o["stage"] == stage and o["simulated_s"] is not None]
        assert len(priced) >= 2 and v["stages"][stage]["simulated_s"] == min(priced)
    assert v["parts"]["text_encoder_s"] == v["stages"]["text_encoder"]["simulated_s"]
    assert v["parts"]["vae_decode_s"] == v["stages"]["vae_decode"]["simulated_s"]


def test_an_option_that_cannot_mean_its_name_is_skipped_with_why(result):
    # wan-tiny's 9 frames are 3 latent frames: no 4-way frame split
    frames = next(o for o in result.plan.video["options"] if o["sharding"] == "vae-frames4")
    assert frames["simulated_s"] is None and "do not divide by 4" in frames["error"]


def test_every_baseline_is_priced_per_video_with_its_own_step(result):
    plan, steps = result.plan, result.plan.video["steps"]
    rows = result.plan.video["baselines"]
    assert set(rows) == set(plan.baselines) and "existing" in rows
    for tag, row in rows.items():
        assert row["parts"]["denoising_s"] == pytest.approx(
            steps * plan.baselines[tag].simulated_s)
        assert row["seconds"] == pytest.approx(_sum(row["parts"]))
        # MaxDiffusion decodes with its VAE over every device along width
        want = (f"vae-width{len(plan.choice.chip_ids)}" if tag.startswith("maxdiffusion")
                else plan.video["stages"]["vae_decode"]["sharding"])
        assert row["stages"]["vae_decode"] == want


def test_the_plan_is_the_best_shown_per_video(result):
    """What the plan minimises is its share of the video: the steps and the reshards (the
    stages' own seconds are the same for every row but MaxDiffusion's VAE)."""
    v = result.plan.video
    share = lambda row: row["parts"]["denoising_s"] + row["parts"]["reshard_s"]
    for tag, row in v["baselines"].items():
        assert share(v) <= share(row) * (1 + 1e-9), tag
    c = v["changed_choice"]
    if c is not None:  # the best per forward lost on its reshards
        assert c["by_step_video_s"] >= v["seconds"]


def test_the_step_count_scales_only_the_steps(result, cache):
    stages = plan_video.price_stages(get_model("wan-tiny"), get_workload("tiny", 9),
                                     Stage2.for_topology(TOPOLOGY), cache=cache)
    wl = get_workload("tiny", 9)
    model = plan_video.VideoModel(get_model("wan-tiny"), wl, Stage2.for_topology(TOPOLOGY),
                                  7, stages)
    pair = result.pairs[0]
    parts = model.parts(pair)
    assert parts["denoising_s"] == pytest.approx(7 * pair.simulated)
    assert parts["text_encoder_s"] == result.plan.video["parts"]["text_encoder_s"]


def test_the_video_record_round_trips_and_is_checked(result):
    d = json.loads(json.dumps(result.plan.to_dict()))
    plan_schema.check(d)
    assert Plan.from_dict(d).video == d["video"]
    bad = copy.deepcopy(d)
    bad["video"]["baselines"]["existing"]["parts"]["vae_decode_s"] = -1
    with pytest.raises(ValueError, match="vae_decode_s must be a number"):
        plan_schema.check(bad)
    bad = copy.deepcopy(d)
    bad["video"]["steps"] = 0
    with pytest.raises(ValueError, match="video.steps"):
        plan_schema.check(bad)


def test_the_terminal_shows_seconds_per_video(result):
    plan = result.plan
    lines = video_lines(plan)
    assert lines[0].startswith(f"seconds per video (simulated; {plan.video['steps']} steps")
    assert any(line.split()[0] == "total" for line in lines[1:])
    rows = comparison_rows(plan)
    assert rows[0].video_s == plan.video["seconds"]
    assert all(r.video_s is not None for r in rows if r.tag in plan.baselines)


def test_not_asked_is_said_not_priced(cache):
    r = planner.plan("wan-tiny", "tiny", 9, TOPOLOGY,
                     planner.Settings(cache=cache, video=False, top_k=1))
    assert r.plan.video == {"kind": "simulated", "not_priced": "not asked (--no-video)"}
    assert video_lines(r.plan) == ["seconds per video: not priced (not asked (--no-video))"]


def test_an_unknown_model_has_no_step_count():
    from aoizora.errors import UserError

    with pytest.raises(UserError, match="no reference denoising run"):
        plan_video.steps_for(get_model("wan-tiny").replace(name="my-wan"), None)
    with pytest.raises(UserError, match="no reference denoising run"):
        plan_video.steps_for(get_model("wan-tiny").replace(name="my-wan"), 30)


def test_compare_gives_each_rows_seconds_per_video(result, tmp_path, capsys):
    from aoizora import cli

    path = tmp_path / "plan.json"
    result.plan.save(str(path))
    assert cli.main(["compare", "--plan", str(path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["video_s"] == result.plan.video["seconds"]
    for row in rows:
        assert row["video_s"] == pytest.approx(_sum(row["video_parts"]))
    assert cli.main(["compare", "--plan", str(path)]) == 0
    assert "seconds per video (simulated;" in capsys.readouterr().out


def test_the_report_shows_seconds_per_video_per_row(result):
    from aoizora.report import render
    from aoizora.report.tables import seconds

    page = render(result.plan)
    section = page[page.index('<section id="video">'):page.index('<section id="why">')]
    assert 'id="video-split"' in section and "<svg" in section
    assert f"<b>{seconds(result.plan.video['seconds'])} s</b>" in section
    # one table row per bar: the plan and every baseline but "existing" (a repeat)
    assert section.count("<tr><td>") == len(result.plan.baselines)

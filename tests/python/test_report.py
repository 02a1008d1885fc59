"""The report that explains a plan: the step split, the placement beside JAX's default order,
one simulated block, placements in words; a pure function of plan.json, loaded in a real
browser (headless Chromium) without console errors."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from types import SimpleNamespace as NS

import pytest

from aoizora import _core
from aoizora.planning import step_split
from aoizora.planning.placement_ties import tie_sentence
from aoizora.planning.placement_words import axis_shapes, group_shape, placement_in_words
from aoizora.plan_format import Choice, Plan
from aoizora.report import render

SECTIONS = ("summary", "why", "placement", "timeline", "baselines", "runners-up", "placements")


# ---- placements in words ----------------------------------------------------------------------

def test_group_shapes_name_blocks_rows_strides_and_cores():
    assert group_shape([(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)]) == "2x2 blocks"
    assert group_shape([(x, 1, 0) for x in range(4)]) == "rows of 4 along x"
    assert group_shape([(0, 0, 0), (0, 1, 0)]) == "neighbour pairs along y"
    assert group_shape([(0, 0, 0), (2, 0, 0)]) == "pairs 2 apart along x"
    assert group_shape([(0, 0, 0), (1, 3, 0)]) == "pairs 4 hops apart"
    assert group_shape([(0, 0, 0), (2, 0, 0), (0, 1, 0)]) == "3 chips spread over a 3x2 box"
    assert group_shape([(1, 1, 0, 0), (1, 1, 0, 1)]) == "within one chip"
    assert group_shape([(0, 0, 0, c) for c in (0, 1)] + [(1, 0, 0, c) for c in (0, 1)]) == \
        "neighbour pairs along x (both cores of each)"


def test_placement_sentence_starts_from_the_innermost_axis():
    # v5e:2x4 (x 2 wide, y 4 long), mesh data 2 x context 4 with context on 2x2 blocks
    keys = [(x, y, 0) for y in range(4) for x in range(2)]
    assert placement_in_words([2, 4], ["data", "context"], keys) == \
        "context groups on 2x2 blocks, data across them (pairs 2 apart along y)"
    assert axis_shapes([2, 4], ["data", "context"], keys) == {
        "data": "pairs 2 apart along y", "context": "2x2 blocks"}
    # TPU7x: Ulysses on a chip's two cores, ring and data across chips
    keys = [(x, y, 0, c) for x in range(2) for y in range(2) for c in range(2)]
    assert placement_in_words([2, 2, 2], ["data", "ring", "ulysses"], keys) == (
        "ulysses groups within one chip, ring across them (neighbour pairs along y), data "
        "across those (neighbour pairs along x)")


# ---- the step split ---------------------------------------------------------------------------

def _graph():
    """Region 0 before the loop, regions 1-2 the block loop (3 trips), region 3 after."""
    ops = lambda *names: NS(ops=[NS(name=n) for n in names])  # noqa: E731
    return NS(regions=[ops("embed"), ops("qkv"), ops("ffn"), ops("head")],
              loops=[NS(name="blocks", trip_count=3, parent=-1, first_region=1,
                        last_region=2)],
              collectives=[NS(name="ag.1", region=0), NS(name="a2a.1", region=1)])


def _sim(*contributors, step=None):
    path = [NS(name=n, kind=k, seconds=s) for n, k, s in contributors]
    return NS(critical_path=path, step_seconds=step or sum(c.seconds for c in path))


def test_step_split_adds_up_to_the_step_and_divides_the_block_loop_by_its_trips():
    sim = _sim(("embed", "compute", 1.0), ("ag.1", "all-gather", 0.5), ("qkv", "compute", 3.0),
               ("a2a.1", "all-to-all", 1.5), ("ffn", "compute", 6.0), ("head", "compute", 1.0))
    s = step_split.split(sim, _graph())
    assert s["forward_s"] == {"compute": 11.0, "all-gather": 0.5, "all-to-all": 1.5}
    assert list(s["forward_s"]) == ["compute", "all-gather", "all-to-all"]  # compute first
    assert s["block_s"] == {"compute": 3.0, "all-to-all": 0.5}
    assert s["blocks"] == 3 and s["block_loop"] == "blocks" and s["step_s"] == 13.0


def test_step_split_shows_a_critical_path_that_misses_part_of_the_step():
    s = step_split.split(_sim(("embed", "compute", 1.0), step=2.0), _graph())
    assert s["forward_s"] == {"compute": 1.0, "unattributed": 1.0}
    assert "covers 1 s of the 2 s step" in s["note"]
    assert sum(s["forward_s"].values()) == s["step_s"]


def test_a_program_without_a_loop_has_no_block_figures():
    g = _graph()
    g.loops = []
    s = step_split.split(_sim(("embed", "compute", 1.0)), g)
    assert s["block_s"] is None and s["blocks"] is None


# ---- pages from plans built by hand --------------------------------------------------------

def _plan(workload, dims=(2, 4), coords=None, mesh=(2, 4), names=("data", "context")):
    coords = coords or [[x, y, 0] for y in range(dims[1]) for x in range(dims[0])]
    choice = Choice("dp2-ag4", list(mesh), list(names), {}, "axes x|y", coords,
                    simulated_s=1e-3)
    return Plan(model={"name": "m"}, workload=workload,
                topology={"name": "v5e:2x4", "dims": list(dims), "generation": "v5e"},
                choice=choice)


def test_header_names_only_the_workload_figures_the_plan_has():
    text = render(_plan({"video": "480p", "frames": 21, "tokens": 9360}))
    assert "480p, 21 frames (9,360 tokens per sample)" in text
    for workload in ({"video": "480p", "frames": 21, "tokens": None},
                     {"function": "f", "video": None, "frames": None, "tokens": None}):
        text = render(_plan(workload))
        assert "None" not in text.split('id="why"')[0], workload


def test_a_plan_without_the_figures_says_so_in_each_section():
    text = render(_plan({"video": "480p", "frames": 21}))
    for what in ("the step split", "the link loads", "a block timeline",
                 "the placements of the chosen sharding"):
        assert f"This plan does not record {what}" in text


def test_a_baseline_with_no_figures_is_a_row_that_says_why():
    plan = _plan({"video": "tiny"})
    plan.planning["baselines_failed"] = {
        "xdit-usp": {"candidate": "dp2-usp2x2", "why": "compile failed: <VMEM> exhausted"}}
    text = render(plan).split('id="baselines"')[1].split("</section>")[0]
    assert ("<tr><td>xdit-usp (not compared)</td><td>dp2-usp2x2</td>"
            '<td colspan="7">compile failed: &lt;VMEM&gt; exhausted</td></tr>') in text


def test_report_says_what_q1_and_q2_are_and_how_a_tie_was_broken():
    # the shipped tiny plan: axes x|y and row-major tie (the same Q2 and simulated step)
    plan = Plan.load(os.path.join(os.path.dirname(__file__), "../data/plans/wan_tiny.v5e_2x2.json"))
    summary = " ".join(render(plan).split('id="summary"')[1].split("</section>")[0].split())
    assert "<b>Q1</b> is Stage 1's predicted step of a sharding, read from its StableHLO" in summary
    assert ("<b>Q2</b> is Stage 2's predicted step of a sharding under one placement, read "
            "from the compiled HLO") in summary and "(contention)" in summary
    assert ('<p id="tie">Tie: row-major simulates within 0.001% of the chosen placement '
            "(row-major: the same step and Q2, its name sorts after)") in summary
    assert "then the least Q2, then the first name" in summary
    plan.choice.extra["placements"] = plan.choice.extra["placements"][:1]  # no other placement
    assert 'id="tie"' not in render(plan)


def test_two_core_chips_list_which_logical_devices_share_them():
    coords = [[x, y, 0, c] for x in range(2) for y in range(2) for c in range(2)]
    plan = _plan({"video": "tiny"}, dims=(2, 2, 1), coords=coords, mesh=(2, 2, 2),
                 names=("data", "ring", "ulysses"))
    text = render(plan)
    rows = re.findall(r"<tr><td>\((\d), (\d), 0\)</td><td>([^<]*)</td></tr>", text)
    assert len(rows) == 4
    assert rows[0] == ("0", "0", "core 0: (data=0, ring=0, ulysses=0); "
                                 "core 1: (data=0, ring=0, ulysses=1)")


# ---- the tiny plan end to end -------------------------------------------------------------------

@pytest.fixture
def result(tiny_plan):
    return tiny_plan


def test_plan_records_the_step_split_of_the_plan_and_every_baseline(result):
    plan = result.plan
    for c in [plan.choice, *plan.baselines.values()]:
        s = c.extra["step_split"]
        # the critical path covers the whole step: no gap filled by "unattributed"
        assert "unattributed" not in s["forward_s"] and "note" not in s, s
        assert sum(s["forward_s"].values()) == pytest.approx(c.simulated_s, rel=1e-6)
        assert s["blocks"] == 2  # wan-tiny's two blocks
        for kind, seconds in s["block_s"].items():
            assert 0 < seconds * 2 <= s["forward_s"][kind] * (1 + 1e-9)


def test_default_order_is_the_same_sharding_on_jax_default_device_order(result):
    c = result.plan.choice
    d = c.extra["jax_default"]
    p = _core.default_placement(result.topology, c.mesh_shape)
    assert d["chip_ids"] == list(p.device_of)
    assert d["simulated_s"] >= c.simulated_s  # the plan never loses to its own default
    assert len(d["link_bytes"]) == len(c.extra["link_bytes"]) == result.topology.num_links


def test_block_timeline_has_every_device_within_one_block(result):
    tl = result.plan.choice.extra["block_timeline"]
    assert tl["what"] == "block 1 of 2" and len(tl["devices"]) == 8
    span = tl["end_s"] - tl["start_s"]
    assert 0 < span < result.plan.choice.simulated_s
    assert {s[0] for s in tl["slices"]} == set(range(8))
    assert all(0 <= s[1] < s[2] <= span * (1 + 1e-9) for s in tl["slices"])
    assert {s[3] for s in tl["slices"]} >= {"compute", "comm"}


def test_report_is_a_pure_function_of_the_saved_plan(result, tmp_path):
    path = tmp_path / "plan.json"
    result.plan.save(str(path))
    text = render(Plan.load(str(path)))
    assert text == render(result.plan)
    assert text.count("(existing: the best deployment)") >= 1
    placements = result.plan.choice.extra["placements"]
    assert placements == result.placements and len(placements) > 1
    table = text.split('<section id="placements">')[1]
    assert table.count("<tr><td><code>") == len(placements)
    s = result.plan.choice.strategy      # the kernel and its blocks, as compiled
    assert s["kernel"] == "splash"
    assert f"splash q {s['block_q']}, kv {s['block_kv']} / {s['block_kv_compute']}" in text


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_report_loads_in_chromium_without_console_errors(result, tmp_path):
    browser = _chromium()
    if browser is None:
        if os.environ.get("AOIZORA_REQUIRE_BROWSER"):  # scripts/test.sh: setup.sh installed it
            pytest.fail("chromium is missing, but AOIZORA_REQUIRE_BROWSER is set")
        pytest.skip("chromium is not installed (scripts/setup.sh --test installs it: apt-get "
                    "install chromium)")
    page = tmp_path / "report.html"
    page.write_text(render(result.plan, trace="trace.json"))
    text = page.read_text()
    # self-contained: nothing fetched (links to the trace and Perfetto are plain anchors)
    assert not re.search(r"<script|<link|<img|src=|url\(http", text)
    run = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    assert not console, console
    dom = run.stdout
    for section in SECTIONS:
        assert f'<section id="{section}">' in dom, section
    for plot in ("step-split", "block-timeline"):
        figure = dom.split(f'id="{plot}"')[1].split("</figure>")[0]
        assert "<svg" in figure and figure.count("<path") > 10, plot
    slices = dom.split('id="slices"')[1].split("</div>")[0]
    assert slices.count('class="slice"') == 2  # the plan and JAX's default order
    assert 'href="trace.json"' in dom
    assert "<b>Q1</b> is Stage 1" in dom and "<b>Q2</b> is Stage 2" in dom
    assert ('<p id="tie">Tie: ' in dom) == (tie_sentence(result.plan.choice) is not None)


# ---- the page at 1280 pixels ---------------------------------------------------------------

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The shipped plans with the longest row labels (baselines' notes) and the most rows.
WIDE = ("docs/results/video/wan2.1-i2v-14b_v5e-2x4.plan.json",
        "docs/results/compiler_flags/wan-14b_v6e-2x4_720p-81f.plan.json",
        "tests/data/plans/wan_tiny.v5e_2x2.json")
# Appended to a copy of the page only: how wide the page and each chart are once laid out.
_PROBE = ("<script>window.addEventListener('load', () => document.body.setAttribute("
          "'data-widths', JSON.stringify([window.innerWidth, "
          "document.documentElement.scrollWidth].concat([...document.querySelectorAll("
          "'figure')].map(f => Math.ceil(f.getBoundingClientRect().right))))));</script>")


@pytest.mark.parametrize("path", WIDE, ids=os.path.basename)
def test_every_chart_fits_a_1280_pixel_window(path, tmp_path):
    """The per-forward chart ran past a 1400-pixel window, its axis and legend cut: the page
    must not scroll sideways at 1280 pixels, and no chart may end past the window."""
    import json

    from aoizora import plan_schema

    browser = _chromium()
    if browser is None:
        if os.environ.get("AOIZORA_REQUIRE_BROWSER"):
            pytest.fail("chromium is missing, but AOIZORA_REQUIRE_BROWSER is set")
        pytest.skip("chromium is not installed (scripts/setup.sh --test installs it)")
    page = tmp_path / "report.html"
    page.write_text(render(plan_schema.load(os.path.join(ROOT, path)))
                    .replace("</body>", _PROBE + "</body>"))
    run = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                          "--window-size=1280,900", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    found = re.search(r'data-widths="([^"]*)"', run.stdout)
    assert found, run.stdout[-2000:]
    window, scroll, *charts = json.loads(found.group(1).replace("&quot;", '"'))
    assert window == 1280
    assert scroll <= window and max(charts) <= window, (scroll, charts)


# ---- the hardware section ------------------------------------------------------------------

@pytest.mark.parametrize("name, warned", [("wan2.1-i2v-14b_v5e-2x4", False),
                                          ("wan2.1-i2v-14b_tpu7x-2x2x1", False),
                                          ("wan2.1-i2v-14b_v6e-2x4", True)])
def test_the_red_nominal_line_shows_only_where_the_link_bandwidth_is_nominal(name, warned):
    """The red line showed on every plan, v5e's too, whose link bandwidth is fitted: it
    shows where the figure it names is nominal in the plan's hardware_basis, and names no
    fitted figure."""
    from aoizora import plan_schema
    from aoizora.report import hardware

    plan = plan_schema.load(os.path.join(ROOT, f"docs/results/video/{name}.plan.json"))
    basis = plan.topology["hardware_basis"]
    page = hardware.section(plan, lambda what: "")
    red = re.findall(r'<p class="missing"[^>]*>(.*?)</p>', page, re.S)
    assert bool(red) == warned == ("link_bandwidth" in basis["nominal"]), page
    for line in red:
        assert "link_bandwidth" in line
        assert not any(f in line for f in basis["fitted"]), line
    assert "link_bandwidth" in page   # every field is in the table, whatever its basis

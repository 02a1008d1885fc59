"""How sure a comparison is (figure_spread.py, model_draws.py, speedups.py, confidence.py) on
small compiled-style HLO programs simulated for v5e:2x4 under joint draws of its figures:
rows that share what is uncertain are separated although their own intervals overlap, rows
that differ in a poorly known figure tie, draws repeat across processes, and a change to the
placement or the compiler flags is made only where it is defended."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from aoizora import _core
from aoizora.compile import compile_flags
from aoizora.hardware import error_bands, figure_spread
from aoizora.planning import confidence, flag_search, speedups
from aoizora.planning.model_draws import ModelDraws
from aoizora.planning.stage2 import Pair, Stage2

PAIRS = "{{0,1},{2,3},{4,5},{6,7}}"


def program(rows: int, gathered: int = 0, groups: str = PAIRS) -> str:
    """A matmul of `rows` x 4096 by 4096 x 4096 in bf16, then (gathered > 0) an all-gather
    over `groups` of its first `gathered` rows, which waits for it: compute, then exposed
    communication."""
    gather = "" if not gathered else (
        f"  s = bf16[{gathered},4096] slice(d), slice={{[0:{gathered}], [0:4096]}}\n"
        f"  g = bf16[{2 * gathered},4096] all-gather(s), replica_groups={groups}, "
        "dimensions={0}, channel_id=1, use_global_device_ids=true\n")
    return (f"HloModule m, num_partitions=8\n\nENTRY %e (a: bf16[{rows},4096], "
            f"b: bf16[4096,4096]) -> bf16[] {{\n"
            f"  a = bf16[{rows},4096] parameter(0)\n  b = bf16[4096,4096] parameter(1)\n"
            f"  d = bf16[{rows},4096] dot(a, b), lhs_contracting_dims={{1}}, "
            f"rhs_contracting_dims={{0}}\n{gather}  ROOT r = bf16[] constant(0)\n}}\n")


@pytest.fixture(scope="module")
def stage2():
    return Stage2.for_topology("v5e:2x4")


@pytest.fixture(scope="module")
def draws(stage2):
    return ModelDraws(stage2, n=200, seed=0)


def _pair(stage2, name: str, graph, device_of=tuple(range(8)), placement="p") -> Pair:
    p = Pair(SimpleNamespace(name=name), placement, list(device_of), 0.0)
    return stage2.simulate(p, graph)


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    (alo, ahi), (blo, bhi) = speedups.interval(a), speedups.interval(b)
    return alo <= bhi and blo <= ahi


def test_the_same_compute_with_more_communication_is_separated_though_intervals_overlap(
        draws):
    plain, more = _core.load_hlo(program(4096)), _core.load_hlo(program(4096, 256))
    a, b = draws.step_s(plain, range(8)), draws.step_s(more, range(8))
    assert _overlap(a, b)              # alone, each time is known to no better than that
    s = speedups.speedup(a, b)
    assert not s.tie and s.low > 1.05 and s.p_faster == 1.0


def test_rows_that_differ_in_a_poorly_known_figure_tie(draws):
    """More matmul against a large exposed all-gather, the two within a few % by the point
    figure: one rests on the MXU rate, the other on the link bandwidth, drawn apart."""
    heavy, gathers = _core.load_hlo(program(7000)), _core.load_hlo(program(4096, 2048))
    a, b = draws.step_s(heavy, range(8)), draws.step_s(gathers, range(8))
    s = speedups.speedup(a, b)
    assert s.tie and 0.2 < s.p_faster < 0.8
    assert s.high / s.low > 1.3


def test_an_efficiency_drawn_past_one_moves_into_the_peak():
    doc = {"mxu_efficiency": 0.9, "peak_flops": 100.0}
    spread = {"mxu_efficiency": figure_spread.Spread("mxu_efficiency", 1.0, "fitted", "")}
    for drawn, f in zip(figure_spread.draw(doc, spread, 50, 3),
                        figure_spread.factors(spread, 50, 3)["mxu_efficiency"]):
        assert drawn["mxu_efficiency"] <= 1.0
        assert drawn["mxu_efficiency"] * drawn["peak_flops"] == pytest.approx(90.0 / f)


_CHILD = """
import json, sys
from aoizora.planning.model_draws import ModelDraws
from aoizora.planning.stage2 import Stage2
d = ModelDraws(Stage2.for_topology("v5e:2x4"), n=20, seed=int(sys.argv[1]))
print(json.dumps({f: list(map(float, v)) for f, v in d.factors.items()}))
"""


def test_draws_repeat_in_another_process_and_move_with_the_seed(stage2):
    mine = {f: list(map(float, v)) for f, v in ModelDraws(stage2, n=20, seed=7).factors.items()}
    child = lambda seed: json.loads(subprocess.run(
        [sys.executable, "-c", _CHILD, str(seed)], capture_output=True, text=True,
        check=True).stdout)
    assert child(7) == mine
    assert child(8)["link_bandwidth"] != mine["link_bandwidth"]


def test_a_placement_is_kept_on_jax_default_unless_the_draws_defend_it(stage2, draws):
    """The same sharding on two orders: one where the all-gather's pairs are neighbours,
    one where they are far apart (defended), and a mirror image of the default that
    simulates the same (kept on the default)."""
    graph = _core.load_hlo(program(4096, 2048))
    pricer = confidence.Pricer(draws, {"s": graph})
    near = _pair(stage2, "s", graph, range(8), "near")
    far = _pair(stage2, "s", graph, [0, 7, 1, 6, 2, 5, 3, 4], "jax-default")
    assert near.simulated < far.simulated
    best, changes = confidence.defend(pricer, [near], lambda p: far)
    assert best is near and changes[0]["made"] and changes[0]["p"] >= speedups.DEFEND
    mirror = _pair(stage2, "s", graph, list(range(8))[::-1], "mirror")
    assert mirror.simulated == pytest.approx(near.simulated, rel=1e-9)
    best, changes = confidence.defend(pricer, [mirror], lambda p: near)
    assert best is near and not changes[0]["made"]
    assert "not worth a change" in changes[0]["words"]


def test_the_existing_deployment_is_left_only_for_a_pair_surely_faster(stage2, draws):
    """The best by the point figure is not surely faster than the existing deployment (it
    trades gathers for matmul); the next, the existing program with a smaller gather, is:
    it is the plan. Without it, the plan keeps the existing deployment."""
    heavy, fewer = _core.load_hlo(program(7000)), _core.load_hlo(program(4096, 2000))
    gathers = _core.load_hlo(program(4096, 2048))
    pricer = confidence.Pricer(draws, {"heavy": heavy, "fewer": fewer, "gathers": gathers})
    existing, plan = _pair(stage2, "gathers", gathers), _pair(stage2, "heavy", heavy)
    near = _pair(stage2, "fewer", fewer)
    assert plan.simulated < near.simulated < existing.simulated
    best, changes = confidence.defend(pricer, [plan, near, existing], lambda p: None,
                                      existing, "xdit-usp")
    assert best is near and [c["made"] for c in changes] == [False, True]
    assert changes[0]["what"] == confidence.EXISTING and changes[0]["p"] < speedups.DEFEND
    best, changes = confidence.defend(pricer, [plan, existing], lambda p: None, existing,
                                      "xdit-usp")
    assert best is existing and [c["made"] for c in changes] == [False]


def _flag_case(stage2, draws, flagged_text: str):
    none, flagged = _core.load_hlo(program(4096, 2048)), _core.load_hlo(flagged_text)
    best = _pair(stage2, "s", none)
    graphs = {("s", compile_flags.NONE): none, ("s", "published"): flagged}
    pricer = confidence.Pricer(draws, {})
    return flag_search.defended(SimpleNamespace(name="published"), best, graphs,
                                pricer.step_speedup, speedups.DEFEND)


def test_compiler_flags_are_adopted_only_where_the_draws_defend_them(stage2, draws):
    """A flag set whose program drops most of the exposed all-gather is adopted; one whose
    program trades it for about as much matmul (1 % faster by the point figure) is not."""
    chosen, change = _flag_case(stage2, draws, program(4096, 256))
    assert chosen.name == "published" and change["made"]
    chosen, change = _flag_case(stage2, draws, program(7050))
    assert chosen.name == compile_flags.NONE and not change["made"]
    assert change["gain_pct"] > 0 and "not worth a change" in change["words"]


def test_held_out_coverage_counts_points_outside_their_interval():
    """A generation whose second point errs far more than its first leaves it outside the
    interval its first sets; the widening then covers both."""
    rows = [{"id": "a", "generation": "g", "kind": "all-gather", "left_out_error_pct": 2.0},
            {"id": "b", "generation": "g", "kind": "all-gather", "left_out_error_pct": 30.0}]
    before = figure_spread.coverage(rows)
    assert before[0]["inside"] == 1 and before[0]["outside"] == ["b"]
    w = figure_spread.widening(rows)
    assert w["g"] == pytest.approx(np.log(1.3) / (figure_spread.Z90 * np.log(1.02)))
    assert figure_spread.coverage(rows, w)[0]["inside"] == 2


def test_the_shipped_spreads_say_where_each_comes_from():
    doc = json.loads(_core.hardware_profile("v5e"))
    s = figure_spread.spreads(doc, "v5e", error_bands.read())
    assert s["link_bandwidth"].basis == figure_spread.FITTED
    assert s["mxu_efficiency"].basis == figure_spread.DERIVED   # no v5e program point
    assert s["grid_step_seconds"].basis == figure_spread.NOMINAL
    assert "peak_flops" not in s

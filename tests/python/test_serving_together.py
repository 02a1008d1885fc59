"""Replicas simulated together (serving/together.py, survey.simulate_together): two replicas
interleaved on a line share its middle links and each takes longer than alone, by the closed
form; disjoint boxes of a v5e:4x4 run together exactly as alone (and the same programs
interleaved do not); each replica's device order moved into its box; the one-line refusals;
a split's row priced from the replicas run together."""

from __future__ import annotations

import json
import re
import os

import pytest

from aoizora import _core
from aoizora.inputs import topology_file
from aoizora.errors import UserError
from aoizora.serving import prices, splits, survey, together

HLO = os.path.join(os.path.dirname(__file__), "..", "data", "hlo")


def _fixture(name: str):
    return _core.load_hlo_file(os.path.join(HLO, name))


def _split(slice_name: str, name: str) -> splits.Split:
    return {s.name: s for s in splits.enumerate_splits(slice_name)}[name]


def _all_gather(floats: int):
    """Two partitions gather `floats` f32 each: each sends 4 x floats bytes to the other."""
    return _core.load_hlo(f"""HloModule ag, num_partitions=2
ENTRY %e (p: f32[{floats}]) -> f32[{2 * floats}] {{
  %p = f32[{floats}]{{0}} parameter(0)
  ROOT %ag = f32[{2 * floats}]{{0}} all-gather(%p), channel_id=1, replica_groups={{{{0,1}}}}, dimensions={{0}}, use_global_device_ids=true
}}
""")


@pytest.fixture
def line4(tmp_path):
    path = tmp_path / "line4.json"
    path.write_text(json.dumps({"name": "line4", "generation": "v5e", "dims": [4, 1],
                                "wrap": [False, False]}))
    return topology_file.load(str(path))


def test_two_replicas_interleaved_on_a_line_share_its_middle_links_and_each_slows(line4):
    # Replica 0 on chips 0 and 2, replica 1 on 1 and 3: 0->2 and 1->3 both cross link 1->2,
    # 2->0 and 3->1 both cross 2->1, so each flow drains at half the link rate.
    K = 4 * (1 << 22)                                    # bytes each chip sends, 16 MiB
    g = _all_gather(1 << 22)
    B, alpha = line4.link_bandwidth, line4.hop_latency
    o = line4.spec["collective_latency"]["all-gather"]
    alone = [_core.simulate(g, line4, order).step_seconds for order in ([0, 2], [1, 3])]
    for a in alone:
        assert a == pytest.approx(o + K / B + 2 * alpha, rel=1e-9)
    run = together.simulate(g, line4, [[0, 2], [1, 3]])
    for seconds, a in zip(run.seconds, alone):
        assert seconds == pytest.approx(o + 2 * K / B + 2 * alpha, rel=1e-9)
        assert seconds > 1.9 * a                         # 899 us against 454 us (simulated)
    # The same two replicas side by side (0-1, 2-3) share nothing: each as alone.
    side = together.simulate(g, line4, [[0, 1], [2, 3]])
    assert side.seconds == pytest.approx([o + K / B + alpha] * 2, rel=1e-9)


@pytest.mark.parametrize("fixture", ["ring_alltoall.v5e_2x4.hlo", "layers_scan.v5e_2x4.hlo"])
@pytest.mark.parametrize("split_name", ["2 x 2x4", "2 x 4x2"])
def test_two_boxes_of_a_v5e_4x4_run_together_exactly_as_alone(fixture, split_name):
    g = _fixture(fixture)
    planned = _core.make_topology("v5e:2x4")
    order = (5, 2, 7, 0, 3, 6, 1, 4)                     # not the identity: a real placement
    alone = _core.simulate(g, planned, list(order)).step_seconds
    program = together.Program(g, planned, order, alone)
    run = survey.simulate_together(_split("v5e:4x4", split_name), program,
                                   _core.make_topology("v5e:4x4"))
    assert run.seconds == (alone, alone)                 # exactly, not approximately


def test_the_same_programs_interleaved_on_a_v5e_4x4_are_slower_than_alone():
    # The control for the test above: replica 0 on columns x = 0, 2, replica 1 on x = 1, 3.
    g = _fixture("ring_alltoall.v5e_2x4.hlo")
    slice_ = _core.make_topology("v5e:4x4")
    even = [2 * (p % 2) + 4 * (p // 2) for p in range(8)]   # chip id = x + 4 y
    odd = [d + 1 for d in even]
    alone = [_core.simulate(g, slice_, o).step_seconds for o in (even, odd)]
    run = together.simulate(g, slice_, [even, odd])
    for seconds, a in zip(run.seconds, alone):
        assert seconds > 1.1 * a                         # 31.9 us against 26.6 us (simulated)


def test_a_transposed_box_takes_each_device_to_its_mirrored_place():
    g = _fixture("ring_alltoall.v5e_2x4.hlo")
    planned = _core.make_topology("v5e:2x4")             # chip (x, y) has id x + 2 y
    program = together.Program(g, planned, tuple(range(8)), 1.0)
    orders = together.device_orders(_split("v5e:4x4", "2 x 4x2"), program,
                                    _core.make_topology("v5e:4x4"))
    # (x, y) on the 2x4 goes to (y, x) in a 4x2 box at (0, 0), then at (0, 2): id x + 4 y.
    assert orders == [[0, 4, 1, 5, 2, 6, 3, 7], [8, 12, 9, 13, 10, 14, 11, 15]]
    straight = together.device_orders(_split("v5e:4x4", "2 x 2x4"), program,
                                      _core.make_topology("v5e:4x4"))
    assert straight == [[0, 1, 4, 5, 8, 9, 12, 13], [2, 3, 6, 7, 10, 11, 14, 15]]


@pytest.mark.parametrize("orders, message", [
    ([[0, 2], [1]], "replica 1 has 1 devices, the program 2 partitions"),
    ([[0, 2], [2, 3]], "device 2 is used twice"),
    ([[0, 2], [1, 4]], "device 4 is not on line4 (4 devices)"),
    ([], "no replica given"),
])
def test_orders_that_do_not_fit_are_refused_in_one_line(line4, orders, message):
    with pytest.raises(UserError, match=re.escape("simulate together: " + message)):
        together.simulate(_all_gather(16), line4, orders)


def test_replicating_with_no_copies_is_a_core_error():
    with pytest.raises(_core.CoreError, match="replicated: 0 replicas; at least 1 is needed"):
        _core.replicated_graph(_all_gather(16), 0)


def test_each_chips_finish_is_bound_and_the_last_is_the_step():
    g = _fixture("ring_alltoall.v5e_2x4.hlo")
    r = _core.simulate(g, "v5e:2x4", list(range(8)))
    assert max(c.finish for c in r.chips) == r.step_seconds
    assert r.to_dict()["chips"][3]["finish"] == r.chips[3].finish > 0


def test_a_split_that_cuts_a_wraparound_axis_is_priced_from_its_replicas_run_together():
    # v5e:16x16 wraps both axes; 16 boxes of 4x4 are at most half of each, so the shorter way
    # between two chips of a box stays inside it and the replicas run as alone: shown here by
    # simulating the 16 copies of a real v5e:4x4 program at once, not assumed.
    g = _fixture("layers_scan.v5e_4x4.hlo")
    planned = _core.make_topology("v5e:4x4")
    order = tuple(reversed(range(16)))
    alone = _core.simulate(g, planned, list(order)).step_seconds
    s = _split("v5e:16x16", "16 x 4x4")
    assert s.shares_links
    run = survey.simulate_together(s, together.Program(g, planned, order, alone),
                                   _core.make_topology("v5e:16x16"))
    assert run.slowest == pytest.approx(alone, rel=1e-12)
    request = survey.Request("wan-tiny", "tiny", None, ("v5e:16x16",), prices.load())
    replica = survey.ReplicaPlan("v5e:4x4", 3.0, "video: text encoder, 30 steps, VAE decode, "
                                 "reshards", "p @ q", step_s=alone, steps=30)
    row = survey.row_of(request, s, 1, replica, run)
    assert row.priced and row.latency_s == pytest.approx(3.0, rel=1e-9)
    assert row.pricing.startswith("together: the 16 replicas simulated at once on v5e:16x16")
    assert "1.0000 x the plan's alone on v5e:4x4" in row.pricing
    # A slower forward together moves each of the 30 steps, not the stages around the loop.
    slow = together.Together(tuple(1.5 * alone for _ in range(16)))
    assert survey.row_of(request, s, 1, replica, slow).latency_s == pytest.approx(
        3.0 + 30 * 0.5 * alone, rel=1e-9)


def test_loop_extrapolation_keeps_the_contention_of_replicas_that_start_together():
    # layers_scan's loop of 4 trips, replicas interleaved on a v5e:4x4 (they contend): the
    # 4th trip extrapolated from the 3rd gives what simulating every trip gives.
    g = _fixture("layers_scan.v5e_2x4.hlo")
    slice_ = _core.make_topology("v5e:4x4")
    even = [2 * (p % 2) + 4 * (p // 2) for p in range(8)]
    orders = [even, [d + 1 for d in even]]
    every = together.simulate(g, slice_, orders, max_iterations=0)
    extrapolated = together.simulate(g, slice_, orders, max_iterations=3)
    assert every.slowest > 1.4 * _core.simulate(g, slice_, even).step_seconds   # 266 vs 182 us
    assert extrapolated.seconds == pytest.approx(every.seconds, rel=1e-12)

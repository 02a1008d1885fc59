"""Planning at pod scale: what the planner bounds before any work (candidate_filter.bounded_rings),
so that a slice of thousands of devices is planned, not left running."""

from __future__ import annotations

import json

from aoizora.planning import candidate_filter, planner
from aoizora.compile.compile_target import compile_target_for
from aoizora.models import get_model, get_workload
from aoizora.planning.run_state import RING, Run
from aoizora.planning.stage2 import Stage2


class Notes(planner.Progress):
    def __init__(self):
        self.lines = []

    def note(self, text):
        self.lines.append(text)


def test_a_10000_device_grid_plans_no_ring_longer_than_the_bound(tmp_path):
    """A 100x100 v5e grid: Ulysses 2 x ring 5000 lowered to about 3 GB of text and filled
    the machine's memory before lowering ended. Every ring over MAX_RING_STEPS is left out,
    each in planning.skipped with its length, in one line on screen; shorter ones stay."""
    path = tmp_path / "grid100.json"
    path.write_text(json.dumps({"name": "grid100", "generation": "v5e", "dims": [100, 100],
                                "wrap": [False, False]}))
    stage2 = Stage2.for_topology(str(path))
    notes = Notes()
    run = Run(planner.Settings(cache=None), notes, get_model("wan-tiny"),
              get_workload("tiny"), stage2, compile_target_for(stage2.topology))
    kept = candidate_filter.enumerate_candidates(run, "wan-tiny")
    assert kept and max(c.ring for c in kept) <= candidate_filter.MAX_RING_STEPS
    assert "ag10000" in {c.name for c in kept}                 # the other forms stay
    long = [s for s in run.skipped if "steps, over the" in s]
    assert any(s.startswith("usp2x5000: a ring of 5000 steps") for s in long)
    assert {s.kind for s in run.skips if s.reason.startswith("a ring of")} == {RING}
    said = [n for n in notes.lines if n.startswith("left out")]
    assert len(said) == 1 and f"left out {len(long)} of " in said[0]
    assert "longest 10000" in said[0]


def test_a_slice_whose_rings_fit_loses_nothing():
    """v5e:2x4: no ring reaches the bound, nothing is left out."""
    stage2 = Stage2.for_topology("v5e:2x4")
    run = Run(planner.Settings(cache=None), Notes(), get_model("wan-tiny"),
              get_workload("tiny"), stage2, compile_target_for(stage2.topology))
    candidate_filter.enumerate_candidates(run, "wan-tiny")
    assert not any("steps, over the" in s for s in run.skipped)


def test_a_slice_libtpu_cannot_compile_for_is_refused_before_any_work(tmp_path, monkeypatch):
    """v5e at 32x8: libtpu describes it but aborts compiling (chip_bounds <= 16 per axis),
    after lowering and Stage 1; refused in one line, nothing lowered. 16x16 is planned."""
    import pytest

    from aoizora.errors import UserError

    path = tmp_path / "wide.json"
    path.write_text(json.dumps({"name": "wide", "generation": "v5e", "dims": [32, 8],
                                "wrap": [False, False]}))
    monkeypatch.setattr(candidate_filter, "enumerate_candidates",
                        lambda *a: pytest.fail("work was started"))
    with pytest.raises(UserError, match=r"at most 16 chips along an axis, this slice has 32 "
                                        r"\(v5e:32x8\)") as e:
        planner.plan("wan-tiny", "tiny", None, str(path), planner.Settings(cache=None))
    assert "\n" not in str(e.value)
    with pytest.raises(pytest.fail.Exception, match="work was started"):
        planner.plan("wan-tiny", "tiny", None, "v5e:16x16", planner.Settings(cache=None))

"""A plan's shared state (planning/run_state.py): skipped candidates are typed records, and
plan.json's planning.skipped is rendered from them, one "<name>: <reason>" line each."""

from __future__ import annotations

import dataclasses

import pytest

from aoizora.planning.run_state import COMPILE, FULL_COMPILE, KERNEL, NOT_COMPILED, Run, Skip
from aoizora.planning.settings import Progress, Settings


class Notes(Progress):
    def __init__(self):
        self.lines = []

    def note(self, text):
        self.lines.append(text)


def _run(progress=None) -> Run:
    return Run(Settings(cache=None), progress or Progress(), None, None, None, None)


def test_skipped_lines_keep_the_order_and_the_reason_verbatim():
    run = _run()
    run.skip("dp2-ag2", KERNEL, "dp2-ag2: splash needs sequence lengths of 128s", say=False)
    run.skip("uly4", COMPILE, "compile failed: RESOURCE_EXHAUSTED: 17 GiB", say=False)
    assert run.skipped == ["dp2-ag2: dp2-ag2: splash needs sequence lengths of 128s",
                           "uly4: compile failed: RESOURCE_EXHAUSTED: 17 GiB"]
    assert [s.kind for s in run.skips] == [KERNEL, COMPILE]


def test_skip_reason_matches_the_exact_name_and_the_first_skip():
    """A name that prefixes another ("ag4" of "ag4w") does not take its reason; a sharding
    skipped twice (analysed, then refused in full) gives the first reason."""
    run = _run()
    run.skip("ag4w", COMPILE, "compile failed: w", say=False)
    assert run.skip_reason("ag4") == NOT_COMPILED
    run.skip("ag4", COMPILE, "compile failed: first", say=False)
    run.skip("ag4", FULL_COMPILE, "full compile failed: second", say=False)
    assert run.skip_reason("ag4") == "compile failed: first"


def test_a_skip_is_said_on_the_terminal_unless_told_not_to():
    notes = Notes()
    run = _run(notes)
    run.skip("a", COMPILE, "compile failed: x")
    run.skip("b", COMPILE, "compile failed: y", say=False)
    assert notes.lines == ["skipped a: compile failed: x"]


def test_a_skip_is_hashable_and_immutable():
    s = Skip("a", KERNEL, "why")
    assert {s: 1}[Skip("a", KERNEL, "why")] == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.reason = "other"

"""Our HLO parser against XLA's (jaxlib._hlo.hlo_module_from_text) on real HLO rewritten the
ways XLA's parser allows (attribute lists wrapped at commas, comments, inferable shapes left
out, operands nested inline, ENTRY moved last) and refuses (unknown operand, duplicate
computation, cut text): a small fixed-seed sample of fuzz/hlo_differential.py."""

from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "fuzz"))
import hlo_differential  # noqa: E402


@pytest.fixture(scope="module")
def cases():
    seeds = hlo_differential.seed_texts(ROOT, with_jax=False)
    rewritten = list(hlo_differential.variants(seeds, 120, seed=21))
    xla = hlo_differential.xla([t for _, t in rewritten])
    return [(steps, hlo_differential.ours(t), x) for (steps, t), x in zip(rewritten, xla)]


def test_both_parsers_accept_and_refuse_the_same_rewrites(cases):
    assert len(cases) == 120
    refused = sum(not x.get("parse") for _, _, x in cases)
    assert 10 <= refused <= 60  # the refusing rewrites are in the sample
    wrong = [(s, o.get("error"), x.get("error")) for s, o, x in cases
             if o["parse"] != bool(x.get("parse"))]
    assert wrong == []


def test_both_parsers_build_the_same_instructions_where_both_accept(cases):
    # Async-wrapped opcodes (`slice-start` in the TPU fixtures) included: both parsers build
    # an async-start and a wrapped computation for them.
    both = [(s, o, x) for s, o, x in cases if o["parse"] and x.get("parse")]
    assert len(both) >= 60
    wrong = [s for s, o, x in both
             if (o["computations"], o["instructions"], o["opcodes"])
             != (x["computations"], x["instructions"], x["opcodes"])]
    assert wrong == []

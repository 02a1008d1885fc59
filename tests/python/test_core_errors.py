"""The C++ core's errors reach Python as one class per kind (aoizora/errors.py, from
base/status.h's ErrorCode), each an aoizora._core.CoreError and so a ValueError: a caller
catches the kind it expects, and `except _core.CoreError` still catches them all."""

import os

import pytest

from aoizora import _core, errors

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "hlo")
KINDS = (errors.ParseError, errors.InvalidArgumentError, errors.NotFoundError,
         errors.UnsupportedError, errors.InternalError)


def test_core_error_is_the_errors_module_class_and_each_kind_derives_from_it():
    assert _core.CoreError is errors.CoreError
    for kind in KINDS:
        assert issubclass(kind, _core.CoreError) and issubclass(kind, ValueError)
    assert len(set(KINDS)) == len(KINDS)


def test_malformed_hlo_is_a_parse_error_with_its_position():
    text = "HloModule m\n\nENTRY %e (p: f32[4]) -> f32[4] {\n  ROOT %p = f32[4]{0 parameter(0)\n}\n"
    with pytest.raises(errors.ParseError, match=r"^x\.hlo:4:\d+: expected"):
        _core.load_hlo(text, "x.hlo")


def test_a_missing_file_or_name_is_not_found():
    with pytest.raises(errors.NotFoundError):
        _core.load_hlo_file("/nonexistent.hlo")
    with pytest.raises(errors.NotFoundError, match="unknown topology"):
        _core.make_topology("v9z:2x2")


def test_a_placement_that_breaks_a_rule_is_an_invalid_argument():
    graph = _core.load_hlo_file(os.path.join(DATA, "ring_alltoall.v5e_2x4.hlo"))
    with pytest.raises(errors.InvalidArgumentError, match="two partitions"):
        _core.simulate(graph, "v5e:2x4", [0] * 8)
    with pytest.raises(errors.InvalidArgumentError, match="unknown option"):
        _core.simulate(graph, "v5e:2x4", list(range(8)), overhead=1)

"""recipe.py: one named sharding compiled for a TPU target outside a plan, and its step split
on JAX's default order (what calibration/programs/compile.py and bench/recipe_step.py use)."""

import pytest

from aoizora.planning import recipe
from aoizora.errors import UserError


def test_a_named_candidate_compiles_for_the_tpu_and_its_split_adds_up():
    text = recipe.compile_candidate("wan-tiny", "tiny", None, "v5e:2x2", "dp2-ag2")
    assert "num_partitions=4" in text and "custom_call_target=\"tpu_custom_call\"" in text
    split = recipe.default_order_split(text, "v5e:2x2", [2, 2])
    assert "unattributed" not in split["forward_s"]  # the critical path covers the step
    assert split["step_s"] == pytest.approx(sum(split["forward_s"].values()), rel=1e-6)
    assert 0 < split["peak_flops_s"] < split["forward_s"]["compute"]


def test_an_unknown_candidate_is_one_line_naming_the_legal_ones():
    with pytest.raises(UserError, match=r"no candidate 'dp3-ag9' of wan-tiny on v5e:2x2: one of .*dp2-ag2"):
        recipe.compile_candidate("wan-tiny", "tiny", None, "v5e:2x2", "dp3-ag9")

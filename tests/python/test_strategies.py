"""The sharding space: legality, counts (closed form for small N), baselines, and numerical
equality of every strategy kind on 8 CPU devices with the 1-device output."""

import math

import jax
import numpy as np
import pytest

from aoizora.planning import strategies as S
from aoizora.models import get_model, get_workload, wan


@pytest.fixture(scope="module")
def big():
    return get_model("wan2.1-t2v-14b"), get_workload("720p", 81)


def test_two_chips_closed_form(big):
    # (data1,fsdp1): context 2 x {allgather_kv, ring, ulysses} x {weights over context or not}
    # = 6, plus tensor 2; (fsdp2); (data2). 9 in all.
    names = sorted(c.name for c in S.enumerate_candidates(*big, 2))
    assert names == sorted(["ag2", "ag2w", "ring2", "ring2w", "uly2", "uly2w", "tp2", "fsdp2",
                            "dp2"])


@pytest.mark.parametrize("n", [4, 8, 16])
@pytest.mark.parametrize("model", ["wan2.1-t2v-1.3b", "wan2.1-t2v-14b"])
def test_every_candidate_is_legal_and_unique(model, n):
    cfg, w = get_model(model), get_workload("480p", 41)
    cands = S.enumerate_candidates(cfg, w, n)
    assert len({c.name for c in cands}) == len(cands) == len(set(cands))
    for c in cands:
        assert c.n_chips == n == math.prod(c.mesh_shape)
        assert len(c.axis_names) == len(c.mesh_shape)
        assert cfg.heads % (c.tensor * c.ulysses) == 0
        assert c.data * c.fsdp <= 2 and w.batch % (c.data * c.fsdp) == 0
        assert (c.form == "none") == (c.context == 1)
        assert cfg.padded_len(w, c.context) % c.context == 0
        assert S.Candidate.from_dict(c.to_dict()) == c
    # 1.3B's 12 heads forbid 8- and 16-way Ulysses; 14B's 40 heads allow 8 but not 16
    uly = {c.context for c in cands if c.form == "ulysses" and c.tensor == 1 and c.data == 1
           and c.fsdp == 1}
    assert (n in uly) == (cfg.heads % n == 0)


def test_padding_when_the_sequence_does_not_divide():
    cfg, w = get_model("wan2.1-t2v-14b"), get_workload("480p", 41)  # 17160 tokens
    c = next(c for c in S.enumerate_candidates(cfg, w, 16) if c.name == "ring16")
    # whole sequence to a multiple of 128, each of 16 shards to a multiple of 8: lcm = 128
    assert S.padding(c, cfg, w) == 17280 - 17160
    assert cfg.padded_len(w, 16) % (16 * 8) == 0 and cfg.padded_len(w, 1) == 17280


def test_baselines_are_members_of_the_space(big):
    b8 = S.baseline_shardings(*big, 8)
    assert b8[S.MAXDIFFUSION_DEFAULT].name == "ag8w"
    assert b8[S.MAXDIFFUSION_CFG].name == "dp2-ag4w"  # MaxDiffusion's data 2 x context 4
    assert b8[S.XDIT_USP].name == "dp2-usp2x2"
    assert b8[S.WAN_OFFICIAL].name == "uly8w"
    b16 = S.baseline_shardings(*big, 16)
    assert b16[S.XDIT_USP].name == "dp2-usp4x2"      # 40 heads: Ulysses 4 (8 does not divide)
    assert S.WAN_OFFICIAL not in b16                  # 16 does not divide 40 heads
    b4 = S.baseline_shardings(*big, 4)
    assert b4[S.XDIT_USP].name == "usp2x2"            # CFG 2 would leave no ring
    assert S.MAXDIFFUSION_CFG in b4 and b4[S.MAXDIFFUSION_CFG].name == "dp2-ag2w"


def test_rules_map_logical_axes(big):
    c = next(c for c in S.enumerate_candidates(*big, 16) if c.name == "fsdp2-usp2x2w-tp2")
    assert c.axis_names == ("fsdp", "ring", "ulysses", "tensor")
    assert c.rules["length"] == ("ring", "ulysses")
    assert c.rules["fsdp"] == ("fsdp", "ring", "ulysses")
    assert c.rules["batch"] == ("fsdp",) and c.rules["heads"] == ("tensor",)
    assert c.kinds == ("fsdp", "context:ulysses_ring", "tensor")


# One candidate per strategy kind (and the padding path: 36 tokens over 8 ranks).
KINDS = ["dp2-ag4w", "fsdp2-ring2-tp2", "dp2-uly4", "usp2x4w", "ring8"]


@pytest.fixture(scope="module")
def tiny_ref():
    cfg, w = get_model("wan-tiny"), get_workload("tiny")
    params = wan.init_params(cfg, jax.random.key(0))
    args = [jax.random.normal(jax.random.key(i + 1), s.shape, s.dtype)
            for i, s in enumerate(cfg.abstract_inputs(w))]
    ref = jax.jit(lambda p, *a: cfg.apply(p, *a, workload=w))(params, *args)
    return cfg, w, params, args, np.asarray(ref)


def test_the_chosen_candidates_cover_every_kind():
    cfg, w = get_model("wan-tiny"), get_workload("tiny")
    by = {c.name: c for c in S.enumerate_candidates(cfg, w, 8)}
    kinds = {k for n in KINDS for k in by[n].kinds}
    assert kinds == {"data", "fsdp", "tensor", "context:allgather_kv", "context:ring",
                     "context:ulysses", "context:ulysses_ring"}


@pytest.mark.parametrize("name", KINDS)
def test_sharded_tiny_wan_equals_one_device(tiny_ref, name):
    cfg, w, params, args, ref = tiny_ref
    c = next(c for c in S.enumerate_candidates(cfg, w, 8) if c.name == name)
    layout = S.layout_for(c, S.make_mesh(c, jax.devices("cpu")[:8]), cfg)
    shardings = jax.tree.map(lambda a, x: layout.sharding(a, x.shape), cfg.param_axes(), params,
                             is_leaf=lambda a: isinstance(a, tuple))
    fn = jax.jit(lambda p, *a: cfg.apply(p, *a, workload=w, layout=layout))
    out = fn(jax.device_put(params, shardings), *args)
    assert len(out.sharding.device_set) == 8
    assert np.abs(np.asarray(out) - ref).max() < 1e-4


@pytest.mark.parametrize("name", ["dp2-uly4", "ag2-tp4", "uly2-tp4"])
def test_maxdiffusion_runtime_runs_the_same_function_as_another_program(tiny_ref, name):
    """As MaxDiffusion runs it (heads whole over tensor, Ulysses cross-attention) the tiny Wan
    computes the same output, and the program differs where the runtime says it does: the
    Ulysses form gains the cross-attention's all-to-alls, a tensor split keeps the attention's
    heads whole (no all-to-all over tensor, fewer heads' collectives)."""
    cfg, w, params, args, ref = tiny_ref
    hlo = {}
    for runtime in ("jax", "maxdiffusion"):
        c = next(c for c in S.enumerate_candidates(cfg, w, 8, runtime) if c.name == name)
        layout = S.layout_for(c, S.make_mesh(c, jax.devices("cpu")[:8]), cfg)
        shardings = jax.tree.map(lambda a, x: layout.sharding(a, x.shape), cfg.param_axes(),
                                 params, is_leaf=lambda a: isinstance(a, tuple))
        fn = jax.jit(lambda p, *a: cfg.apply(p, *a, workload=w, layout=layout))
        out = fn(jax.device_put(params, shardings), *args)
        assert np.abs(np.asarray(out) - ref).max() < 1e-4, runtime
        hlo[runtime] = fn.lower(jax.device_put(params, shardings), *args).as_text()
    assert hlo["jax"] != hlo["maxdiffusion"]
    if name == "dp2-uly4":
        assert hlo["maxdiffusion"].count("all_to_all") > hlo["jax"].count("all_to_all")

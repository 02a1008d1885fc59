"""Wan 2.1 in JAX: shapes and parameter counts (abstract only), token counts, blockwise
attention against the naive softmax, RoPE's 3-way split, scan == unrolled."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aoizora.models import attention, get_model, get_workload, paper_workloads, wan


def closed_form_params(d, f, layers, text_dim=4096, freq_dim=256, patch_in=64, out=64):
    """Parameter count of Wan 2.1 T2V from its architecture (REFERENCE.md §3)."""
    lin = lambda i, o: i * o + o
    attn = 4 * lin(d, d) + 2 * d                 # q,k,v,o + RMSNorm q,k
    block = 2 * attn + 2 * d + lin(d, f) + lin(f, d) + 6 * d  # + norm3 affine + modulation
    embed = (lin(patch_in, d) + lin(text_dim, d) + lin(d, d) + lin(freq_dim, d) + lin(d, d)
             + lin(d, 6 * d) + lin(d, out) + 2 * d)
    return layers * block + embed


@pytest.mark.parametrize("name,d,f,layers,approx", [
    ("wan2.1-t2v-1.3b", 1536, 8960, 30, 1.42e9),
    ("wan2.1-t2v-14b", 5120, 13824, 40, 14.29e9),
])
def test_parameter_counts_match_the_architecture_and_reference(name, d, f, layers, approx):
    cfg = get_model(name)
    n = cfg.param_count()  # abstract: jax.eval_shape, nothing allocated
    assert n == closed_form_params(d, f, layers)
    assert abs(n - approx) / approx < 0.005
    params = cfg.abstract_params()
    assert isinstance(jax.tree.leaves(params)[0], jax.ShapeDtypeStruct)
    assert params["blocks"]["ffn1"]["w"].shape == (layers, d, f)
    assert params["blocks"]["self_attn"]["q"]["w"].shape == (layers, d, d)
    assert params["head"]["head"]["w"].shape == (d, 64)
    assert cfg.head_dim == 128
    # 14B in bf16 is 28.6 GB
    if name.endswith("14b"):
        assert abs(n * 2 / 1e9 - 28.6) < 0.1


def test_token_counts_of_the_paper_workloads():
    cfg = get_model("wan2.1-t2v-14b")
    got = {w.name: cfg.seq_len(w) for w in paper_workloads()}
    assert got == {"480p-21f": 9360, "480p-41f": 17160, "480p-81f": 32760,
                   "720p-21f": 21600, "720p-41f": 39600, "720p-81f": 75600}
    x, t, ctx = cfg.abstract_inputs(get_workload("720p", 81))
    assert x.shape == (2, 16, 21, 90, 160) and t.shape == (2,) and ctx.shape == (2, 512, 4096)


def test_block_proxy_keeps_every_shape_but_the_layer_count():
    full, proxy = get_model("wan2.1-t2v-14b"), get_model("wan2.1-t2v-14b", blocks=2)
    fa, pa = full.abstract_params(), proxy.abstract_params()
    for (path, a), (_, b) in zip(jax.tree_util.tree_leaves_with_path(fa),
                                 jax.tree_util.tree_leaves_with_path(pa)):
        if "blocks" in jax.tree_util.keystr(path):
            assert b.shape == (2,) + a.shape[1:]
        else:
            assert b.shape == a.shape
    assert proxy.name == "wan2.1-t2v-14b@2blocks"


@pytest.mark.parametrize("sq,sk,valid,qb,kb", [(24, 40, None, 8, 16), (24, 40, 33, 5, 7),
                                               (16, 16, 9, 16, 4)])
def test_blockwise_attention_equals_naive_softmax(sq, sk, valid, qb, kb):
    ks = jax.random.split(jax.random.key(1), 3)
    q = jax.random.normal(ks[0], (2, sq, 3, 16))
    k = jax.random.normal(ks[1], (2, sk, 3, 16))
    v = jax.random.normal(ks[2], (2, sk, 3, 16))
    got = attention.local(q, k, v, kv_valid=valid, q_block=qb, kv_block=kb)
    want = attention.reference(q, k, v, kv_valid=valid)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=2e-5)
    if valid is not None:  # the mask matters: unmasked attention differs
        assert np.abs(np.asarray(attention.reference(q, k, v)) - np.asarray(want)).max() > 1e-3


def test_rope_splits_head_dim_44_42_42_over_time_height_width():
    cfg = get_model("wan2.1-t2v-14b")
    cos, sin = wan.rope_tables(cfg, (2, 3, 4), padded=26)
    ang = np.arctan2(np.asarray(sin), np.asarray(cos))[:24].reshape(2, 3, 4, 64)
    # pair 0 of each group has inverse frequency 1: angle = position along its own axis
    assert np.allclose(ang[1, 2, 3, 0], 1) and np.allclose(ang[1, 2, 3, 22], 2)
    assert np.allclose(ang[1, 2, 3, 43], 3)
    # time columns (22 pairs = 44 dims) depend on the frame only, and so on
    assert np.allclose(ang[:, 0, 0, :22], ang[:, 2, 3, :22])
    assert np.allclose(ang[0, :, 0, 22:43], ang[1, :, 3, 22:43])
    assert np.allclose(ang[0, 0, :, 43:], ang[1, 2, :, 43:])
    assert not np.allclose(ang[0, 0, 1, 43:], ang[0, 0, 2, 43:])
    assert np.all(np.asarray(cos)[24:] == 1)  # padded rows: no rotation


def test_tiny_forward_shapes_cfg_and_scan_equals_unrolled():
    cfg = get_model("wan-tiny")
    w = get_workload("tiny")
    params = wan.init_params(cfg, jax.random.key(0))
    args = [jax.random.normal(jax.random.key(i + 1), s.shape, s.dtype)
            for i, s in enumerate(cfg.abstract_inputs(w))]
    out = jax.jit(lambda p, *a: cfg.apply(p, *a, workload=w))(params, *args)
    assert out.shape == (16, 3, 6, 8)  # CFG pair combined into one prediction
    unrolled = cfg.replace(scan=False)
    out2 = jax.jit(lambda p, *a: unrolled.apply(p, *a, workload=w))(params, *args)
    np.testing.assert_allclose(np.asarray(out), np.asarray(out2), atol=1e-5)
    both = w.__class__(**{**w.key(), "guidance": None})
    pair = jax.jit(lambda p, *a: cfg.apply(p, *a, workload=both))(params, *args)
    assert pair.shape == (2, 16, 3, 6, 8)
    g = w.guidance
    np.testing.assert_allclose(np.asarray(out), np.asarray(pair[1] + g * (pair[0] - pair[1])),
                               atol=1e-4)
    assert not np.allclose(np.asarray(pair[0]), np.asarray(pair[1]))

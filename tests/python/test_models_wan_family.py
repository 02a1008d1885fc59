"""The Wan family beyond 2.1 T2V: 2.1 I2V-14B (image conditioning), 2.2 A14B T2V and I2V (two
experts), 2.2 TI2V-5B (its own VAE grid, a timestep per token).

Counts are diffusers' (WanTransformer3DModel with the configs of
scripts/convert_wan_to_diffusers.py), counted here from abstract shapes (jax.eval_shape).
Every preset's 1-block proxy is lowered for a v5e:2x2 slice and read by Stage 1; the
two-expert presets' resident weights are checked in Stage 1's memory figures."""

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aoizora.models import WanExperts, attention, default_video, get_model, get_workload, wan
from aoizora.models.base import LocalLayout

# diffusers' parameter counts (one transformer; an A14B model has two of them).
DIFFUSERS_COUNTS = {
    "wan2.1-i2v-14b": 16_394_878_784,
    "wan2.2-ti2v-5b": 4_999_787_712,
}
EXPERT_COUNTS = {  # one expert of the A14B models
    "wan2.2-t2v-a14b": 14_288_491_584,  # = the Wan 2.1 T2V 14B transformer
    "wan2.2-i2v-a14b": 14_288_901_184,
}


@pytest.mark.parametrize("name,count", sorted(DIFFUSERS_COUNTS.items()))
def test_parameter_count_equals_diffusers(name, count):
    assert get_model(name).param_count() == count


@pytest.mark.parametrize("name,count", sorted(EXPERT_COUNTS.items()))
def test_each_expert_counts_as_in_diffusers_and_the_model_holds_two(name, count):
    cfg = get_model(name)
    assert cfg.experts == 2 and cfg.resident == 2
    assert cfg.expert_param_count() == count
    assert cfg.param_count() == 2 * count
    # both experts resident in bf16: the bytes the memory check must hold
    assert cfg.resident_weight_bytes() == 2 * count * 2
    assert cfg.replace(resident=1).resident_weight_bytes() == count * 2
    with pytest.raises(ValueError, match="resident experts"):
        cfg.replace(resident=3)


def test_the_plan_records_that_it_serves_both_experts():
    from aoizora.planning.plan_record import model_facts

    cfg = get_model("wan2.2-i2v-a14b")
    assert model_facts(cfg) == {"experts": 2, "resident_experts": 2,
                                 "expert_params": 14_288_901_184, "boundary_ratio": 0.9,
                                 "plan_serves_every_expert": True}
    assert model_facts(cfg.replace(resident=1))["resident_experts"] == 1
    assert model_facts(get_model("wan2.1-t2v-14b")) == {}


def test_t2v_a14b_expert_has_the_wan21_t2v_14b_shapes():
    expert = get_model("wan2.2-t2v-a14b").abstract_params()[0]
    t2v = get_model("wan2.1-t2v-14b").abstract_params()
    shapes = lambda tree: jax.tree.map(lambda a: (a.shape, str(a.dtype)), tree)
    assert shapes(expert) == shapes(t2v)


def test_i2v_14b_shapes_follow_diffusers():
    p = get_model("wan2.1-i2v-14b").abstract_params()
    # Conv3d(36, 5120, kernel (1,2,2)) as a Linear over flattened patches; head to 16 x 4
    assert p["patch_embedding"]["w"].shape == (36 * 4, 5120)
    assert p["head"]["head"]["w"].shape == (5120, 16 * 4)
    # WanImageEmbedding: LayerNorm(1280) -> Linear(1280,1280) -> GELU -> Linear(1280,5120)
    # -> LayerNorm(5120), affine norms
    ie = jax.tree.map(lambda a: a.shape, p["image_embedding"])
    assert ie == {"norm1": {"w": (1280,), "b": (1280,)},
                  "l1": {"w": (1280, 1280), "b": (1280,)},
                  "l2": {"w": (1280, 5120), "b": (5120,)},
                  "norm2": {"w": (5120,), "b": (5120,)}}
    cross, self_attn = p["blocks"]["cross_attn"], p["blocks"]["self_attn"]
    # add_k_proj / add_v_proj with bias, norm_added_k over the full dim; cross-attention only
    assert cross["k_img"]["w"].shape == cross["v_img"]["w"].shape == (40, 5120, 5120)
    assert cross["k_img"]["b"].shape == cross["v_img"]["b"].shape == (40, 5120)
    assert cross["norm_k_img"].shape == (40, 5120)
    assert "k_img" not in self_attn
    x, t, text, clip = get_model("wan2.1-i2v-14b").abstract_inputs(get_workload("480p", 81))
    assert x.shape == (2, 36, 21, 60, 104) and clip.shape == (2, 257, 1280)


def test_i2v_a14b_expert_has_36_channels_and_no_image_branch():
    cfg = get_model("wan2.2-i2v-a14b")
    p = cfg.abstract_params()
    assert len(p) == 2 and jax.tree.structure(p[0]) == jax.tree.structure(p[1])
    assert p[0]["patch_embedding"]["w"].shape == (36 * 4, 5120)
    assert "image_embedding" not in p[0] and "k_img" not in p[0]["blocks"]["cross_attn"]
    assert len(cfg.abstract_inputs(cfg.video("720p", 81))) == 3  # no CLIP tokens


def test_ti2v_5b_shapes_and_its_vae_grid():
    cfg = get_model("wan2.2-ti2v-5b")
    assert (cfg.dim, cfg.ffn_dim, cfg.heads, cfg.layers, cfg.head_dim) == (3072, 14336, 24, 30,
                                                                            128)
    p = cfg.abstract_params()
    assert p["patch_embedding"]["w"].shape == (48 * 4, 3072)
    assert p["head"]["head"]["w"].shape == (3072, 48 * 4)
    w = get_workload("720p", 121, model="wan2.2-ti2v-5b")
    assert (w.height, w.width, w.frames, w.vae_stride) == (704, 1280, 121, (4, 16, 16))
    assert w.latent_shape() == (31, 44, 80)
    assert cfg.seq_len(w) == w.tokens == 31 * 22 * 40 == 27_280
    x, t, text = cfg.abstract_inputs(w)
    assert x.shape == (2, 48, 31, 44, 80) and t.shape == (2, 27_280)
    assert text.shape == (2, 512, 4096)
    # the same name on Wan 2.1's grid is another workload: 1280x720, stride 8, 4x the tokens
    assert get_workload("720p", 121).tokens == 31 * 45 * 80
    with pytest.raises(ValueError, match="720p"):
        cfg.video("480p", 121)  # Wan 2.2 TI2V-5B is made for 1280x704 only


def test_default_workloads_of_every_preset():
    got = {n: [(w.name, w.height, w.width, w.tokens) for w in get_model(n).default_workloads()]
           for n in ("wan2.1-i2v-14b", "wan2.2-t2v-a14b", "wan2.2-i2v-a14b", "wan2.2-ti2v-5b")}
    wan21 = [("480p-81f", 480, 832, 32_760), ("720p-81f", 720, 1280, 75_600)]
    assert got == {"wan2.1-i2v-14b": wan21, "wan2.2-t2v-a14b": wan21,
                   "wan2.2-i2v-a14b": wan21,
                   "wan2.2-ti2v-5b": [("720p-121f", 704, 1280, 27_280)]}
    assert get_model("wan2.2-ti2v-5b").fps == 24
    assert default_video("wan2.2-ti2v-5b") == "720p" and default_video("wan2.1-t2v-14b") == "480p"


def test_boundary_switches_experts_at_875_and_900():
    t2v, i2v = get_model("wan2.2-t2v-a14b"), get_model("wan2.2-i2v-a14b")
    assert (t2v.boundary_ratio, i2v.boundary_ratio) == (0.875, 0.900)
    assert [t2v.expert_for(t) for t in (999, 875, 874.9, 0)] == [0, 0, 1, 1]
    assert [i2v.expert_for(t) for t in (999, 900, 880, 0)] == [0, 0, 1, 1]


# ---- numerics on tiny variants ------------------------------------------------------------

def _tiny(**kw):
    return get_model("wan-tiny").replace(**kw)


def _inputs(cfg, w, seed=1):
    return [jax.random.normal(jax.random.key(seed + i), s.shape, s.dtype)
            for i, s in enumerate(cfg.abstract_inputs(w))]


def _run(cfg, params, args, w):
    return np.asarray(jax.jit(lambda p, *a: cfg.apply(p, *a, workload=w))(params, *args))


def test_image_keys_have_their_own_softmax_summed_before_the_output_projection():
    cfg = _tiny(in_dim=36, image_dim=24, image_len=5)
    p = jax.tree.map(lambda a: a[0], wan.init_params(cfg, jax.random.key(0))["blocks"])
    p = p["cross_attn"]
    ks = jax.random.split(jax.random.key(3), 3)
    x = jax.random.normal(ks[0], (2, 12, cfg.dim))
    ctx = jax.random.normal(ks[1], (2, 16, cfg.dim))
    img = jax.random.normal(ks[2], (2, 5, cfg.dim))
    got = wan._cross_attention(cfg, LocalLayout(), p, x, ctx, img)

    def lin(q, a):
        return a @ q["w"] + q["b"]

    def rms(a, w):
        return a / jnp.sqrt(jnp.mean(a * a, -1, keepdims=True) + cfg.eps) * w

    heads = lambda a: a.reshape(*a.shape[:2], cfg.heads, cfg.head_dim)
    q = heads(rms(lin(p["q"], x), p["norm_q"]))
    text = attention.reference(q, heads(rms(lin(p["k"], ctx), p["norm_k"])),
                               heads(lin(p["v"], ctx)))
    image = attention.reference(q, heads(rms(lin(p["k_img"], img), p["norm_k_img"])),
                                heads(lin(p["v_img"], img)))
    want = lin(p["o"], (text + image).reshape(x.shape))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=2e-5)
    # one joint softmax over text and image keys would be another function
    joint = attention.reference(q, jnp.concatenate(
        [heads(rms(lin(p["k_img"], img), p["norm_k_img"])),
         heads(rms(lin(p["k"], ctx), p["norm_k"]))], 1),
        jnp.concatenate([heads(lin(p["v_img"], img)), heads(lin(p["v"], ctx))], 1))
    assert not np.allclose(np.asarray(lin(p["o"], joint.reshape(x.shape))), np.asarray(want),
                           atol=1e-3)


def test_i2v_forward_reads_the_image_tokens():
    cfg, w = _tiny(in_dim=36, image_dim=24, image_len=5), get_workload("tiny")
    params = wan.init_params(cfg, jax.random.key(0))
    x, t, text, clip = _inputs(cfg, w)
    out = _run(cfg, params, (x, t, text, clip), w)
    assert out.shape == (16, 3, 6, 8)  # 36 channels in, 16 out, CFG pair combined
    other = jax.random.normal(jax.random.key(9), clip.shape)  # (2 x clip: LayerNorm hides it)
    assert not np.allclose(out, _run(cfg, params, (x, t, text, other), w), atol=1e-4)


def test_per_token_timesteps_all_equal_give_the_per_sample_step():
    per_sample, w = _tiny(in_dim=48, out_dim=48), get_workload("tiny")
    per_token = per_sample.replace(per_token_time=True)
    params = wan.init_params(per_sample, jax.random.key(0))
    x, t, text = _inputs(per_sample, w)
    t = jnp.array([700.0, 700.0])
    s = per_token.seq_len(w)
    t_tok = jnp.broadcast_to(t[:, None], (2, s))
    assert per_token.abstract_inputs(w)[1].shape == (2, s)
    want = _run(per_sample, params, (x, t, text), w)
    np.testing.assert_allclose(_run(per_token, params, (x, t_tok, text), w), want, atol=2e-5)
    # the image-to-video step: the first latent frame (the image) at t = 0
    frame = s // w.latent_shape()[0]
    first_at_zero = t_tok.at[:, :frame].set(0.0)
    assert not np.allclose(_run(per_token, params, (x, first_at_zero, text), w), want,
                           atol=1e-4)


def test_experts_step_runs_the_first_expert_and_keeps_the_other():
    tiny = get_model("wan-tiny")
    cfg = WanExperts(**{f.name: getattr(tiny, f.name) for f in dataclasses.fields(tiny)})
    w = get_workload("tiny")
    high = wan.init_params(cfg.expert(), jax.random.key(0))
    low = wan.init_params(cfg.expert(), jax.random.key(1))
    args = _inputs(cfg, w)
    np.testing.assert_allclose(_run(cfg, (high, low), args, w), _run(tiny, high, args, w),
                               atol=1e-6)
    np.testing.assert_allclose(_run(cfg, (low, high), args, w), _run(tiny, low, args, w),
                               atol=1e-6)
    assert jax.tree.structure(cfg.abstract_params()) == jax.tree.structure((high, low))


# ---- lowering and Stage 1 ------------------------------------------------------------------

TARGET, CANDIDATE = "v5e:2x2", "ag4w"  # 4 chips; context 4, weights sharded over it


@functools.lru_cache(maxsize=None)
def _lowered(name: str, resident: int | None = None):
    from aoizora.compile import compiler
    from aoizora.planning import strategies

    cfg = get_model(name, blocks=1)
    if resident is not None:
        cfg = cfg.replace(resident=resident)
    wl = cfg.default_workloads()[0]
    cand = {c.name: c for c in strategies.enumerate_candidates(cfg, wl, 4)}[CANDIDATE]
    _, args = compiler.build(cand, cfg, wl, TARGET)
    per_device = lambda tree: sum(math.prod(a.sharding.shard_shape(a.shape)) * a.dtype.itemsize
                                  for a in jax.tree.leaves(tree))
    return compiler.lower(cand, cfg, wl, TARGET), per_device(args[0]), per_device(args[1:])


@pytest.mark.parametrize("name", ["wan2.1-i2v-14b", "wan2.2-t2v-a14b", "wan2.2-i2v-a14b",
                                  "wan2.2-ti2v-5b"])
def test_one_block_proxy_lowers_and_stage1_reads_it(name):
    from aoizora.planning import stage1

    text, weights, inputs = _lowered(name)
    r = stage1.analyze(CANDIDATE, text, TARGET)
    assert r.fits and r.flops > 0 and r.q1_seconds > 0
    # every weight and input is an argument with its sharding, counted per device
    assert r.param_bytes == weights + inputs
    assert "all-gather" in r.comm_bytes_by_kind  # K/V and the weights are gathered


def test_both_resident_experts_count_in_the_memory_check():
    from aoizora.planning import stage1

    one, w_one, _ = _lowered("wan2.1-t2v-14b")
    both, w_both, _ = _lowered("wan2.2-t2v-a14b")
    swapped, w_swapped, _ = _lowered("wan2.2-t2v-a14b", resident=1)
    r_one, r_both, r_swapped = (stage1.analyze(CANDIDATE, t, TARGET) for t in (one, both,
                                                                              swapped))
    assert w_both == 2 * w_one and w_swapped == w_one
    # the second expert's per-device bytes, exactly, on top of the same program
    assert r_both.param_bytes - r_one.param_bytes == w_one
    assert r_swapped.param_bytes == r_one.param_bytes
    # keep_unused also skips jax's dead-code pass inside loops: a dead carry or two more
    assert r_both.peak_activation_bytes == pytest.approx(r_one.peak_activation_bytes, rel=1e-2)
    # an HBM between the two needs: one expert fits, two resident do not
    hbm = (r_one.memory_bytes + r_both.memory_bytes) / 2
    assert stage1.analyze(CANDIDATE, one, hbm_bytes=hbm, hbm_usable_fraction=1.0).fits
    tight = stage1.analyze(CANDIDATE, both, hbm_bytes=hbm, hbm_usable_fraction=1.0)
    assert not tight.fits and "usable HBM" in tight.reject_reason


# ---- the command line ----------------------------------------------------------------------

NEW_PRESETS = ("wan2.1-i2v-14b", "wan2.2-t2v-a14b", "wan2.2-i2v-a14b", "wan2.2-ti2v-5b")


def test_cli_takes_every_preset_on_its_own_sizes_and_grid():
    from aoizora.inputs import validate
    from aoizora.cli import build_parser
    from aoizora.commands.plan import check_workload
    from aoizora.errors import UserError

    for name in NEW_PRESETS:
        args = build_parser().parse_args(["plan", "--model", name])
        check_workload(args)
        assert (args.video, args.frames) == (default_video(name), None)
    args = build_parser().parse_args(["plan", "--model", "wan2.2-ti2v-5b", "--frames", "121"])
    check_workload(args)
    cfg, wl = validate.workload(args.model, args.video, args.frames)
    assert (args.video, wl.height, wl.width, cfg.seq_len(wl)) == ("720p", 704, 1280, 27_280)
    with pytest.raises(UserError, match=r"wan2.2-ti2v-5b is made for 720p \(1280x704\)"):
        validate.workload("wan2.2-ti2v-5b", "480p", 21)
    with pytest.raises(UserError, match="unknown model 'wan2.3-t2v'.*wan2.2-ti2v-5b"):
        validate.workload("wan2.3-t2v", "480p", 21)

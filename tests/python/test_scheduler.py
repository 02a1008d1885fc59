"""models/scheduler.py beside diffusers' UniPCMultistepScheduler (Wan's configuration), run
step by step on small random latents with random "model outputs"; the expert switch of Wan
2.2; each preset's step count, checked against MaxDiffusion's configs (excerpts in
tests/data/maxdiffusion)."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aoizora.models import scheduler as S

# Every step's latents agree within this (measured: 8.3e-7 over 6 steps, values up to 3.2);
# each bug below moves some step's latents by 0.14 (no corrector) to 2.6 (off by one).
TOL = 1e-5
SHAPE = (1, 4, 2, 3, 5)  # [B, z, T, h, w]
MAXDIFFUSION_CONFIGS = os.path.join(os.path.dirname(__file__), "..", "data", "maxdiffusion")


def _diffusers(steps, shift, **options):
    from diffusers import UniPCMultistepScheduler

    # Wan's Diffusers checkpoints' scheduler_config (MaxDiffusion's tests mock it with these)
    s = UniPCMultistepScheduler(num_train_timesteps=1000, prediction_type="flow_prediction",
                                use_flow_sigmas=True, flow_shift=shift, **options)
    s.set_timesteps(steps)
    return s


def _random_run(steps, seed=0):
    rng = np.random.default_rng(seed)
    outs = rng.standard_normal((steps, *SHAPE)).astype(np.float32)
    return outs, rng.standard_normal(SHAPE).astype(np.float32)


def reference(steps, shift, outs, x, **options):
    """diffusers' latents after every step."""
    import torch

    s, x, out = _diffusers(steps, shift, **options), torch.from_numpy(x), []
    for i, t in enumerate(s.timesteps):
        x = s.step(torch.from_numpy(outs[i]), t, x).prev_sample
        out.append(x.numpy().copy())
    return np.array(out)


def ours(cfg, outs, x, *, index_offset=0):
    """Our latents after every step, the step jitted once with a traced index."""
    run = jax.jit(lambda st, m, x, i: S.step(cfg, st, m, x, i))
    state, x, out = S.init_state(jnp.asarray(x)), jnp.asarray(x), []
    for i in range(cfg.steps):
        x, state = run(state, jnp.asarray(outs[i]), x, i + index_offset)
        out.append(np.asarray(x))
    return np.array(out)


def _worst(a, b):
    return float(np.max(np.abs(a - b)))


@pytest.mark.parametrize("steps,shift", [(6, 3.0), (6, 12.0), (3, 5.0), (1, 5.0)])
def test_every_steps_latents_match_diffusers(steps, shift):
    outs, x = _random_run(steps)
    assert _worst(ours(S.FlowUniPC(steps, shift), outs, x),
                  reference(steps, shift, outs, x)) < TOL


@pytest.mark.parametrize("mine,theirs", [({"solver_order": 1}, {"solver_order": 1}),
                                         ({"corrector": False},
                                          {"disable_corrector": list(range(6))})])
def test_the_options_match_diffusers_with_the_same_options(mine, theirs):
    outs, x = _random_run(6)
    assert _worst(ours(S.FlowUniPC(6, 3.0, **mine), outs, x),
                  reference(6, 3.0, outs, x, **theirs)) < TOL


# ---- each plausible bug is far outside TOL ------------------------------------------------

@pytest.fixture(scope="module")
def wan_run():
    outs, x = _random_run(6, seed=1)
    return outs, x, reference(6, 5.0, outs, x)


def test_an_ignored_flow_shift_is_caught(wan_run):
    outs, x, ref = wan_run
    assert _worst(ours(S.FlowUniPC(6, 1.0), outs, x), ref) > 100 * TOL


def test_order_one_instead_of_two_is_caught(wan_run):
    outs, x, ref = wan_run
    assert _worst(ours(S.FlowUniPC(6, 5.0, solver_order=1), outs, x), ref) > 100 * TOL


def test_a_missing_corrector_is_caught(wan_run):
    outs, x, ref = wan_run
    assert _worst(ours(S.FlowUniPC(6, 5.0, corrector=False), outs, x), ref) > 100 * TOL


def test_an_off_by_one_step_index_is_caught(wan_run):
    outs, x, ref = wan_run
    late = ours(S.FlowUniPC(6, 5.0), outs, x, index_offset=1)
    assert _worst(late[:-1], ref[:-1]) > 100 * TOL


def test_the_last_step_at_order_one_lands_on_the_x0_prediction(wan_run):
    """sigma_N = 0: order 1 returns the step's x0 = sample - sigma v (of the sample as it
    came, before the corrector); order 2 there is not finite."""
    outs, x, ref = wan_run
    cfg = S.FlowUniPC(6, 5.0)
    state, xs = S.init_state(jnp.asarray(x)), jnp.asarray(x)
    for i in range(5):
        xs, state = S.step(cfg, state, jnp.asarray(outs[i]), xs, i)
    last, _ = S.step(cfg, state, jnp.asarray(outs[5]), xs, 5)
    assert _worst(np.asarray(last), np.asarray(xs - cfg.sigmas()[5] * outs[5])) < TOL
    assert _worst(np.asarray(last), ref[5]) < TOL
    high = ours(S.FlowUniPC(6, 5.0, lower_order_final=False), outs, x)
    assert not np.isfinite(high[5]).all()


# ---- the schedule ---------------------------------------------------------------------------

@pytest.mark.parametrize("steps,shift", [(30, 3.0), (50, 5.0), (40, 12.0), (40, 5.0)])
def test_sigmas_and_timesteps_are_diffusers(steps, shift):
    s, cfg = _diffusers(steps, shift), S.FlowUniPC(steps, shift)
    np.testing.assert_array_equal(cfg.sigmas(), s.sigmas.numpy())
    np.testing.assert_array_equal(cfg.timesteps(), s.timesteps.numpy())


@pytest.mark.parametrize("steps,shift", [(30, 3.0), (50, 5.0), (40, 12.0), (40, 5.0)])
def test_timesteps_are_maxdiffusions_float32_ones(steps, shift):
    """FlaxUniPCMultistepScheduler.set_timesteps computes in float32 (jnp): same integers."""
    s = jnp.linspace(1.0, 1.0 / 1000, steps + 1)[:-1]
    s = shift * s / (1 + (shift - 1) * s)
    s = s.at[0].set(jnp.where(jnp.abs(s[0] - 1.0) < 1e-6, s[0] - 1e-6, s[0]))
    np.testing.assert_array_equal(S.FlowUniPC(steps, shift).timesteps(),
                                  np.asarray((s * 1000).astype(jnp.int32)))


def test_the_cfg_combine_puts_the_prompt_first():
    cond, uncond = np.full(SHAPE, 2.0, np.float32), np.full(SHAPE, 1.0, np.float32)
    guided = S.cfg_combine(jnp.stack([cond, uncond]), 5.0)
    np.testing.assert_array_equal(np.asarray(guided), np.full(SHAPE, 6.0))  # 1 + 5 (2 - 1)


# ---- Wan 2.2's expert switch and the presets' runs -----------------------------------------

def test_the_t2v_a14b_expert_switches_at_step_26_of_40():
    """MaxDiffusion base_wan_27b.yml: "~step 26 of 40 at boundary_ratio 0.875" (shift 12)."""
    from aoizora.models import get_model

    cfg, experts = S.FlowUniPC(40, 12.0), get_model("wan2.2-t2v-a14b")
    assert S.boundary_step(cfg, 0.875) == 26
    assert [experts.expert_for(t) for t in cfg.timesteps()] == [0] * 26 + [1] * 14


def test_the_i2v_a14b_expert_switches_at_step_15_of_40():
    """base_wan_i2v_27b.yml: "the dip near step 15 marks the high->low boundary"."""
    assert S.boundary_step(S.FlowUniPC(40, 5.0), 0.900) == 15


def test_a_timestep_on_the_boundary_is_the_high_noise_experts():
    cfg = S.FlowUniPC(40, 3.0)
    assert cfg.timesteps()[12] == 875
    assert S.boundary_step(cfg, 0.875) == 13


def test_every_preset_has_a_run_and_the_two_expert_ones_a_boundary():
    from aoizora.models import MODELS

    got = {name: S.default_steps(name)[:2] for name in MODELS}
    assert got == {"wan2.1-t2v-1.3b": (30, None), "wan2.1-t2v-14b": (50, None),
                   "wan2.1-i2v-14b": (50, None), "wan2.2-t2v-a14b": (40, 26),
                   "wan2.2-i2v-a14b": (40, 15), "wan2.2-ti2v-5b": (50, None),
                   "wan-tiny": (2, None)}
    assert S.default_steps("wan2.1-t2v-14b@2blocks") == S.default_steps("wan2.1-t2v-14b")
    with pytest.raises(KeyError, match="no denoising defaults for 'wan3'"):
        S.default_steps("wan3")


def test_the_table_is_maxdiffusions_configs():
    """The table against MaxDiffusion's own lines (tests/data/maxdiffusion: excerpts of its
    configs at the commit the recorded contract names, so a re-recorded contract asks for them
    again)."""
    import yaml

    from aoizora.maxdiffusion import CONFIG_OF, contract
    from aoizora.models import MODELS

    recorded = contract()
    assert set(CONFIG_OF.values()) == set(recorded["configs"])
    for name, yml in CONFIG_OF.items():
        text = open(os.path.join(MAXDIFFUSION_CONFIGS, yml), encoding="utf-8").read()
        assert recorded["commit"] in text, f"{yml}: refresh it from the contract's commit"
        doc = yaml.safe_load(text)
        run = S.denoising(name)
        assert yml in run.source, name
        assert (run.steps, run.flow_shift) == (doc["num_inference_steps"], doc["flow_shift"]), name
        if "boundary_ratio" in doc:
            assert MODELS[name].boundary_ratio == doc["boundary_ratio"], name
            assert run.guidance == (doc["guidance_scale_high"], doc["guidance_scale_low"]), name
        else:
            assert run.guidance == (doc["guidance_scale"],), name

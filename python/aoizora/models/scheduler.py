"""Wan's denoising scheduler in JAX: UniPC multistep over flow-matching sigmas, the
classifier-free-guidance combine, the Wan 2.2 expert switch and each preset's step count.

The scheduler is diffusers' UniPCMultistepScheduler as Wan's Diffusers checkpoints configure
it (prediction_type flow_prediction, use_flow_sigmas, solver_order 2, solver_type bh2,
predict_x0, lower_order_final, no disabled corrector, final sigma 0), which MaxDiffusion
ports as FlaxUniPCMultistepScheduler (schedulers/scheduling_unipc_multistep_flax.py) and
loads in WanPipeline.load_scheduler with the config's flow_shift. Only that configuration is
written here; tests/python/test_scheduler.py runs it beside diffusers' step by step.

    FlowUniPC(steps, flow_shift=3.0, ...)     the scheduler of one run of `steps` steps
    .sigmas() float32 [steps + 1] (last 0), .timesteps() int64 [steps] (sigma x 1000, floored)
    init_state(latents) -> UniPCState         zeros: nothing kept before the first step
    step(cfg, state, model_output, sample, i) -> (next sample, UniPCState)
    cfg_combine(pair, scale)                  [2, ...] (conditional, unconditional) -> guided
    boundary_step(cfg, boundary_ratio)        first step of the low-noise expert (Wan 2.2)
    default_steps(model_name)                 (steps, boundary step or None, source)

`step` is pure and jit-able; `i` may be a Python int or a traced int32 (one program serves
every step, as MaxDiffusion's jitted step does). Arrays: float32, any shape, all alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

TRAIN_TIMESTEPS = 1000  # num_train_timesteps of every Wan scheduler config


@dataclass(frozen=True)
class FlowUniPC:
    """UniPC over `steps` flow sigmas. The fields other than steps and flow_shift are
    diffusers' options at Wan's values; they exist so tests can show what each changes."""

    steps: int
    flow_shift: float = 3.0         # sigma -> s sigma / (1 + (s - 1) sigma); 3 at 480p, 5 at 720p
    solver_order: int = 2           # 1 or 2: model outputs the multistep combines
    lower_order_final: bool = True  # the last step at order 1 (its sigma is 0)
    corrector: bool = True          # UniC on every step after the first

    def __post_init__(self):
        if self.steps < 1 or self.solver_order not in (1, 2):
            raise ValueError(f"FlowUniPC: steps >= 1 and solver_order 1 or 2, got "
                             f"{self.steps} and {self.solver_order}")

    def _shifted(self) -> np.ndarray:
        # float64 as diffusers' set_timesteps (MaxDiffusion's float32 gives the same timesteps
        # for every preset's schedule: test_scheduler checks them)
        s = np.linspace(1.0, 1.0 / TRAIN_TIMESTEPS, self.steps + 1)[:-1]
        s = self.flow_shift * s / (1 + (self.flow_shift - 1) * s)
        if abs(s[0] - 1) < 1e-6:
            s[0] -= 1e-6  # diffusers: keeps log(1 - sigma) finite at the first step
        return s

    def sigmas(self) -> np.ndarray:
        return np.append(self._shifted(), 0.0).astype(np.float32)

    def timesteps(self) -> np.ndarray:
        """The transformer's timestep of each step; the expert switch compares these."""
        return (self._shifted() * TRAIN_TIMESTEPS).astype(np.int64)


class UniPCState(NamedTuple):
    """What the multistep keeps between steps, each shaped as the latents (float32)."""

    x0_prev: object      # the previous step's x0 prediction (m_{i-1})
    x0_prev2: object     # the one before (m_{i-2}): the order-2 corrector's second point
    last_sample: object  # the sample the previous predictor started from (after correction)


def init_state(latents) -> UniPCState:
    z = jnp.zeros(latents.shape, jnp.float32)
    return UniPCState(z, z, z)


def cfg_combine(pair, scale):
    """u + g (c - u) over a [2, ...] pair, conditional first (MaxDiffusion's
    transformer_forward_pass and models/wan.py put the prompt before the negative prompt)."""
    cond, uncond = pair[0].astype(jnp.float32), pair[1].astype(jnp.float32)
    return uncond + scale * (cond - uncond)


def _log_snr(sigma):
    # lambda = log(alpha / sigma) with alpha = 1 - sigma; +inf at the final sigma 0
    return jnp.log(1 - sigma) - jnp.log(sigma)


def _order(cfg: FlowUniPC, j):
    """The order of step j's predictor (and of step j + 1's corrector): warm-up from 1, and 1
    again at the last step under lower_order_final."""
    cap = jnp.minimum(cfg.solver_order, cfg.steps - j) if cfg.lower_order_final \
        else cfg.solver_order
    return jnp.minimum(cap, j + 1)


class _Update(NamedTuple):
    """x_t = ratio x - a_phi m0 - a_b (rho_prev (m1 - m0) / rk + rho_this (m_t - m0)): the
    B(h) update of the UniPC paper from sigma_s0 to sigma_t, scalars only."""

    ratio: object     # sigma_t / sigma_s0
    a_phi: object     # alpha_t (e^-h - 1)
    a_b: object       # alpha_t B(h)
    rk: object        # (lambda of the earlier point - lambda_s0) / h; 1 where unused
    rho_prev: object  # weight of the earlier difference (0 at order 1)
    rho_this: object  # weight of the new point's difference (corrector only)


def _update(cfg: FlowUniPC, sig, s0, t, before, order, solve: bool):
    """Coefficients between sig[s0] and sig[t]; `before` indexes the earlier point used at
    order 2. solve: the corrector's weights (diffusers' multistep_uni_c_bh_update solves for
    them); else the predictor's (multistep_uni_p_bh_update: 1/2 at order 2)."""
    lam_s0, lam_t = _log_snr(sig[s0]), _log_snr(sig[t])
    h = lam_t - lam_s0
    hh = -h  # predict_x0
    h_phi_1 = b_h = jnp.expm1(hh)  # bh2: B(h) = e^-h - 1 (bh1's -h is inf at sigma 0)
    two = order == 2
    rk = jnp.where(two, (_log_snr(sig[before]) - lam_s0) / h, 1.0)
    alpha_t = 1 - sig[t]
    if not solve:
        rho_prev, rho_this = jnp.where(two, 0.5, 0.0), 0.0
    else:  # R rho = b with R = [[1, 1], [rk, 1]] and b built as diffusers does (k = 1, 2)
        phi_2 = h_phi_1 / hh - 1
        b1 = phi_2 * 1 / b_h
        b2 = (phi_2 / hh - 1 / 2) * 2 / b_h
        rho0 = (b1 - b2) / (1 - rk)
        rho_prev, rho_this = jnp.where(two, rho0, 0.0), jnp.where(two, b1 - rho0, 0.5)
    return _Update(sig[t] / sig[s0], alpha_t * h_phi_1, alpha_t * b_h, rk, rho_prev, rho_this)


def _apply(u: _Update, x, m0, m1, m_t=None):
    res = u.rho_prev * ((m1 - m0) / u.rk)
    if m_t is not None:
        res = res + u.rho_this * (m_t - m0)
    return u.ratio * x - u.a_phi * m0 - u.a_b * res


def step(cfg: FlowUniPC, state: UniPCState, model_output, sample, i):
    """Step i of cfg.steps: the flow prediction `model_output` at `sample` -> (the sample at
    step i + 1, the new state). As diffusers' UniPCMultistepScheduler.step: x0 = sample -
    sigma_i v; from step 1 the corrector (UniC) refines `sample` with x0; the predictor
    (UniP) then moves it to sigma_{i+1}. Indices below 0 are clamped; their terms are off."""
    sig = jnp.asarray(cfg.sigmas())
    i = jnp.asarray(i, jnp.int32)
    sample = sample.astype(jnp.float32)
    x0 = sample - sig[i] * model_output.astype(jnp.float32)
    prev, prev2 = jnp.maximum(i - 1, 0), jnp.maximum(i - 2, 0)
    # UniC, at the previous predictor's order (at step 0 h = 0: nothing to correct)
    u = _update(cfg, sig, prev, i, prev2, _order(cfg, i - 1), solve=True)
    corrected = _apply(u, state.last_sample, state.x0_prev, state.x0_prev2, x0)
    sample = jnp.where((i > 0) & cfg.corrector, corrected, sample)
    # UniP from sigma_i to sigma_{i+1}
    p = _update(cfg, sig, i, i + 1, prev, _order(cfg, i), solve=False)
    nxt = _apply(p, sample, x0, state.x0_prev)
    return nxt, UniPCState(x0, state.x0_prev, sample)


def boundary_step(cfg: FlowUniPC, boundary_ratio: float) -> int:
    """The first step of Wan 2.2's low-noise expert: MaxDiffusion's wan_pipeline_2_2 runs the
    high-noise one while timesteps[s] >= boundary_ratio x 1000 (diffusers' WanPipeline alike);
    cfg.steps when no step falls below it. 40 steps at shift 12 and 0.875: 26."""
    low = np.nonzero(cfg.timesteps() < boundary_ratio * TRAIN_TIMESTEPS)[0]
    return int(low[0]) if len(low) else cfg.steps


# ---- each preset's run -----------------------------------------------------------------------

@dataclass(frozen=True)
class Denoising:
    """A preset's denoising run as its reference configuration sets it."""

    steps: int          # num_inference_steps (Wan: sample_steps)
    flow_shift: float   # the scheduler's flow_shift (Wan: sample_shift)
    guidance: tuple     # CFG scale; Wan 2.2 A14B: (high-noise expert, low-noise expert)
    source: str         # the file the figures are read from

    def scheduler(self) -> FlowUniPC:
        return FlowUniPC(self.steps, self.flow_shift)


_MD = "MaxDiffusion 7cfb880 src/maxdiffusion/configs/"
# Read from the files, not at run time (CI has no MaxDiffusion checkout). MaxDiffusion's
# Wan pipelines load the checkpoint's UniPC config with the yml's flow_shift; the yml's
# diffusion_scheduler_config is not read by them.
DENOISING: dict[str, Denoising] = {
    "wan2.1-t2v-1.3b": Denoising(30, 3.0, (5.0,), _MD + "base_wan_1_3b.yml"),
    "wan2.1-t2v-14b": Denoising(50, 5.0, (5.0,), _MD + "base_wan_14b.yml"),
    "wan2.1-i2v-14b": Denoising(50, 5.0, (5.0,), _MD + "base_wan_i2v_14b.yml"),
    "wan2.2-t2v-a14b": Denoising(40, 12.0, (4.0, 3.0), _MD + "base_wan_27b.yml"),
    # MaxDiffusion's guidance 4/3; Wan2.2's wan_i2v_A14B.py has 3.5/3.5 (same cost)
    "wan2.2-i2v-a14b": Denoising(40, 5.0, (4.0, 3.0), _MD + "base_wan_i2v_27b.yml"),
    # no MaxDiffusion config; diffusers' WanPipeline also defaults to 50 steps
    "wan2.2-ti2v-5b": Denoising(50, 5.0, (5.0,), "Wan-Video/Wan2.2 42bf4cf "
                                "wan/configs/wan_ti2v_5B.py (sample_steps, sample_shift)"),
    "wan-tiny": Denoising(2, 3.0, (5.0,), "aoizora: the test preset (2 steps keep "
                          "its pipeline tests short)"),
}


def denoising(model_name: str) -> Denoising:
    """The run of a preset (an N-block proxy "name@Nblocks" is its preset's). Raises
    KeyError naming the presets it knows."""
    base = model_name.split("@")[0]
    if base not in DENOISING:
        raise KeyError(f"no denoising defaults for {model_name!r}: use one of "
                       f"{', '.join(sorted(DENOISING))}")
    return DENOISING[base]


def default_steps(model_name: str) -> tuple[int, int | None, str]:
    """(steps, the first low-noise step of a two-expert preset or None, source)."""
    from aoizora.models.presets import PRESETS

    run = denoising(model_name)
    ratio = getattr(PRESETS.get(model_name.split("@")[0]), "boundary_ratio", None)
    boundary = None if ratio is None else boundary_step(run.scheduler(), ratio)
    return run.steps, boundary, run.source

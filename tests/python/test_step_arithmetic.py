"""pipeline/step_arithmetic.py: the CFG combine and UniPC update of one step, compiled for
4 CPU devices on wan-tiny's workload through jobs.Job / batch.run_jobs (one session-scoped
batch, in this process), and run once sharded against models/scheduler.py on one device."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aoizora.models import get_model, scheduler
from aoizora.models.video import TINY_VIDEO
from aoizora.pipeline.step_arithmetic import StepArithmeticStage, step_arithmetic_for
from aoizora.planning.strategies import Candidate

TARGET = "cpu:4"
WIDTH = (None, None, None, None, "length")  # latents [1, z, T, h, w] split along width
CONTEXT4 = Candidate("context4", context=4, form="allgather_kv")
DATA2 = Candidate("data2-context2", data=2, context=2, form="allgather_kv")
COLLECTIVE = re.compile(r"\b(all-gather|all-reduce|collective-permute|all-to-all|"
                        r"reduce-scatter)")


def _stage(**kw):
    return StepArithmeticStage(get_model("wan-tiny"), scheduler.FlowUniPC(6, 5.0), **kw)


@pytest.fixture(scope="session")
def compiled():
    from aoizora.compile.batch import run_jobs
    from aoizora.compile.jobs import Job

    jobs = {"width-context4": Job("compile", CONTEXT4, _stage(latent_axes=WIDTH),
                                           TINY_VIDEO, TARGET),
            "width-data2": Job("compile", DATA2, _stage(latent_axes=WIDTH),
                                        TINY_VIDEO, TARGET),
            "default-context4": Job("compile", CONTEXT4, step_arithmetic_for(
                get_model("wan-tiny")), TINY_VIDEO, TARGET)}
    outs = run_jobs(list(jobs.values()), workers=0, cache=None)
    for o in outs:
        assert o.ok, o.error
    return {name: o.text for name, o in zip(jobs, outs)}


def test_latents_split_alike_in_and_out_need_no_collective(compiled):
    text = compiled["width-context4"]
    assert "num_partitions=4" in text
    assert "f32[1,16,3,6,2]" in text  # each device's quarter of the width
    assert not COLLECTIVE.search(text), COLLECTIVE.search(text).group(0)


def test_a_cfg_pair_split_over_data_is_gathered_for_the_combine(compiled):
    assert COLLECTIVE.search(compiled["width-data2"])


def test_by_default_the_latents_are_the_transformers_replicated_output(compiled):
    model = get_model("wan-tiny")
    stage = step_arithmetic_for(model)
    unguided = TINY_VIDEO.__class__(**{**TINY_VIDEO.key(), "guidance": None})
    assert stage.output_axes(TINY_VIDEO) == stage.output_axes(unguided) == (None,) * 5
    assert stage.input_axes(TINY_VIDEO)[0] == ("batch", None, None, None, None)
    assert (stage.run.steps, stage.run.flow_shift) == (2, 3.0)  # scheduler.DENOISING
    assert not COLLECTIVE.search(compiled["default-context4"])


def test_the_sharded_stage_computes_the_schedulers_step():
    from aoizora.compile import compiler

    stage = _stage(latent_axes=WIDTH, guidance=4.0)
    exe, args = compiler.executable(CONTEXT4, stage, TINY_VIDEO, TARGET)
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(a.shape).astype(a.dtype) for a in args[1:-1]] + \
        [np.int32(3)]
    sharded = exe({}, *[jax.device_put(v, a.sharding) for v, a in zip(values, args[1:])])
    pair, latents, *state, i = (jnp.asarray(v) for v in values)
    guided = (pair[1] + 4.0 * (pair[0] - pair[1]))[None]
    want = scheduler.step(stage.run, scheduler.UniPCState(*state), guided, latents, i)
    for got, ref in zip(jax.tree.leaves(sharded), jax.tree.leaves(want)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=0, atol=1e-5)

"""The splash kernel in every context form (models/splash.py), on CPU devices: the real
kernel through its Pallas interpreter (interpret=True), and the ring's online-softmax merge
with a pure-JAX stand-in for the kernel, against the naive softmax, with padded keys."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, PartitionSpec as P

from aoizora.models import attention as A
from aoizora.models import splash as K
from aoizora.compile.tpu import cpu_devices

B, S, H, D = 1, 512, 4, 128
BLOCKS = K.Blocks(128, 128, 128)


def _qkv(seed=0):
    ks = jax.random.split(jax.random.key(seed), 3)
    return [jax.random.normal(k, (B, S, H, D), jnp.float32) for k in ks]


def _sharded(body, mesh, q, k, v):
    spec = P(None, tuple(mesh.axis_names), None, None)
    f = jax.shard_map(body, mesh=mesh, in_specs=(spec,) * 3, out_specs=spec, check_vma=False)
    return jax.jit(f)(q, k, v)


@pytest.mark.parametrize("kv_valid", [None, 450])
def test_merge_of_ring_steps_equals_one_softmax(kv_valid):
    """Four steps of 128 keys, merged by logsumexp, give the softmax over all 512."""
    q, k, v = _qkv()
    qh, kh, vh = (x.transpose(0, 2, 1, 3) for x in (q * D ** -0.5, k, v))
    state = None
    for s in range(4):
        sl = slice(128 * s, 128 * (s + 1))
        state = K.merge(state, *K.reference_step(qh, kh[:, :, sl], vh[:, :, sl], 128 * s,
                                                 kv_valid))
    got = K.finish(state, jnp.float32).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(got, A.reference(q, k, v, kv_valid), atol=2e-5)


def test_merge_scales_away_a_step_whose_keys_are_all_padding():
    q, k, v = _qkv(1)
    qh, kh, vh = (x.transpose(0, 2, 1, 3) for x in (q * D ** -0.5, k, v))
    state = K.merge(None, *K.reference_step(qh, kh[:, :, 256:], vh[:, :, 256:], 256, 256))
    state = K.merge(state, *K.reference_step(qh, kh[:, :, :256], vh[:, :, :256], 0, 256))
    got = K.finish(state, jnp.float32).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(got, A.reference(q, k, v, 256), atol=2e-5)


def test_ring_with_reference_steps_matches_naive_attention():
    q, k, v = _qkv(2)
    mesh = Mesh(np.array(cpu_devices(4)), ("context",))
    body = partial(K.ring, axes=("context",), kv_valid=500, blocks=BLOCKS,
                   step=K.reference_step)
    np.testing.assert_allclose(_sharded(body, mesh, q, k, v), A.reference(q, k, v, 500),
                               atol=2e-5)


# The real kernel, interpreted: every form against the naive softmax (keys >= 450 padding).
FORMS = {
    "local": (("x",), (1,), partial(K.local)),
    "allgather_kv": (("context",), (2,), partial(K.allgather_kv, axes=("context",))),
    "ring": (("context",), (4,), partial(K.ring, axes=("context",))),
    "ulysses": (("context",), (2,), partial(K.ulysses, axis="context")),
    "ulysses_ring": (("ring", "ulysses"), (2, 2),
                     partial(K.ulysses, axis="ulysses", ring_axes=("ring",))),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_interpreted_kernel_in_every_form_matches_naive_attention(form):
    names, shape, body = FORMS[form]
    n = int(np.prod(shape))
    q, k, v = _qkv(3)
    mesh = Mesh(np.array(cpu_devices(n)).reshape(shape), names)
    body = partial(body, kv_valid=450, blocks=BLOCKS, interpret=True)
    np.testing.assert_allclose(_sharded(body, mesh, q, k, v), A.reference(q, k, v, 450),
                               atol=5e-5, rtol=1e-4)


@pytest.mark.parametrize("kv_valid", [None, 300])
def test_blocks_that_do_not_tile_the_lengths_pad_and_mask(kv_valid):
    """q 384 and kv 384 under blocks q 256, kv 256 (the lengths pad to 512): the padded
    keys are masked, the padded queries dropped, as MaxDiffusion pads for its kernel."""
    q, k, v = (x[:, :384] for x in _qkv(5))
    assert K.tiling(384, 384, K.Blocks(256, 256, 128)) == (K.Blocks(256, 256, 128), 512, 512)
    out = K.local(q, k, v, kv_valid=kv_valid, blocks=K.Blocks(256, 256, 128), interpret=True)
    assert out.shape == q.shape
    np.testing.assert_allclose(out, A.reference(q, k, v, kv_valid), atol=5e-5, rtol=1e-4)


def test_padded_ring_step_returns_the_logsumexp_of_the_real_queries():
    q, k, v = (K._heads_major(x[:, :384]) for x in _qkv(6))
    o, (lse,) = K.call(q, k, v, blocks=K.Blocks(256, 256, 256), residuals=True, interpret=True)
    ref_o, ref_lse = K.reference_step(q, k, v, 0, None)
    assert o.shape == q.shape and lse.shape == q.shape[:3]
    np.testing.assert_allclose(lse, ref_lse, atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(o, ref_o, atol=5e-5, rtol=1e-4)

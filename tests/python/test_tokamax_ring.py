"""tokamax's ring kernel (models/tokamax_ring.py) as the TPU kernel of ring candidates: its
numerics through the Pallas interpreter on CPU devices, against the naive softmax and jax's
splash ring; a ring candidate compiled deviceless for the TPU holds tokamax's Mosaic kernel
once per ring step, with the searched blocks, priced by the splash kernel model."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, PartitionSpec as P

from aoizora.compile import compiler as C
from aoizora.planning import kernels
from aoizora.planning import strategies as S
from aoizora.models import attention as A
from aoizora.models import get_model, get_workload
from aoizora.models import splash as K
from aoizora.models import tokamax_ring as T
from aoizora.compile.tpu import cpu_devices

B, H, D = 1, 4, 128
MOSAIC = 'custom_call_target="tpu_custom_call"'


def _qkv(seq: int, seed: int):
    ks = jax.random.split(jax.random.key(seed), 3)
    return [jax.random.normal(k, (B, seq, H, D), jnp.float32) for k in ks]


def _ring(ring, n: int, q, k, v, **kw):
    mesh = Mesh(np.array(cpu_devices(n)), ("context",))
    spec = P(None, "context", None, None)
    body = partial(ring, axes=("context",), interpret=True, **kw)
    f = jax.shard_map(body, mesh=mesh, in_specs=(spec,) * 3, out_specs=spec, check_vma=False)
    return jax.jit(f)(q, k, v)


def test_interpreted_ring_matches_naive_attention_and_the_splash_ring():
    """Four devices of 128 tokens, keys >= 450 padding (the last shard partly, rotated with
    K/V as segment ids)."""
    q, k, v = _qkv(512, 0)
    kw = dict(kv_valid=450, blocks=K.Blocks(128, 128, 128))
    got = _ring(T.ring, 4, q, k, v, **kw)
    np.testing.assert_allclose(got, A.reference(q, k, v, 450), atol=5e-5, rtol=1e-4)
    np.testing.assert_allclose(got, _ring(K.ring, 4, q, k, v, **kw), atol=5e-6)


def test_blocks_that_do_not_tile_a_shard_pad_and_mask():
    """Two shards of 384 under blocks of 256 (padded to 512 per call): the padded keys of
    every shard are masked wherever they travel, the padded queries dropped."""
    q, k, v = _qkv(768, 1)
    got = _ring(T.ring, 2, q, k, v, kv_valid=700, blocks=K.Blocks(256, 256, 128))
    assert got.shape == q.shape
    np.testing.assert_allclose(got, A.reference(q, k, v, 700), atol=5e-5, rtol=1e-4)


def test_only_ring_candidates_take_tokamaxs_kernel_on_tpu():
    assert kernels.kernel_for("ring", "tpu") == "tokamax_ring"
    assert kernels.kernel_for("ulysses_ring", "tpu") == "splash"  # MaxDiffusion's own ring
    assert kernels.kernel_for("ring", "cpu") == "blockwise"


@pytest.fixture(scope="module")
def ring4():
    cfg, w = get_model("wan-tiny"), get_workload("tiny")
    bare = next(c for c in S.enumerate_candidates(cfg, w, 4) if c.name == "ring4")
    c = kernels.with_kernel(bare, cfg, w, "tpu", "v5e:2x2")
    return c, cfg, w, C.compile(c, cfg, w, "v5e:2x2")


def test_a_tpu_ring_compiles_deviceless_with_tokamaxs_mosaic_kernel(ring4):
    c, cfg, w, hlo = ring4
    assert c.kernel == "tokamax_ring" and kernels.describe(c)["kernel"] == "tokamax_ring"
    calls = kernels.attention_shapes(c, cfg, w, c.kernel).calls
    assert calls == 4 and hlo.count(MOSAIC) == calls  # one per ring step (in the layer loop)
    assert "_ring_attention" in hlo                  # tokamax's, not jax's splash ring
    assert f'\\"block_q\\": {c.block_q}, \\"block_kv\\": {c.block_kv}' in hlo
    assert "collective-permute" in hlo


def test_the_compiled_ring_is_priced_by_the_splash_kernel_model(ring4):
    from aoizora import _core

    c, cfg, w, hlo = ring4
    ops = [op for r in _core.load_hlo(hlo).regions for op in r.ops
           if op.name.startswith("splash_mha_fwd")]
    shape = kernels.attention_shapes(c, cfg, w, c.kernel)
    assert len(ops) == shape.calls
    batch = 2 // (c.data * c.fsdp)  # the CFG pair
    want = 4 * batch * shape.heads * shape.q_len * shape.kv_len * shape.head_dim
    assert all(op.flops == want and not op.opaque for op in ops)

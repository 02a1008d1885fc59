"""Attention cores, local and sharded, in plain JAX.

Layout of every tensor here: q, k, v are [batch, seq, heads, head_dim]. The local core is
blockwise (flash-style): queries in blocks under `lax.map`, keys/values in blocks under
`lax.scan` with an online softmax, so memory is linear in the sequence. The sharded forms
run *inside* `jax.shard_map` (they see per-device shards and name mesh axes):

- `allgather_kv`: K/V all-gathered over the context axes, local queries (MaxDiffusion's default).
- `ulysses`: all-to-all from sequence-sharded to head-sharded, full attention, all-to-all back.
- `ring`: K/V passed around the ring with `ppermute`, one online-softmax update per step.
- `ulysses_ring`: Ulysses over one axis, ring over another (xDiT's USP).

Padded keys (global position >= kv_valid) are masked; padded queries are computed and
discarded by the caller.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

# A finite "minus infinity": a block whose keys are all masked then contributes exp(0)
# garbage that the first unmasked block scales away by exp(NEG - m) = 0, without NaNs.
NEG = -1e30


def pick_block(n: int, target: int) -> int:
    """The largest divisor of n that is <= target (blocks must tile the sequence exactly)."""
    for b in range(min(n, target), 0, -1):
        if n % b == 0:
            return b
    return 1


def init_state(q):
    """Online-softmax state for queries q [B, Sq, H, D]: acc [B,H,Sq,D], max and sum [B,H,Sq]."""
    b, s, h, d = q.shape
    return (jnp.zeros((b, h, s, d), jnp.float32), jnp.full((b, h, s), NEG, jnp.float32),
            jnp.zeros((b, h, s), jnp.float32))


def update(q, k, v, state, *, kv_start, kv_valid, q_block, kv_block):
    """Folds the keys/values k, v (global positions kv_start + i) into the state of q.

    kv_valid: keys at global position >= kv_valid are padding (None: no padding)."""
    b, sq, h, d = q.shape
    sk = k.shape[1]
    qb, kb = pick_block(sq, q_block), pick_block(sk, kv_block)
    nq, nk = sq // qb, sk // kb
    scale = d ** -0.5
    acc, m, l = state
    # [nq, B, qb, H, D] and state blocks [nq, B, H, qb, ...]
    qr = q.reshape(b, nq, qb, h, d).swapaxes(0, 1)
    accr = acc.reshape(b, h, nq, qb, d).transpose(2, 0, 1, 3, 4)
    mr = m.reshape(b, h, nq, qb).transpose(2, 0, 1, 3)
    lr = l.reshape(b, h, nq, qb).transpose(2, 0, 1, 3)
    kr = k.reshape(b, nk, kb, h, d).swapaxes(0, 1)
    vr = v.reshape(b, nk, kb, h, d).swapaxes(0, 1)

    def per_q(args):
        qi, a, mi, li = args

        def body(carry, kv):
            a, mi, li = carry
            kj, vj, j = kv
            s = jnp.einsum("bqhd,bkhd->bhqk", qi, kj, preferred_element_type=jnp.float32)
            s = s * scale
            if kv_valid is not None:
                pos = kv_start + j * kb + jnp.arange(kb)
                s = jnp.where(pos < kv_valid, s, NEG)
            m_new = jnp.maximum(mi, s.max(-1))
            p = jnp.exp(s - m_new[..., None])
            corr = jnp.exp(mi - m_new)
            li = li * corr + p.sum(-1)
            pv = jnp.einsum("bhqk,bkhd->bhqd", p.astype(vj.dtype), vj,
                            preferred_element_type=jnp.float32)
            return (a * corr[..., None] + pv, m_new, li), None

        (a, mi, li), _ = lax.scan(body, (a, mi, li), (kr, vr, jnp.arange(nk)))
        return a, mi, li

    acc, m, l = lax.map(per_q, (qr, accr, mr, lr))
    acc = acc.transpose(1, 2, 0, 3, 4).reshape(b, h, sq, d)
    m = m.transpose(1, 2, 0, 3).reshape(b, h, sq)
    l = l.transpose(1, 2, 0, 3).reshape(b, h, sq)
    return acc, m, l


def finish(state, dtype):
    acc, _, l = state
    return (acc / l[..., None]).transpose(0, 2, 1, 3).astype(dtype)


def local(q, k, v, *, kv_valid=None, kv_start=0, q_block=512, kv_block=512):
    """Blockwise attention of q over all of k, v on one device."""
    if kv_valid is not None and kv_valid >= kv_start + k.shape[1]:
        kv_valid = None
    state = update(q, k, v, init_state(q), kv_start=kv_start, kv_valid=kv_valid,
                   q_block=q_block, kv_block=kv_block)
    return finish(state, q.dtype)


def _axis_size(axes) -> int:
    n = 1
    for a in axes:
        n *= lax.axis_size(a)
    return n


def _axis_index(axes):
    """Linear index over several mesh axes, the first one major (as in a PartitionSpec)."""
    i = 0
    for a in axes:
        i = i * lax.axis_size(a) + lax.axis_index(a)
    return i


def allgather_kv(q, k, v, *, axes, kv_valid, q_block, kv_block):
    """K/V all-gathered along the sequence over `axes`; local queries attend to all keys."""
    k = lax.all_gather(k, axes, axis=1, tiled=True)
    v = lax.all_gather(v, axes, axis=1, tiled=True)
    return local(q, k, v, kv_valid=kv_valid, q_block=q_block, kv_block=kv_block)


def ulysses(q, k, v, *, axis, kv_valid, q_block, kv_block, inner=None):
    """All-to-all heads <-> sequence over `axis`, attention on the full (or ring-local)
    sequence with a slice of the heads, all-to-all back. `inner` replaces the local core
    (the ring for ulysses_ring)."""
    def to_heads(x):
        return lax.all_to_all(x, axis, split_axis=2, concat_axis=1, tiled=True)

    q, k, v = to_heads(q), to_heads(k), to_heads(v)
    if inner is None:
        o = local(q, k, v, kv_valid=kv_valid, q_block=q_block, kv_block=kv_block)
    else:
        o = inner(q, k, v)
    return lax.all_to_all(o, axis, split_axis=1, concat_axis=2, tiled=True)


def ring(q, k, v, *, axes, kv_valid, q_block, kv_block):
    """Ring attention: K/V travel one step round the ring per update (`ppermute`)."""
    n = _axis_size(axes)
    me = _axis_index(axes)
    sk = k.shape[1]
    if kv_valid is not None and kv_valid >= n * sk:
        kv_valid = None
    perm = [(i, (i + 1) % n) for i in range(n)]
    state = init_state(q)
    for step in range(n):
        src = (me - step) % n
        state = update(q, k, v, state, kv_start=src * sk, kv_valid=kv_valid,
                       q_block=q_block, kv_block=kv_block)
        if step + 1 < n:
            k = lax.ppermute(k, axes, perm)
            v = lax.ppermute(v, axes, perm)
    return finish(state, q.dtype)


def reference(q, k, v, kv_valid=None):
    """Naive softmax attention (tests only: the score matrix is S x S)."""
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32)
    s = s * q.shape[-1] ** -0.5
    if kv_valid is not None:
        s = jnp.where(jnp.arange(k.shape[1]) < kv_valid, s, -jnp.inf)
    p = jax.nn.softmax(s, axis=-1)
    return jnp.einsum("bhqk,bkhd->bqhd", p, v.astype(jnp.float32)).astype(q.dtype)


"""Random arrays in place of a program's abstract arguments: weights and inputs for timing a
planned step without reading any weights.

    materialize(abstract, seed=0) -> a pytree of jax.Arrays, leaf for leaf: the same shape,
        dtype and sharding as each jax.ShapeDtypeStruct in `abstract`. Floats are normal
        with standard deviation 0.02 (a usual initialiser scale, so activations stay
        finite); integers are zeros (valid as indices). Deterministic for a seed and a
        sharding.

Each shard is drawn on the host by numpy and sent to its device (make_array_from_callback),
so the host holds one shard at a time, and nothing is compiled: a jitted jax.random program
over a model's few dozen leaves compiles for minutes on CPU. A shard is seeded by its leaf
and its offset, so the copies of a replicated shard agree.
"""

from __future__ import annotations

_SCALE = 0.02


def _shard_maker(leaf: int, s, seed: int):
    import jax.numpy as jnp
    import numpy as np

    floating = jnp.issubdtype(s.dtype, jnp.floating)

    def make(index: tuple):
        bounds = [sl.indices(d) for sl, d in zip(index, s.shape)]
        shape = tuple(len(range(*b)) for b in bounds)
        if not floating:
            return np.zeros(shape, s.dtype)
        rng = np.random.default_rng([seed, leaf, *(b[0] for b in bounds)])
        return (_SCALE * rng.standard_normal(shape, dtype=np.float32)).astype(s.dtype)

    return make


def materialize(abstract, seed: int = 0):
    import jax

    leaves, tree = jax.tree.flatten(abstract)
    arrays = [jax.make_array_from_callback(s.shape, s.sharding, _shard_maker(i, s, seed))
              for i, s in enumerate(leaves)]
    return jax.tree.unflatten(tree, arrays)

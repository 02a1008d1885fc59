"""Random arrays in place of a program's abstract arguments: weights and inputs for timing a
planned step without reading any weights.

    materialize(abstract, seed=0) -> a pytree of jax.Arrays, leaf for leaf: the same shape,
        dtype and sharding as each jax.ShapeDtypeStruct in `abstract`. Floats are normal
        with standard deviation 0.02 (a usual initialiser scale, so activations stay
        finite); integers are zeros (valid as indices). Made by one jitted program with the
        leaves' shardings, so each device creates only its own shards.
"""

from __future__ import annotations

_SCALE = 0.02


def materialize(abstract, seed: int = 0):
    import jax
    import jax.numpy as jnp

    leaves, tree = jax.tree.flatten(abstract)

    def make(key):
        keys = jax.random.split(key, max(len(leaves), 1))
        out = []
        for k, s in zip(keys, leaves):
            if jnp.issubdtype(s.dtype, jnp.floating):
                out.append((_SCALE * jax.random.normal(k, s.shape, jnp.float32)).astype(s.dtype))
            else:
                out.append(jnp.zeros(s.shape, s.dtype))
        return out

    shardings = [s.sharding for s in leaves]
    arrays = jax.jit(make, out_shardings=shardings)(jax.random.key(seed))
    return jax.tree.unflatten(tree, arrays)

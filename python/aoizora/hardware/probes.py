"""Small sharded programs that exercise every collective kind. `aoizora doctor` compiles one;
tests/data/regen.py compiles all of them into the HLO fixtures the C++ tests read."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from aoizora.compile import jaxenv  # noqa: F401

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

COLLECTIVE_RE = re.compile(
    r"\b(all-gather|all-reduce|reduce-scatter|all-to-all|collective-permute|"
    r"collective-broadcast|ragged-all-to-all)(-start)?\("
)


def count_collectives(hlo_text: str) -> dict[str, int]:
    """Collective instructions by kind (a -start/-done pair counts once)."""
    counts: dict[str, int] = {}
    for m in COLLECTIVE_RE.finditer(hlo_text):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


@dataclass(frozen=True)
class Probe:
    name: str
    build: Callable[[Mesh], tuple[Callable, tuple]]  # mesh -> (jitted fn, abstract args)


def _spec(mesh: Mesh, shape, spec) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, jnp.bfloat16, sharding=NamedSharding(mesh, spec))


def _matmul(mesh: Mesh):
    """x @ w with the contraction sharded over 'b' (a reduce-scatter of partial sums), then a
    second matmul whose weight is sharded on its output dim and must be all-gathered."""
    a, b = mesh.axis_names
    out = NamedSharding(mesh, P(a, None))

    def f(x, w1, w2):
        h = jnp.dot(x, w1)
        h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P(a, b)))
        return jnp.dot(h, w2)

    args = (
        _spec(mesh, (1024, 2048), P(a, b)),
        _spec(mesh, (2048, 2048), P(b, None)),
        _spec(mesh, (2048, 1024), P(None, b)),
    )
    return jax.jit(f, out_shardings=out), args


def _ring_and_alltoall(mesh: Mesh):
    """shard_map with an explicit ring step (collective-permute), an all-to-all and a psum."""
    a, b = mesh.axis_names
    n = mesh.shape[b]

    def body(x):
        y = jax.lax.ppermute(x, b, [(i, (i + 1) % n) for i in range(n)])
        z = jax.lax.all_to_all(y, b, split_axis=1, concat_axis=1, tiled=True)
        return jax.lax.psum(z, a)

    f = jax.shard_map(body, mesh=mesh, in_specs=P(a, b), out_specs=P(None, b))
    return jax.jit(f), (_spec(mesh, (256, 512 * n), P(a, b)),)


def _layers_scan(mesh: Mesh):
    """Four tensor-parallel MLP layers under lax.scan: a while loop with a trip count."""
    a, b = mesh.axis_names

    def f(x, w_in, w_out):
        def layer(h, w):
            wi, wo = w
            return h + jnp.dot(jax.nn.gelu(jnp.dot(h, wi)), wo), None

        h, _ = jax.lax.scan(layer, x, (w_in, w_out))
        return h

    args = (
        _spec(mesh, (512, 1024), P(a, None)),
        _spec(mesh, (4, 1024, 4096), P(None, None, b)),
        _spec(mesh, (4, 4096, 1024), P(None, b, None)),
    )
    return jax.jit(f, out_shardings=NamedSharding(mesh, P(a, None))), args


PROBES = [Probe("matmul", _matmul), Probe("ring_alltoall", _ring_and_alltoall),
          Probe("layers_scan", _layers_scan)]


def mesh_2d(devices, n: int) -> Mesh:
    """A ('data', 'model') mesh of shape (2, n/2) over devices in the given order."""
    return Mesh(np.array(devices[:n]).reshape(2, n // 2), ("data", "model"))


def compile_probe(probe: Probe, mesh: Mesh) -> str:
    fn, args = probe.build(mesh)
    return fn.lower(*args).compile().as_text()

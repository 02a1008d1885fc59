"""Compile-only TPU devices (deviceless compilation through libtpu) and CPU fallbacks.

A topology name is "<gen>:<AxB[xC]>" as JAX spells it ("v5e:2x4", "v4:2x2x2", "v5p:4x4x4").
Compile-only devices carry ``.coords``; match them to physical chips by coordinates, never
by id (their ids are numbered host by host).
"""

from __future__ import annotations

import functools

from aoizora.compile import jaxenv  # noqa: F401  (sets the environment before jax loads)
from aoizora.compile.compile_target import DEVICES_PER_CHIP, parse_spec
from aoizora.errors import UserError

import jax
from jax.experimental import topologies

# Generations whose chips JAX describes with the "megacore" chip config.
_MEGACORE = {"v4", "v5p"}


def split_name(name: str) -> tuple[str, tuple[int, ...]]:
    """"v5e:2x4" -> ("v5e", (2, 4)). Raises UserError on a malformed name."""
    gen, sep, shape = name.partition(":")
    try:
        dims = tuple(int(d) for d in shape.split("x"))
    except ValueError:
        dims = ()
    if not sep or not dims or any(d <= 0 for d in dims):
        raise UserError(f"malformed topology name {name!r}: expected e.g. 'v5e:2x4' or 'v4:2x2x2'")
    return gen, dims


@functools.lru_cache(maxsize=None)
def compile_only_devices(spec: str) -> tuple:
    """The compile-only devices of a TPU slice, for deviceless compilation with libtpu.
    `spec` is a topology name with an optional wraparound suffix ("v5p:4x4x4/wrap=111",
    compile_target.CompileTarget.spec); without one no axis wraps."""
    name, wrap = parse_spec(spec)
    gen, dims = split_name(name)
    if gen not in DEVICES_PER_CHIP:
        raise UserError(
            f"no deviceless TPU compilation for generation {gen!r}: "
            f"use one of {', '.join(sorted(DEVICES_PER_CHIP))}"
        )
    chip_config = "megacore" if gen in _MEGACORE else "default"
    # A host holds up to 2x2x1 chips; a smaller slice is one host of its own size.
    padded = tuple(dims) + (1,) * (3 - len(dims))
    bounds = tuple(min(b, d) for b, d in zip((2, 2, 1), padded))
    try:
        desc = topologies.get_topology_desc(
            platform="tpu",
            topology_name=name,
            chip_config_name=chip_config,
            chips_per_host_bounds=bounds,
            num_slices=1,
            wrap=wrap,
        )
    except Exception as e:  # libtpu missing or topology rejected: both actionable
        raise UserError(f"cannot describe TPU topology {name!r}: {e}") from e
    return tuple(desc.devices)


def cpu_devices(n: int) -> list:
    """n CPU devices (the fallback when no TPU compiler is available)."""
    devices = jax.devices("cpu")
    if len(devices) < n:
        raise UserError(
            f"need {n} CPU devices but jax has {len(devices)}: "
            f"set XLA_FLAGS=--xla_force_host_platform_device_count={n} before jax starts"
        )
    return devices[:n]

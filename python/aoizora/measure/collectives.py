"""The collective sweep of `aoizora measure collectives`: each kind x each group shape of the
local slice x each size, timed on the devices, written as aoizora.measurements/1 (the file
`aoizora calibrate` reads).

    sweep(sl, kinds, sizes, repeats, progress=None) -> Sweep
        sl: local_slice.LocalSlice; kinds: measurements.KINDS spellings; sizes: bytes per
        device (an all-gather's input shard, the operand of the others, as
        single_collective.py means it); repeats >= 1 timed calls after one warm-up.
        A point that cannot run (it would not fit in memory, its size does not split into
        the group, XLA refuses it) is in Sweep.skipped with the reason, never dropped.
    document(sl, result, provenance) -> dict: the measurements file.
    measure(platform, n, kinds, sizes, repeats, progress=None) -> dict: the file for the
        first n devices of the platform (default: the TPU slice, or 8 CPU devices), swept;
        UserError when they form no catalog slice or have nothing to group.

Every program is a shard_map over local_slice.mesh(sl) of one collective on f32[n] per
device (n = bytes / 4); a permute shifts by one around each group (the last member sends to
the first, as a ring would, also on a line without wraparound).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from aoizora.errors import UserError
from aoizora.measure import local_slice, platform, timing
from aoizora.measure.sizes import fmt
from aoizora.hardware.measurements import SCHEMA

# Share of a device's memory a point may use (its input and output buffers).
_MEMORY_SHARE = 0.8


@dataclass
class Sweep:
    points: list = field(default_factory=list)    # measurement points (dicts)
    skipped: list = field(default_factory=list)   # [(point id, why)]
    dispatch_s: float = 0.0   # median time of an elementwise call on all devices (the floor)
    repeats: int = 0


def _body(kind: str, axes, k: int):
    from jax import lax

    axis = axes if len(axes) > 1 else axes[0]
    if kind == "all-gather":
        return lambda x: lax.all_gather(x, axis, tiled=True)
    if kind == "all-reduce":
        return lambda x: lax.psum(x, axis)
    if kind == "reduce-scatter":
        return lambda x: lax.psum_scatter(x, axis, tiled=True)
    if kind == "all-to-all":
        return lambda x: lax.all_to_all(x, axis, 0, 0, tiled=True)
    if kind == "collective-permute":
        return lambda x: lax.ppermute(x, axis, [(i, (i + 1) % k) for i in range(k)])
    raise ValueError(f"unknown collective kind {kind!r}")


def _program(body, mesh):
    import jax
    from jax.sharding import PartitionSpec as P

    spec = P(mesh.axis_names)
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=spec, out_specs=spec))


def _operand(mesh, nbytes: int):
    """f32[nbytes / 4] of ones on each device, made on the devices (no host copy)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec as P

    shape = (mesh.devices.size * (nbytes // 4),)
    sharding = NamedSharding(mesh, P(mesh.axis_names))
    return jax.jit(lambda: jnp.ones(shape, jnp.float32), out_shardings=sharding)()


def _buffer_bytes(kind: str, k: int, nbytes: int) -> int:
    """Input plus output bytes of one device."""
    out = {"all-gather": k * nbytes, "reduce-scatter": nbytes // k}.get(kind, nbytes)
    return nbytes + out


def _memory_limit(sl) -> tuple[float, str]:
    """(bytes each device may hold, what that is): its HBM where jax reports it, else an
    equal share of the host's memory (CPU devices)."""
    stats = sl.devices[0].memory_stats() or {}
    if stats.get("bytes_limit"):
        return stats["bytes_limit"], "its memory"
    host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return host / len(sl.devices), "its share of the host's memory"


def _why_not(kind: str, k: int, nbytes: int, limit: tuple[float, str]) -> str:
    if kind in ("reduce-scatter", "all-to-all") and (nbytes // 4) % k:
        return f"{nbytes // 4} f32 elements do not split into {k} equal blocks"
    need = _buffer_bytes(kind, k, nbytes)
    if need > _MEMORY_SHARE * limit[0]:
        return (f"needs {fmt(need)} per device, more than {_MEMORY_SHARE:.0%} of "
                f"{limit[1]} ({limit[0] / 2**30:.1f} GiB)")
    return ""


def _time_point(kind: str, shape, mesh, nbytes: int, repeats: int):
    """Timing, or the one-line reason XLA refused the program."""
    from jax.errors import JaxRuntimeError

    try:
        x = _operand(mesh, nbytes)
        compiled = _program(_body(kind, shape.axes, len(shape.groups[0])), mesh).lower(x).compile()
        return timing.time_call(compiled, (x,), repeats)
    except JaxRuntimeError as e:  # XLA's refusal, or out of memory (RESOURCE_EXHAUSTED)
        return (str(e).strip().splitlines() or ["XLA error"])[0][:200]


def _group_record(kind: str, shape) -> dict:
    rec = {"name": shape.name, "shape": shape.shape, "axes": list(shape.axes),
           "describe": shape.describe}
    if kind == "collective-permute":
        rec["pairs"] = [[g[i], g[(i + 1) % len(g)]]
                        for g in shape.groups for i in range(len(g))]
    else:
        rec["groups"] = [list(g) for g in shape.groups]
    return rec


def sweep(sl, kinds, sizes, repeats: int, progress=None) -> Sweep:
    mesh = local_slice.mesh(sl)
    shapes = local_slice.group_shapes(sl)
    out = Sweep(repeats=repeats)
    limit = _memory_limit(sl)
    elementwise = _program(lambda x: x + 1, mesh)
    x = _operand(mesh, min(sizes))
    out.dispatch_s = timing.time_call(elementwise.lower(x).compile(), (x,), repeats).median_s
    if progress:
        progress.phase("time collectives", len(kinds) * len(shapes) * len(sizes))
    for kind in kinds:
        for shape in shapes:
            for nbytes in sizes:
                pid = f"{sl.topology}-{kind}-{shape.name}-{fmt(nbytes)}"
                why = _why_not(kind, len(shape.groups[0]), nbytes, limit)
                t = why or _time_point(kind, shape, mesh, nbytes, repeats)
                if isinstance(t, str):
                    out.skipped.append((pid, t))
                else:
                    out.points.append(_point(pid, sl, kind, shape, nbytes, t))
                if progress:
                    progress.advance(pid)
    return out


def _point(pid: str, sl, kind: str, shape, nbytes: int, t) -> dict:
    return {"id": pid, "generation": sl.generation, "topology": sl.topology, "kind": kind,
            "group": _group_record(kind, shape), "bytes_per_device": nbytes,
            "seconds": t.median_s, "min_seconds": t.min_s, "max_seconds": t.max_s,
            "repeats": t.repeats, "approximate": False}


def document(sl, result: Sweep, provenance: dict) -> dict:
    source = f"aoizora measure collectives, {provenance['measured_on']}, {provenance['date']}"
    harness = (f"{provenance['measured_on']}: these are CPU devices standing in for the chips "
               f"of {sl.topology}; the times are XLA's CPU runtime, a check of the harness and "
               "of this file's format, never figures to fit a TPU profile to. "
               if sl.stand_in else "")
    note = (harness + "Collective times from `aoizora measure collectives`: each point's "
            "seconds is the median wall clock, over 'repeats' calls after one warm-up, from "
            "the call to jax.block_until_ready of its result (host dispatch included: see "
            "provenance.dispatch_floor_s, an elementwise call on the same devices). "
            "bytes_per_device: an all-gather's input shard, the operand of the others (f32).")
    for p in result.points:
        p["source"] = source
    return {
        "schema": SCHEMA, "note": note,
        "provenance": {**provenance, "warmup_calls": 1, "repeats": result.repeats,
                       "dispatch_floor_s": result.dispatch_s},
        "points": result.points,
        "skipped": [{"id": i, "why": w} for i, w in result.skipped],
    }


def measure(platform_name: str, n: int | None, kinds, sizes, repeats: int,
            progress=None) -> dict:
    devs = platform.devices(platform_name, n)
    n = n or (len(devs) if platform_name == "tpu" else platform.CPU_DEFAULT_DEVICES)
    sl = local_slice.local_slice(platform_name, devs[:n])
    if not local_slice.group_shapes(sl):
        raise UserError(f"{sl.topology} has one device: there is no collective to time")
    prov = platform.provenance(platform_name, list(sl.devices), sl.topology)
    return document(sl, sweep(sl, kinds, sizes, repeats, progress), prov)

"""Lower and compile candidates without weights, for a TPU slice (deviceless) or CPU devices.

Public API (others code against this):

    lower(candidate, model, workload, devices, *, order=None) -> str      StableHLO (Shardy)
    compile(candidate, model, workload, devices, *, order=None) -> str    compiled HLO text
    executable(candidate, model, workload, devices, *, order=None)
        -> (jax.stages.Compiled, abstract args with shardings): what `compile` compiles,
        ready to run on real devices (aoizora measure plan)
        devices: a target name ("v5e:2x4" -> compile-only TPU devices via libtpu; "cpu:8" ->
                 8 CPU devices) or a sequence of jax devices. The Mesh takes the devices in
                 the given order, or, with order=[coords, ...], device i of the mesh is the
                 one at chip coords order[i] (the placement; matched by .coords, never id).
        All three raise CompileError (errors.py) with a one-line reason for the failures a
        candidate may have (XLA's errors, out of memory, a sharding jax refuses); any other
        exception is a bug in aoizora and propagates.
    build(candidate, model, workload, devices, *, order=None) -> (jitted fn, abstract args)
    resolve_devices(devices, order=None) -> the devices in mesh order

One candidate here, in this process. A job of it (jobs.py), a batch of jobs cached and run
on workers (batch.py) and where the workers are (executor.py) build on this module.

`model` is a ModelSpec (models/base.py; WanConfig) or a FunctionSpec (the generic path, whose
candidates come from strategies.function_candidates).
"""

from __future__ import annotations

import re

from aoizora.compile import jaxenv  # noqa: F401  (environment before jax)
from aoizora.errors import (CompileError, CompilerOutOfMemory, TargetOutOfMemory, UserError,
                            one_line)
from aoizora.models.base import FunctionSpec
from aoizora.planning.strategies import Candidate, Layout, layout_for

import jax
from jax.errors import JAXIndexError, JAXTypeError, JaxRuntimeError

# What jax and XLA raise for a candidate they refuse while tracing or lowering (a sharding
# that does not divide a dimension, a kernel with no lowering for the platform). Anything
# else raised while building the program (TypeError, KeyError, AttributeError, ...) is a bug.
_LOWERING_FAILURES = (ValueError, NotImplementedError, JAXTypeError, JAXIndexError,
                      JaxRuntimeError)


def resolve_devices(devices, order=None) -> list:
    """Target name or device list -> the devices in mesh order."""
    if isinstance(devices, str):
        if devices.startswith("cpu"):
            n = int(devices.partition(":")[2] or 1)
            from aoizora.compile.tpu import cpu_devices

            devices = cpu_devices(n)
        else:
            from aoizora.compile.tpu import compile_only_devices

            devices = compile_only_devices(devices)
    devices = list(devices)
    if order is None:
        return devices
    from aoizora.planning.placement import device_keys

    by_key = dict(zip(device_keys(devices), devices))
    try:
        return [by_key[tuple(c)] for c in order]
    except KeyError as e:
        raise CompileError(f"no device at {e.args[0]} in this target") from None


def is_axes(a) -> bool:
    """A leaf of a model's axes tree: a tuple of mesh-axis names or None, one per dim."""
    return isinstance(a, tuple) and all(x is None or isinstance(x, str) for x in a)


def build(candidate: Candidate, model, workload, devices, *, order=None):
    """(jitted function, abstract arguments with shardings); nothing is allocated."""
    from aoizora.planning.strategies import make_mesh

    devs = resolve_devices(devices, order)
    mesh = make_mesh(candidate, devs[:candidate.n_chips])
    if isinstance(model, FunctionSpec):
        layout = Layout(candidate, mesh)
        shard = lambda s, a: jax.ShapeDtypeStruct(s.shape, s.dtype,
                                                  sharding=layout.sharding(a, s.shape))
        args = tuple(jax.tree.map(shard, arg, axes, is_leaf=lambda x: isinstance(
            x, jax.ShapeDtypeStruct)) for arg, axes in zip(model.args, model.arg_axes))
        out = jax.tree.map(lambda a: layout.sharding(a), model.out_axes, is_leaf=is_axes)
        return jax.jit(model.fn, out_shardings=out), args
    layout = layout_for(candidate, mesh, model)
    params = model.abstract_params()
    p_args = jax.tree.map(
        lambda a, s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=layout.sharding(a, s.shape)),
        model.param_axes(), params, is_leaf=is_axes)
    inputs = tuple(jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=layout.sharding(a, s.shape))
                   for s, a in zip(model.abstract_inputs(workload), model.input_axes(workload)))
    # With its shape where the model gives it: a mesh axis that does not divide the output
    # (data 4 over a call's 2 guided videos) is dropped, as for the inputs.
    out_shape = getattr(model, "output_shape", None)
    out_sharding = layout.sharding(model.output_axes(workload),
                                   out_shape(workload) if out_shape else None)

    def step(params, *inputs):
        return model.apply(params, *inputs, workload=workload, layout=layout)

    # A model whose parameters include resident weights the step does not read (the idle
    # expert of a two-expert model, models/experts.py) says keep_unused: they must stay
    # arguments, to count in the program's memory. Off otherwise: the flag also skips jax's
    # dead-code pass inside the program's loops, which would change every other program.
    keep = bool(getattr(model, "keep_unused", False))
    return jax.jit(step, out_shardings=out_sharding, keep_unused=keep), (p_args, *inputs)


def _target_out_of_memory(e: BaseException) -> bool:
    """XLA reports that a program does not fit the target with the RESOURCE_EXHAUSTED code."""
    return isinstance(e, JaxRuntimeError) and str(e).lstrip().startswith("RESOURCE_EXHAUSTED")


def _failure(candidate, what: str, e: BaseException) -> CompileError:
    cls = (TargetOutOfMemory if _target_out_of_memory(e) else
           CompilerOutOfMemory if isinstance(e, MemoryError) else CompileError)
    return cls(f"{candidate.name}: {what} failed: {one_line(e)}{_allocation(e)}")


def _allocation(e: BaseException) -> str:
    """libtpu's memory verdict, which its first line leaves out ("RESOURCE_EXHAUSTED: E1001:
    CompileTimeScopedVmemOom:"; the sizes come lines later): " (scoped allocation with size
    66.79M and limit 64.00M)", or "" when the message has none."""
    m = re.search(r"Scoped allocation with size \S+ and limit \S+", str(e))
    return f" ({m.group(0)[0].lower()}{m.group(0)[1:]})" if m else ""


def _lowered(candidate, model, workload, devices, order):
    """(the lowered step, its abstract arguments with shardings)."""
    try:
        fn, args = build(candidate, model, workload, devices, order=order)
        return fn.lower(*args), args
    except (CompileError, UserError):
        raise
    except _LOWERING_FAILURES + (MemoryError,) as e:
        raise _failure(candidate, "lowering", e) from e


def lower(candidate: Candidate, model, workload, devices, *, order=None) -> str:
    """StableHLO text (with Shardy shardings) of one step under the candidate."""
    return _lowered(candidate, model, workload, devices, order)[0].as_text()


def executable(candidate: Candidate, model, workload, devices, *, order=None):
    """(compiled executable, abstract arguments with shardings) of one step: on real devices
    it runs on arrays of those shapes and shardings."""
    lowered, args = _lowered(candidate, model, workload, devices, order)
    try:
        return lowered.compile(), args
    except (JaxRuntimeError, MemoryError) as e:  # XLA's compile errors, out of memory
        raise _failure(candidate, "compilation", e) from e


def compile(candidate: Candidate, model, workload, devices, *, order=None) -> str:  # noqa: A001
    """Compiled HLO text (TPU deviceless through libtpu, or CPU)."""
    return executable(candidate, model, workload, devices, order=order)[0].as_text()

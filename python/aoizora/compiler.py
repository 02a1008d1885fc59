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
    Job(kind, candidate, model, workload, target, order=None)     kind "lower" | "compile"
    run_jobs(jobs, *, workers=None, cache=Cache() | None, progress=None, executor=None,
             ahead=None)
        -> list[Outcome]: in worker processes (spawn), or on executor (executor.py: Ray);
        a job `ahead` (prefetch.py) has started is taken from it, one it has not
        started is run here;
        cached on disk by this process; an expected failure (CompileError) is
        an Outcome with .error (.out_of_memory when it ran out of memory); a bug in our code
        propagates from run_jobs; progress(done, total, outcome) after each job.
    Outcome: job name, kind, ok, text, error, out_of_memory, seconds, cached, peak_rss_mb, key

The cache key holds a fingerprint of the whole installed package (every .py file under it
and the bytes of the _core extension), so any edit invalidates compiled entries.

`model` is a ModelSpec (models/base.py; WanConfig) or a FunctionSpec (the generic path, whose
candidates come from strategies.function_candidates).
"""

from __future__ import annotations

import functools
import hashlib
import os
import resource
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from aoizora import jaxenv  # noqa: F401  (environment before jax)
from aoizora.cache import Cache, cache_key
from aoizora.fingerprint import code_fingerprint
from aoizora.errors import CompileError, CompilerOutOfMemory, UserError
from aoizora.models.base import FunctionSpec
from aoizora.optimized_hlo import optimized_hlo
from aoizora.strategies import Candidate, Layout, layout_for

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
            from aoizora.tpu import cpu_devices

            devices = cpu_devices(n)
        else:
            from aoizora.tpu import compile_only_devices

            devices = compile_only_devices(devices)
    devices = list(devices)
    if order is None:
        return devices
    from aoizora.placement import device_keys

    by_key = dict(zip(device_keys(devices), devices))
    try:
        return [by_key[tuple(c)] for c in order]
    except KeyError as e:
        raise CompileError(f"no device at {e.args[0]} in this target") from None


def _one_line(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:300]


def _is_axes(a) -> bool:
    return isinstance(a, tuple) and all(x is None or isinstance(x, str) for x in a)


def build(candidate: Candidate, model, workload, devices, *, order=None):
    """(jitted function, abstract arguments with shardings); nothing is allocated."""
    from aoizora.strategies import make_mesh

    devs = resolve_devices(devices, order)
    mesh = make_mesh(candidate, devs[:candidate.n_chips])
    if isinstance(model, FunctionSpec):
        layout = Layout(candidate, mesh)
        shard = lambda s, a: jax.ShapeDtypeStruct(s.shape, s.dtype,
                                                  sharding=layout.sharding(a, s.shape))
        args = tuple(jax.tree.map(shard, arg, axes, is_leaf=lambda x: isinstance(
            x, jax.ShapeDtypeStruct)) for arg, axes in zip(model.args, model.arg_axes))
        out = jax.tree.map(lambda a: layout.sharding(a), model.out_axes, is_leaf=_is_axes)
        return jax.jit(model.fn, out_shardings=out), args
    layout = layout_for(candidate, mesh, model)
    params = model.abstract_params()
    p_args = jax.tree.map(
        lambda a, s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=layout.sharding(a, s.shape)),
        model.param_axes(), params, is_leaf=_is_axes)
    inputs = tuple(jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=layout.sharding(a, s.shape))
                   for s, a in zip(model.abstract_inputs(workload), model.input_axes(workload)))
    out_sharding = layout.sharding(model.output_axes(workload))

    def step(params, *inputs):
        return model.apply(params, *inputs, workload=workload, layout=layout)

    # A model whose parameters include resident weights the step does not read (the idle
    # expert of a two-expert model, models/experts.py) says keep_unused: they must stay
    # arguments, to count in the program's memory. Off otherwise: the flag also skips jax's
    # dead-code pass inside the program's loops, which would change every other program.
    keep = bool(getattr(model, "keep_unused", False))
    return jax.jit(step, out_shardings=out_sharding, keep_unused=keep), (p_args, *inputs)


def _out_of_memory(e: BaseException) -> bool:
    """XLA reports memory exhaustion with the RESOURCE_EXHAUSTED status code."""
    return isinstance(e, MemoryError) or (
        isinstance(e, JaxRuntimeError) and str(e).lstrip().startswith("RESOURCE_EXHAUSTED"))


def _failure(candidate, what: str, e: BaseException) -> CompileError:
    cls = CompilerOutOfMemory if _out_of_memory(e) else CompileError
    return cls(f"{candidate.name}: {what} failed: {_one_line(e)}")


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


# ---- batches: worker processes and the cache ------------------------------------------------

@dataclass(frozen=True)
class Job:
    kind: str                 # "lower" | "compile" | "analyze" (optimized_hlo: TPU targets)
    candidate: Candidate
    model: Any                # picklable ModelSpec (WanConfig); others run in-process
    workload: Any
    target: str               # "v5e:2x4", "cpu:8", ...
    order: tuple | None = None  # chip coords in mesh order (the placement); None: target order

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.candidate.name}"


@dataclass
class Outcome:
    name: str
    kind: str
    ok: bool
    text: str | None = None
    error: str | None = None
    out_of_memory: bool = False   # the failure was memory (by error type, not message text)
    seconds: float = 0.0
    cached: bool = False
    peak_rss_mb: float | None = None  # peak resident memory of the process that did the work
    key: str = ""


def versions() -> dict[str, str]:
    """Versions of jax, jaxlib, libtpu and tokamax (ring candidates' kernel; those
    installed): what a compile or a measurement depends on."""
    from importlib import metadata

    v = {"jax": jax.__version__}
    for pkg in ("jaxlib", "libtpu", "libtpu-nightly", "tokamax"):
        try:
            v[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return v


def job_key(job: Job) -> dict[str, Any]:
    """The cache key fields. The device order enters only for compiles: lowered StableHLO
    names mesh axes, not devices (checked: the text is identical under a permuted order)."""
    order = job.order
    if job.kind == "lower":
        order = None
    elif order is None:
        from aoizora.placement import device_keys

        order = device_keys(resolve_devices(job.target))
    return {"kind": job.kind, "model": job.model.key(), "workload": job.workload.key()
            if hasattr(job.workload, "key") else repr(job.workload),
            "candidate": job.candidate.key(), "target": job.target,
            "order": None if order is None else [list(c) for c in order][:job.candidate.n_chips],
            "versions": versions(), "code": code_fingerprint(), "xla_flags": os.environ.get(
                "XLA_FLAGS", ""), "libtpu_flags": os.environ.get("LIBTPU_INIT_ARGS", "")}


def run_job(job: Job) -> Outcome:
    """One job in this process (no cache). A CompileError becomes an Outcome; any other
    exception is a bug and propagates."""
    t = time.perf_counter()
    _reset_peak_rss()
    try:
        fn = {"lower": lower, "compile": compile, "analyze": optimized_hlo}[job.kind]
        text = fn(job.candidate, job.model, job.workload, job.target, order=job.order)
        out = Outcome(job.name, job.kind, True, text=text)
    except CompileError as e:
        out = Outcome(job.name, job.kind, False, error=str(e),
                      out_of_memory=isinstance(e, CompilerOutOfMemory))
    out.seconds = time.perf_counter() - t
    out.peak_rss_mb = _peak_rss_mb()
    return out


def _reset_peak_rss() -> None:
    """A kept worker runs many jobs (executor.py): each job's peak is its own. Writing 5 to
    clear_refs resets VmHWM (Linux 4.0+); elsewhere the peak spans the worker's jobs."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _peak_rss_mb() -> float:
    """High-water resident memory of this process. VmHWM belongs to the process's own address
    space; ru_maxrss would also count the parent's memory at fork time (spawned workers)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_jobs(jobs: Sequence[Job], *, workers: int | None = None, cache: Cache | None = None,
             progress: Callable[[int, int, Outcome], None] | None = None,
             fresh_process: bool = False, executor=None, ahead=None, background: bool = False,
             stop=None) -> list[Outcome]:
    """Runs jobs (cache first, then on `executor`, default local worker processes: `workers`
    spawned processes; workers=0 runs in this process). Results in job order. fresh_process:
    one process per job (exact per-job peak memory, at the cost of a JAX start-up each).
    ahead: a prefetch.Prefetch whose jobs are taken from it, not run again. background: at
    idle priority where the executor can; stop: a threading.Event that cancels the batch
    (prefetch.Cancelled). This process fills the cache from the results. Ctrl-C cancels
    pending jobs; finished ones are already in the cache."""
    results: list[Outcome | None] = [None] * len(jobs)
    keys = [cache_key(job_key(j)) for j in jobs]
    done = 0

    def finish(i: int, out: Outcome, store: bool = True) -> None:
        nonlocal done
        out.key = keys[i]
        if store and out.ok and not out.cached and cache is not None:
            cache.put(keys[i], out.text, {"job": jobs[i].name, **job_key(jobs[i])})
        results[i] = out
        done += 1
        if progress:
            progress(done, len(jobs), out)

    todo, run_ahead = [], []
    for i, job in enumerate(jobs):
        # A job run ahead first: once done it is also in the cache, but it was not a hit.
        if ahead is not None and ahead.has(keys[i]):
            run_ahead.append(i)
            continue
        t = time.perf_counter()
        text = cache.get(keys[i]) if cache is not None else None
        if text is not None:
            finish(i, Outcome(job.name, job.kind, True, text=text, cached=True,
                              seconds=time.perf_counter() - t))
        else:
            todo.append(i)
    run = functools.partial(_execute, jobs, finish, workers=workers, executor=executor,
                            fresh_process=fresh_process, background=background, stop=stop)
    run(todo)
    late = []
    for i in run_ahead:  # its run ahead stored it in the cache
        out = ahead.take(keys[i])
        if out is None:
            late.append(i)
        else:
            finish(i, out, store=False)
    run(late)
    return results


def _execute(jobs: Sequence[Job], finish, todo: list[int], *, workers, executor,
             fresh_process: bool, background: bool, stop) -> None:
    """Runs jobs[todo] here (workers=0, or a model only this process can load) or on the
    executor; finish(i, outcome) for each."""
    if not todo:
        return
    in_process = [jobs[i].model for i in todo if runs_in_process(jobs[i].model)]
    if in_process and getattr(executor, "remote", False):
        raise UserError(f"{getattr(in_process[0], 'name', 'your model')} runs in this process "
                        f"(a worker could not load it), not on {executor.description}: plan it "
                        "without --executor")
    if workers == 0 or in_process:
        for i in todo:
            finish(i, run_job(jobs[i]))
        return
    own = executor is None
    if own:
        from aoizora.executor import LocalExecutor

        executor = LocalExecutor()
    try:
        executor.run([jobs[i] for i in todo], lambda k, out: finish(todo[k], out),
                     workers=workers, fresh_process=fresh_process, background=background,
                     stop=stop)
    finally:
        if own:
            executor.close()


def runs_in_process(model) -> bool:
    """A FunctionSpec, or a model whose class lives outside aoizora (a user's module loaded
    from a file), runs in this process: a spawned worker could not unpickle it."""
    return isinstance(model, FunctionSpec) or type(model).__module__.split(".")[0] != "aoizora"

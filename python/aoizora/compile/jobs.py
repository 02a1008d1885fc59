"""A job: one candidate to lower, compile or analyse for one target, and its outcome.

    Job(kind, candidate, model, workload, target, order=None, flags=())
                                    kind "lower" | "compile" | "analyze" (TPU targets);
                                    flags: libtpu flags (compile_flags.py) the compile runs
                                    under, in the environment of the worker process
    run_job(job) -> Outcome         in this process, no cache; an expected failure
                                    (CompileError) is an Outcome with .error
                                    (.out_of_memory when it ran out of memory); a bug
                                    propagates
    job_key(job) -> dict            what its result depends on: the cache key's fields,
                                    a fingerprint of the whole installed package among them
                                    (every .py file and the _core extension's bytes), so any
                                    edit invalidates compiled entries
    versions() -> dict              jax, jaxlib, libtpu, tokamax
    runs_in_process(model) -> bool  a model a spawned worker could not load
    Outcome: job name, kind, ok, text, error, out_of_memory, verdict, seconds, cached,
             peak_rss_mb, key, retried

A job carries only what a worker needs, so it travels to worker processes and Ray nodes
(executor.py); batch.py runs many, cached.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from typing import Any

from aoizora.compile import compiler
from aoizora.errors import CompileError, CompilerOutOfMemory, TargetOutOfMemory
from aoizora.compile.fingerprint import code_fingerprint
from aoizora.models.base import FunctionSpec
from aoizora.compile.optimized_hlo import optimized_hlo
from aoizora.planning.strategies import Candidate


@dataclass(frozen=True)
class Job:
    kind: str                 # "lower" | "compile" | "analyze" (optimized_hlo: TPU targets)
    candidate: Candidate
    model: Any                # picklable ModelSpec (WanConfig); others run in-process
    workload: Any
    target: str               # "v5e:2x4", "cpu:8", ...
    order: tuple | None = None  # chip coords in mesh order (the placement); None: target order
    # libtpu flags ("--xla_...=v") of the worker's LIBTPU_INIT_ARGS: libtpu reads them once
    # per process, so executor.py runs the job in a worker started with them.
    flags: tuple[str, ...] = ()

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
    # the failure is XLA's verdict that the program does not fit the target (TargetOutOfMemory):
    # the same job fails the same way, so batch.py caches it
    verdict: bool = False
    seconds: float = 0.0
    cached: bool = False
    peak_rss_mb: float | None = None  # peak resident memory of the process that did the work
    key: str = ""
    # why the job ran a second time (its first worker was lost: executor.py); "" if it did not
    retried: str = ""


def versions() -> dict[str, str]:
    """Versions of jax, jaxlib, libtpu and tokamax (ring candidates' kernel; those
    installed): what a compile or a measurement depends on."""
    from importlib import metadata

    v = {"jax": metadata.version("jax")}
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
        from aoizora.planning.placement import device_keys

        order = device_keys(compiler.resolve_devices(job.target))
    return {"kind": job.kind, "model": job.model.key(), "workload": job.workload.key()
            if hasattr(job.workload, "key") else repr(job.workload),
            "candidate": job.candidate.key(), "target": job.target,
            "order": None if order is None else [list(c) for c in order][:job.candidate.n_chips],
            "versions": versions(), "code": code_fingerprint(), "xla_flags": os.environ.get(
                "XLA_FLAGS", ""), "libtpu_flags": os.environ.get("LIBTPU_INIT_ARGS", ""),
            # Lowering is jax's alone: libtpu's flags change only compiled programs.
            "compile_flags": [] if job.kind == "lower" else list(job.flags)}


def run_job(job: Job) -> Outcome:
    """One job in this process (no cache). A CompileError becomes an Outcome; any other
    exception is a bug and propagates."""
    _check_flags(job)
    t = time.perf_counter()
    _reset_peak_rss()
    try:
        fn = {"lower": compiler.lower, "compile": compiler.compile,
              "analyze": optimized_hlo}[job.kind]
        text = fn(job.candidate, job.model, job.workload, job.target, order=job.order)
        out = Outcome(job.name, job.kind, True, text=text)
    except CompileError as e:
        out = Outcome(job.name, job.kind, False, error=str(e),
                      out_of_memory=isinstance(e, CompilerOutOfMemory),
                      verdict=isinstance(e, TargetOutOfMemory))
    out.seconds = time.perf_counter() - t
    out.peak_rss_mb = _peak_rss_mb()
    return out


def _check_flags(job: Job) -> None:
    """A job under flags runs only in a process whose libtpu was started with them: run
    elsewhere (this process, a worker of another set), its program would be another's under
    its key. A bug of the caller, not of the job: RuntimeError."""
    have = os.environ.get("LIBTPU_INIT_ARGS", "").split()
    missing = [f for f in job.flags if f not in have]
    if missing and job.kind != "lower":
        raise RuntimeError(f"{job.name}: run in a process without its libtpu flags "
                           f"{' '.join(missing)} (executor.py starts workers with them)")


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


def runs_in_process(model) -> bool:
    """A FunctionSpec, or a model whose class lives outside aoizora (a user's module loaded
    from a file), runs in this process: a spawned worker could not unpickle it."""
    return isinstance(model, FunctionSpec) or type(model).__module__.split(".")[0] != "aoizora"

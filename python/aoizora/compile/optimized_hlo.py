"""XLA's optimized HLO of a step for a TPU target, without waiting for the TPU backend.

Everything the analysis reads (the collectives, their schedule and groups, the fusions and
their FLOPs) is fixed when XLA's HLO passes end, latency-hiding scheduler included. On the
14B at 720p that is about a second into a compile whose TPU backend (LLO lowering of every
fusion, Mosaic kernels, code generation) then runs for minutes (libtpu's own log:
HLO_PASSES 0.4 s, BACKEND_PASSES 2-5 min). XLA writes the optimized module to its dump
folder (`--xla_dump_to`, `<module>.after_optimizations.txt`) as the HLO passes end, so a
child process compiles with that dump on, and the text is read and the child killed as soon
as the file is whole. bench/analysis_compile.py checks that the collective graph, Q2 and
the simulated step equal those of the full compile.

What this does not do is the backend's own checks: a kernel that overflows VMEM or a
program that overflows HBM fails there, after the text. What the backend's HBM check reads,
XLA's buffer assignment, is done by then: its memory report (`memory-usage-report.txt`,
written a fraction of a second after the text) gives the bytes the program allocates in
HBM, appended to the text as a comment line (hbm_bytes reads it back), so the planner can
predict that check (planning/compile_policy.backend_prediction) and compile in full only
where it cannot (compile_policy.compile_in_full).

The children are forked by a fork server (multiprocessing's "forkserver") that has imported
jax and the compiler once: a fresh interpreter importing them took about 2 s of the 4 s of
CPU a Wan 1.3B analysis costs on this machine. The server never starts a JAX backend, so a
fork of it holds no runtime threads; each child sets its own environment (this job's dump
folder in XLA_FLAGS) before its backend starts.

    optimized_hlo(candidate, model, workload, target, order=None) -> str
    hbm_bytes(text) -> int | None      the HBM bytes appended by optimized_hlo, if any
"""

from __future__ import annotations

import ctypes
import glob
import json
import multiprocessing
import os
import re
import shutil
import signal
import sys
import tempfile
import time

from aoizora.compile.signals import exit_quietly_on_sigterm
from aoizora.errors import CompileError, CompilerOutOfMemory, TargetOutOfMemory, UserError

MODULE = "jit_step"            # compiler.build's jitted step
_DONE = "after_optimizations.txt"
_NEXT = "after_optimizations-buffer-assignment.txt"   # written right after: _DONE is whole
_MEMORY = "after_optimizations-memory-usage-report.txt"   # buffer assignment's totals
_MEMORY_NEXT = "after_optimizations_after_buffer_assignment.txt"   # later: _MEMORY is whole
# How long to wait for the memory report once the text is whole (libtpu writes it ~0.05 s
# later); a libtpu that writes none gives a text without the figure, never a full compile.
_MEMORY_GRACE_SECONDS = 5.0
_HBM_LINE = "// aoizora.hbm_bytes="
# The total heads the report and ends with its size in words: a total followed by " (" is
# whole even while the rest of the report is being written. (The next file, _MEMORY_NEXT,
# comes ~0.05 s later on v5e but 12.6 s later for the Wan 1.3B on TPU7x: waiting for it lost
# every TPU7x figure to the grace below.)
# What libtpu prints (then exits) for a LIBTPU_INIT_ARGS flag it does not know.
_UNKNOWN_FLAG = re.compile(r"Unknown command line flag '([^']+)'")
_HBM_TOTAL = re.compile(r"Memory Space: default \(color=0\)\s*\nTotal bytes: (\d+) \(")
# What the fork server imports once for every child: the main module (else each child would
# import it again, as multiprocessing children do), then jaxenv (it sets the environment
# jax reads at import) and the rest.
_PRELOAD = ["__main__", "aoizora.compile.jaxenv", "jax", "aoizora.compile.compiler", "aoizora.models",
            "aoizora.pipeline.stage_specs"]


def optimized_hlo(candidate, model, workload, target: str, *, order=None,
                  poll_seconds: float = 0.05) -> str:
    """The optimized HLO text of the step (what compiler.compile's text holds for the
    analysis). Raises CompileError (CompilerOutOfMemory for memory) when lowering or XLA's
    HLO passes fail."""
    folder = tempfile.mkdtemp(prefix="aoizora-hlo-")
    flags = (f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={folder} "
             f"--xla_dump_hlo_as_text --xla_dump_hlo_module_re=^{MODULE}$").strip()
    child = _fork_server().Process(target=_child, args=(
        (candidate, model, workload, target, order), {**os.environ, "XLA_FLAGS": flags},
        folder), name=f"aoizora analysis {candidate.name}", daemon=True)
    try:
        child.start()
        text, whole_at = None, 0.0
        while True:
            exited = child.exitcode is not None
            if text is None:
                done = _dumped(folder, _DONE)
                if done and (exited or _dumped(folder, _NEXT)):
                    with open(done) as f:
                        text, whole_at = f.read(), time.perf_counter()
            if text is not None:
                report = _dumped(folder, _MEMORY)
                if report:
                    with open(report) as f:
                        said = f.read()
                    if (_HBM_TOTAL.search(said) or exited
                            or _dumped(folder, _MEMORY_NEXT)):
                        return _with_hbm(text, said)
                if exited or time.perf_counter() - whole_at > _MEMORY_GRACE_SECONDS:
                    return text
            elif exited:
                raise _child_failure(candidate, child.exitcode, folder)
            time.sleep(poll_seconds)
    finally:
        if child.pid is not None:
            if child.exitcode is None:
                child.kill()
            child.join()
            child.close()
        shutil.rmtree(folder, ignore_errors=True)


def _fork_server():
    """The multiprocessing context whose server forks the analysis children (started on
    first use in this process, with _PRELOAD imported)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(_PRELOAD)
    return ctx


def _dumped(folder: str, suffix: str) -> str | None:
    found = glob.glob(os.path.join(folder, f"*.{MODULE}.*{suffix}"))
    return found[0] if found else None


def _with_hbm(text: str, report: str) -> str:
    """The text with buffer assignment's HBM total as a last comment line (XLA's HLO syntax
    allows `//` comments, and so does our parser); the text alone when the report has none."""
    m = _HBM_TOTAL.search(report)
    return f"{text.rstrip()}\n{_HBM_LINE}{m.group(1)}\n" if m else text


def hbm_bytes(text: str) -> int | None:
    """The HBM bytes XLA's buffer assignment gave the program (arguments, outputs and
    temporaries in the default memory space; not the code), as optimized_hlo appended them;
    None for a text without them (a full compile's, or a libtpu that wrote no report)."""
    at = text.rfind(_HBM_LINE)
    if at < 0:
        return None
    return int(text[at + len(_HBM_LINE):].split(None, 1)[0])


def _die_with_parent() -> None:
    """The child is killed with the fork server, which ends with the process that started
    it (a worker killed by an interrupt), so that no compile runs on for minutes unowned:
    Linux prctl(PR_SET_PDEATHSIG, SIGKILL), then a check that the server did not die
    before it was set (the child would have been handed to init)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    if os.getppid() == 1:
        os._exit(1)


def _child_failure(candidate, exitcode: int, folder: str) -> CompileError:
    """The error the child reported (one JSON line in error.json), or how it died. An
    exception the child did not expect is a bug in aoizora: RuntimeError with the child's
    traceback."""
    said = _read(folder, "error.json")
    unknown = _UNKNOWN_FLAG.search(_read(folder, "stderr.txt"))
    if unknown:  # libtpu exits at start on a flag it does not know: the flags are wrong
        from importlib import metadata

        raise UserError(f"libtpu {metadata.version('libtpu')} does not know the compiler "
                        f"flag {unknown.group(1)!r} (LIBTPU_INIT_ARGS)")
    if exitcode == 3 and said:
        err = json.loads(said)
        cls = (TargetOutOfMemory if err.get("target") else
               CompilerOutOfMemory if err["out_of_memory"] else CompileError)
        return cls(err["error"])
    if exitcode == 1:
        trace = _read(folder, "stderr.txt")
        raise RuntimeError(f"{candidate.name}: the analysis compile failed (a bug):\n"
                           + trace[trace.rfind("Traceback"):])
    if exitcode < 0:
        why = signal.Signals(-exitcode).name
        return CompilerOutOfMemory(f"{candidate.name}: compilation killed by {why} "
                                   "(most likely out of memory)") \
            if exitcode == -signal.SIGKILL else \
            CompileError(f"{candidate.name}: compilation died of {why}")
    return CompileError(f"{candidate.name}: compilation ended (exit {exitcode}) "
                        "before XLA wrote the optimized HLO")


def _read(folder: str, name: str) -> str:
    try:
        with open(os.path.join(folder, name), errors="replace") as f:
            return f.read().strip()
    except OSError:
        return ""


def _child(job: tuple, env: dict[str, str], folder: str) -> None:
    """In the forked child: this job's environment before its backend starts, stderr to
    the folder (a traceback is read back from there), then the compile, whose dump the
    parent reads. A compile error is written to error.json, exit 3."""
    os.environ.clear()
    os.environ.update(env)
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the planner stops its children itself
    exit_quietly_on_sigterm()                      # before libtpu loads (signals.py)
    _die_with_parent()
    err = os.open(os.path.join(folder, "stderr.txt"), os.O_WRONLY | os.O_CREAT, 0o644)
    os.dup2(err, 2)
    os.close(err)
    from aoizora.compile import compiler

    candidate, model, workload, target, order = job
    try:
        compiler.compile(candidate, model, workload, target, order=order)
    except CompileError as e:
        with open(os.path.join(folder, "error.json"), "w") as f:
            json.dump({"error": str(e), "out_of_memory": isinstance(e, CompilerOutOfMemory),
                       "target": isinstance(e, TargetOutOfMemory)}, f)
        sys.exit(3)

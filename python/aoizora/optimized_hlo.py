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
predict that check (planner._backend_prediction). The planner compiles the plan's sharding
fully before it hands the plan back (planner._verify).

    optimized_hlo(candidate, model, workload, target, order=None) -> str
    hbm_bytes(text) -> int | None      the HBM bytes appended by optimized_hlo, if any
    python -m aoizora.optimized_hlo   (the child: a pickled job on stdin)
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from aoizora.errors import CompileError, CompilerOutOfMemory

MODULE = "jit_step"            # compiler.build's jitted step
_DONE = "after_optimizations.txt"
_NEXT = "after_optimizations-buffer-assignment.txt"   # written right after: _DONE is whole
_MEMORY = "after_optimizations-memory-usage-report.txt"   # buffer assignment's totals
_MEMORY_NEXT = "after_optimizations_after_buffer_assignment.txt"   # then: _MEMORY is whole
# How long to wait for the memory report once the text is whole (libtpu writes it ~0.05 s
# later); a libtpu that writes none gives a text without the figure, never a full compile.
_MEMORY_GRACE_SECONDS = 5.0
_HBM_LINE = "// aoizora.hbm_bytes="
_HBM_TOTAL = re.compile(r"Memory Space: default \(color=0\)\s*\nTotal bytes: (\d+)")


def optimized_hlo(candidate, model, workload, target: str, *, order=None,
                  poll_seconds: float = 0.05) -> str:
    """The optimized HLO text of the step (what compiler.compile's text holds for the
    analysis). Raises CompileError (CompilerOutOfMemory for memory) when lowering or XLA's
    HLO passes fail."""
    folder = tempfile.mkdtemp(prefix="aoizora-hlo-")
    flags = (f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={folder} "
             f"--xla_dump_hlo_as_text --xla_dump_hlo_module_re=^{MODULE}$").strip()
    stderr = open(os.path.join(folder, "stderr.txt"), "w+b")
    child = subprocess.Popen(
        [sys.executable, "-m", "aoizora.optimized_hlo"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=stderr, env={**os.environ, "XLA_FLAGS": flags})
    try:
        child.stdin.write(pickle.dumps((candidate, model, workload, target, order,
                                        os.getpid())))
        child.stdin.close()
        text, whole_at = None, 0.0
        while True:
            exited = child.poll() is not None
            if text is None:
                done = _dumped(folder, _DONE)
                if done and (exited or _dumped(folder, _NEXT)):
                    with open(done) as f:
                        text, whole_at = f.read(), time.perf_counter()
            if text is not None:
                report = _dumped(folder, _MEMORY)
                if report and (exited or _dumped(folder, _MEMORY_NEXT)):
                    with open(report) as f:
                        return _with_hbm(text, f.read())
                if exited or time.perf_counter() - whole_at > _MEMORY_GRACE_SECONDS:
                    return text
            elif exited:
                raise _child_failure(candidate, child, stderr)
            time.sleep(poll_seconds)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        child.stdout.close()
        stderr.close()
        shutil.rmtree(folder, ignore_errors=True)


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


def _die_with_parent(parent: int) -> None:
    """The child is killed with its parent (a worker killed by an interrupt), so that no
    compile runs on for minutes unowned: Linux prctl(PR_SET_PDEATHSIG, SIGKILL), set here
    rather than between fork and exec (a forked copy of a threaded JAX process may
    deadlock), then a check that the parent did not die before it was set."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _child_failure(candidate, child, stderr) -> CompileError:
    """The error the child reported (one JSON line), or how it died. An exception the child
    did not expect is a bug in aoizora: RuntimeError with the child's traceback."""
    said = child.stdout.read().decode(errors="replace").strip().splitlines()
    if child.returncode == 3 and said:
        err = json.loads(said[-1])
        cls = CompilerOutOfMemory if err["out_of_memory"] else CompileError
        return cls(err["error"])
    if child.returncode == 1:
        stderr.seek(0)
        trace = stderr.read().decode(errors="replace")
        raise RuntimeError(f"{candidate.name}: the analysis compile failed (a bug):\n"
                           + trace[trace.rfind("Traceback"):])
    if child.returncode < 0:
        why = signal.Signals(-child.returncode).name
        return CompilerOutOfMemory(f"{candidate.name}: compilation killed by {why} "
                                   "(most likely out of memory)") \
            if child.returncode == -signal.SIGKILL else \
            CompileError(f"{candidate.name}: compilation died of {why}")
    return CompileError(f"{candidate.name}: compilation ended (exit {child.returncode}) "
                        "before XLA wrote the optimized HLO")


def _child() -> int:
    from aoizora import jaxenv  # noqa: F401  (environment before jax, which unpickling loads)

    candidate, model, workload, target, order, parent = pickle.load(sys.stdin.buffer)
    _die_with_parent(parent)
    from aoizora import compiler

    try:
        compiler.compile(candidate, model, workload, target, order=order)
    except CompileError as e:
        print(json.dumps({"error": str(e),
                          "out_of_memory": isinstance(e, CompilerOutOfMemory)}), flush=True)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(_child())

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
program that overflows HBM fails there, after the text. The planner compiles the plan's
sharding fully before it hands the plan back (planner._verify).

    optimized_hlo(candidate, model, workload, target, order=None) -> str
    python -m aoizora.optimized_hlo   (the child: a pickled job on stdin)
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import pickle
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
        while True:
            done = glob.glob(os.path.join(folder, f"*.{MODULE}.*{_DONE}"))
            exited = child.poll() is not None
            if done and (exited or glob.glob(os.path.join(folder, f"*.{MODULE}.*{_NEXT}"))):
                with open(done[0]) as f:
                    return f.read()
            if exited:
                raise _child_failure(candidate, child, stderr)
            time.sleep(poll_seconds)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        child.stdout.close()
        stderr.close()
        shutil.rmtree(folder, ignore_errors=True)


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

"""What is compiled, and how far: the compile and full-compile policy of a plan.

On TPU targets a sharding's program comes from an analysis compile (XLA's optimized HLO
without the TPU backend, optimized_hlo.py); a "full compile" also runs the TPU backend and
its own checks (a kernel over VMEM, a program over HBM). A sharding is compiled in full only
where backend_prediction cannot predict the backend's verdict from the analysis, or when
Settings.verify / verify_baselines ask. Everything here reads and writes a run_state.Run:
run.graphs (the loaded programs), run.compiled_in_full (the backend accepted),
run.predicted (analysed only: the predicted verdict), and a Skip (kind COMPILE, LOAD or
FULL_COMPILE) for each candidate that fails; a refused one leaves run.graphs.
"""

from __future__ import annotations

import os
import time

from aoizora import _core
from aoizora.compile import optimized_hlo
from aoizora.compile.jobs import Outcome
from aoizora.planning import kernels
from aoizora.planning.run_state import COMPILE, FULL_COMPILE, LOAD, Run, run_batch
from aoizora.planning.stage2 import UnknownTripCount

# Buffer assignment's HBM bytes leave this share of the device's HBM for what they do not
# count (the program's code, a few MiB; libtpu's reserve): above it the backend decides.
HBM_PREDICTION_SHARE = 0.9


def compile_candidates(run: Run, name: str, todo: list, full: list = ()) -> None:
    """Compiles `todo` (cached) and loads each collective graph into run.graphs; a candidate
    that fails to compile or load is a Skip. `full`: shardings analysed already, compiled in
    full in the same batch (compile_in_full's checks), so that on a machine of a few cores a
    full compile, which keeps about one core busy for most of its time, runs beside the
    analyses. Analyses run one per core: the child compile of each is mostly one thread
    (starting Python and JAX, lowering, XLA's HLO passes)."""
    full = not_compiled_in_full(run, full)
    todo = [c for c in todo if c.name not in run.tried]
    if not todo and not full:
        return
    run.tried.update(c.name for c in todo)
    t0 = time.perf_counter()
    jobs = ([run.job(run.analysis_kind, c) for c in todo]
            + [run.job("compile", c) for c in full])
    workers = run.settings.workers
    if workers is None and run.analysis_kind == "analyze" and not run.settings.executor:
        workers = max(1, min(len(jobs), os.cpu_count() or 1))
    outcomes = run_batch(run.progress, name, run.settings, jobs, workers=workers,
                         ahead=run.ahead)
    run.outcomes += outcomes
    for c, o in zip(todo, outcomes):
        _load(run, c, o)
    record_full_compiles(run, full, outcomes[len(todo):])
    if full:
        run.timings["verify"] = round(run.timings.get("verify", 0)
                                      + time.perf_counter() - t0, 3)


def _load(run: Run, c, o: Outcome) -> None:
    """`c`'s compiled program into run.graphs (its analysis's HBM bytes into run.hbm_of), or
    a Skip saying why it cannot be."""
    if not o.ok:
        run.skip(c.name, COMPILE, f"compile failed: {o.error}")
        return
    hbm = optimized_hlo.hbm_bytes(o.text) if run.analysis_kind == "analyze" else None
    if hbm is not None:
        run.hbm_of[c.name] = hbm
    try:
        run.graphs[c.name] = run.stage2.load(o.text)
    except UnknownTripCount as e:
        run.skip(c.name, LOAD, str(e))
    except _core.CoreError as e:
        run.skip(c.name, LOAD, f"compiled HLO unreadable: {e}")


def not_compiled_in_full(run: Run, todo) -> list:
    """Of `todo`, the shardings analysed and not yet compiled in full (none when every
    candidate is compiled in full)."""
    if run.analysis_kind == "compile":
        return []
    return [c for c in {c.name: c for c in todo}.values()
            if c.name in run.graphs and c.name not in run.compiled_in_full]


def record_full_compiles(run: Run, todo: list, outcomes: list[Outcome]) -> None:
    """The backend's verdicts: one it refuses is a Skip (FULL_COMPILE) and leaves
    run.graphs; one it accepts joins run.compiled_in_full."""
    for c, o in zip(todo, outcomes):
        if o.ok:
            run.compiled_in_full.add(c.name)
        else:
            del run.graphs[c.name]
            run.skip(c.name, FULL_COMPILE, f"full compile failed: {o.error}")


def compile_in_full(run: Run, name: str, todo: list) -> None:
    """Full compiles, TPU backend included, of shardings that were analyzed from XLA's
    optimized HLO: the backend's own checks (a kernel over VMEM, a program over HBM) come
    after that text. One the backend refuses is a Skip and leaves run.graphs."""
    todo = not_compiled_in_full(run, todo)
    if not todo:
        return
    t0 = time.perf_counter()
    outcomes = run_batch(run.progress, name, run.settings,
                         [run.job("compile", c) for c in todo], ahead=run.ahead)
    run.outcomes += outcomes
    record_full_compiles(run, todo, outcomes)
    run.timings["verify"] = round(run.timings.get("verify", 0) + time.perf_counter() - t0, 3)


def plan_always_in_full(run: Run) -> bool:
    """Whether the plan's sharding goes through the TPU backend even where the analysis
    predicts its verdict (Settings.verify or verify_baselines)."""
    return run.settings.verify or run.settings.verify_baselines


def unpredicted(run: Run, cands, force: bool | None = None) -> list:
    """The shardings among `cands` to compile in full: every one with `force` (default:
    verify_baselines), else those whose backend verdict backend_prediction cannot give.
    The others stay analysed only, their predicted verdict in run.predicted (said in the
    plan and its tables)."""
    force = run.settings.verify_baselines if force is None else force
    out = []
    for c in dict.fromkeys(cands):
        if (run.analysis_kind == "compile" or c.name in run.compiled_in_full
                or c.name not in run.graphs):
            continue
        why = None if force else backend_prediction(run, c)
        if why is None:
            out.append(c)
        else:
            run.predicted[c.name] = why
    return out


def backend_prediction(run: Run, c) -> str | None:
    """Why the TPU backend will accept `c`'s program, from what its analysis compile gave:
    the HBM bytes of XLA's buffer assignment (optimized_hlo.hbm_bytes) within
    HBM_PREDICTION_SHARE of one device's HBM, and the attention kernel's blocks within the
    scoped VMEM limit by kernels.vmem_bytes (an upper bound of what the kernel takes). None
    when either is over or unknown: only the backend can say, so the sharding is compiled
    in full. A kernel that returns its residuals (the ring steps: tokamax's ring kernel, jax's
    splash kernel in the Ulysses x ring form) is held to its own bound, which counts its
    outputs, the batch and Mosaic's spill slots, and only below the limit by
    kernels.RESIDUAL_VMEM_MARGIN (kernels.backend_vmem; docs/planner.md)."""
    spec = run.stage2.topology.spec
    hbm = spec["hbm_bytes"] / spec.get("cores_per_chip", 1)
    used = run.hbm_of.get(c.name)
    if used is None or used > HBM_PREDICTION_SHARE * hbm:
        return None
    said = [f"HBM {_size(used)} of {_size(hbm)} (XLA's buffer assignment)"]
    if c.block_q:  # a Pallas attention kernel with its blocks (none on the blockwise core)
        vmem, most = kernels.backend_vmem(c, run.cfg.dim // run.cfg.heads, run.wl.batch,
                                          spec.get("generation", ""))
        limit = kernels.scoped_vmem_bytes()
        if vmem > most:
            return None
        said.append(f"attention kernel VMEM at most {vmem / 2**20:.1f} of "
                    f"{limit / 2**20:.0f} MiB" + (
                        f" (residuals returned: predicted below {most / 2**20:.1f})"
                        if kernels.returns_residuals(c) else ""))
    return "analysed, not compiled in full; predicted to compile: " + ", ".join(said)


def _size(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"

"""`aoizora plan-many`: plan a list of settings (settings_file.Request), their lowering and
compile jobs on one executor (executor.py), each plan written atomically as it completes.

    run(requests, out_dir, settings, *, concurrent=1, force=False, keep_going=False,
        progress_for, log) -> list[Row], in the order of `requests`

Resumable: a setting whose plan is in out_dir, written by this code (code fingerprint) for
the same setting, compile target and files (sha256), is kept and said so; any other is
planned again and the reason said. A setting the planner refuses (no sharding fits, every
Top-K candidate failed) is a row with the reason; the others go on. The executor lost under
a setting (ExecutorLost: a Ray node or cluster gone) stops the run, the plans written kept;
with keep_going it is a row ("lost") and the next setting is tried.

Settings are planned one at a time in this thread, or `concurrent` at once in threads (for a
Ray cluster: each setting's jobs then fill it while another setting's driver work runs).
Plans are written by this thread only, so Ctrl-C never leaves one half-written.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from aoizora.atomic import write_atomic
from aoizora.errors import ExecutorLost, NoFitError, UserError
from aoizora.inputs.settings_file import Request
from aoizora.plan_format import plan_json


@dataclass
class Row:
    key: str
    status: str                     # "planned" | "kept" | "no-fit" | "error" | "lost"
    path: str | None = None         # the plan file (planned or kept)
    reason: str = ""                # why it was not planned (no-fit, error, lost), or was
                                    # replanned
    candidate: str | None = None
    placement: str | None = None
    simulated_s: float | None = None   # simulated seconds per forward pass of the plan
    speedup_vs_existing: float | None = None
    # across joint draws of the model: the 90 % interval of that speedup and P(plan faster)
    # (confidence.py); None for a plan made without draws
    speedup_interval: tuple[float, float] | None = None
    p_faster: float | None = None
    planning_s: float | None = None    # measured wall clock of the planning run
    cache_hits: int | None = None
    jobs: int | None = None
    skipped: int | None = None         # candidates reported and skipped


def plan_path(out_dir: str, r: Request) -> str:
    return os.path.join(out_dir, f"{r.key}.json")


def record(r: Request, compile_target: str) -> dict[str, Any]:
    """What a written plan must match to be kept: the setting, its files' content, the
    compile target and the code."""
    from aoizora.compile.fingerprint import code_fingerprint

    return {"setting": r.record(), "compile_target": compile_target, "code": code_fingerprint()}


def reuse(path: str, want: dict[str, Any]) -> tuple[dict | None, str]:
    """(the plan at path, "") when it was written for `want`; else (None, why not)."""
    try:
        with open(path) as f:
            d = json.load(f)
        got = d["planning"]["plan_many"]
    except FileNotFoundError:
        return None, ""
    except (OSError, ValueError, KeyError, TypeError) as e:
        return None, f"the plan there is unreadable ({type(e).__name__}), planning again"
    if not isinstance(got, dict) or got.get("code") != want["code"]:
        return None, "the plan there was made by other code, planning again"
    if got != want:
        return None, "the plan there was made for other options, planning again"
    return d, ""


def row_of(r: Request, status: str, path: str, d: dict, reason: str = "") -> Row:
    ch, p = d.get("choice") or {}, d.get("planning") or {}
    existing = (d.get("baselines") or {}).get("existing") or {}
    sim, base = ch.get("simulated_s"), existing.get("simulated_s")
    drawn = (existing.get("extra") or {}).get("speedup")
    return Row(r.key, status, path, reason, ch.get("candidate"), ch.get("placement"), sim,
               base / sim if sim and base else None,
               (drawn["low"], drawn["high"]) if drawn else None,
               drawn["p_faster"] if drawn else None, p.get("seconds"), p.get("cache_hits"),
               p.get("jobs"), len(p.get("skipped") or []))


def run(requests: list[Request], out_dir: str, settings, *, concurrent: int = 1,
        force: bool = False, keep_going: bool = False,
        progress_for: Callable[[Request], Any] | None = None,
        log: Callable[[str], None] = lambda s: None) -> list[Row]:
    """Plans every request not planned before (see module doc); `settings` (planner.Settings)
    gives the executor, cache and compile target, a request its top_k and hardware.
    progress_for(request) -> a context manager giving the setting's planner.Progress.
    ExecutorLost, unless keep_going, saying how many plans are kept."""
    rows: dict[str, Row] = {}
    todo = []
    for r in requests:
        path, want = plan_path(out_dir, r), record(r, settings.compile_target)
        d, why = (None, "") if force else reuse(path, want)
        if d is not None:
            rows[r.key] = row_of(r, "kept", path, d)
            log(f"{r.key}: kept, planned before by this code ({path})")
        else:
            if why:
                log(f"{r.key}: {why}")
            todo.append((r, want, why))
    t0, n = time.perf_counter(), len(todo)
    try:
        for i, (r, outcome, want, why) in enumerate(_planned(todo, settings, concurrent,
                                                              progress_for, keep_going), 1):
            rows[r.key] = _finish(r, outcome, plan_path(out_dir, r), want, why)
            row = rows[r.key]
            log(f"[{i}/{n}] {r.key}: {row.status}"
                + (f" in {row.planning_s:.1f} s -> {row.path}" if row.status == "planned"
                   else f": {row.reason}")
                + f" ({time.perf_counter() - t0:.0f} s so far)")
    except ExecutorLost as e:
        done = sum(row.path is not None for row in rows.values())
        e.kept = f"{e.kept or 'nothing cached'}; the {done} plan(s) in {out_dir} are kept"
        raise
    return [rows[r.key] for r in requests]


def _finish(r: Request, outcome, path: str, want: dict, why: str) -> Row:
    """Writes the plan of a planned setting (atomically); the row of any setting."""
    if isinstance(outcome, NoFitError):
        return Row(r.key, "no-fit", reason=str(outcome))
    if isinstance(outcome, UserError):
        return Row(r.key, "error", reason=str(outcome))
    if isinstance(outcome, ExecutorLost):
        return Row(r.key, "lost", reason=str(outcome))
    d = outcome.plan.to_dict()
    d["planning"]["plan_many"] = want
    try:
        write_atomic(path, plan_json(d) + "\n")
    except OSError as e:
        raise UserError(f"cannot write {path}: {e.strerror}") from None
    return row_of(r, "planned", path, d, why)


def _plan_one(r: Request, settings, progress, keep_going: bool):
    """The PlanResult, or the UserError (NoFitError) the planner refused the setting with,
    or with keep_going the ExecutorLost it met."""
    from dataclasses import replace

    from aoizora.planning.planner import plan

    mine = replace(settings, top_k=r.top_k, hardware=r.hardware)
    try:
        return plan(r.model, r.video, r.frames, r.topology, mine, progress)
    except UserError as e:
        return e
    except ExecutorLost as e:
        if keep_going:
            return e
        raise


def _planned(todo, settings, concurrent: int, progress_for, keep_going: bool = False):
    """Yields (request, PlanResult, UserError or ExecutorLost, record, reason) as each
    setting is done."""
    from contextlib import nullcontext

    def one(r):
        with progress_for(r) if progress_for else nullcontext() as progress:
            return _plan_one(r, settings, progress, keep_going)

    if concurrent <= 1:
        for r, want, why in todo:
            yield r, one(r), want, why
        return
    yield from _in_threads(todo, one, concurrent)


def _in_threads(todo, one, concurrent: int):
    """`concurrent` daemon threads plan; this thread collects. A bug in a thread is raised
    here; on Ctrl-C (or any exception here) the threads' results are dropped and, being
    daemons, they end with the process (the executor's close() cancels their jobs)."""
    work: queue.Queue = queue.Queue()
    for item in todo:
        work.put(item)
    done: queue.Queue = queue.Queue()
    stop = threading.Event()

    def worker():
        while not stop.is_set():
            try:
                r, want, why = work.get_nowait()
            except queue.Empty:
                return
            try:
                done.put((r, one(r), want, why))
            except BaseException as e:  # a bug, or Ray stopped under us: the collector decides
                done.put((r, e, want, why))

    for _ in range(min(concurrent, len(todo))):
        threading.Thread(target=worker, daemon=True).start()
    try:
        for _ in todo:
            r, outcome, want, why = done.get()
            if isinstance(outcome, BaseException) and not isinstance(
                    outcome, (UserError, ExecutorLost)):
                raise outcome
            yield r, outcome, want, why
    finally:
        stop.set()

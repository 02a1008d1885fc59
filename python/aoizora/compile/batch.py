"""A batch of jobs: the cache first, then the executor, results in job order. A job the
compiler refused (the program does not fit the target) is cached as that failure too.

    run_jobs(jobs, *, workers=None, cache=Cache() | None, progress=None, executor=None,
             ahead=None, fresh_process=False, background=False, stop=None) -> list[Outcome]
        on `executor` (executor.py; default local worker processes, `workers` of them;
        workers=0 runs in this process); a job `ahead` (prefetch.py) has started is taken
        from it, one it has not started is run here; this process fills the cache from the
        results as they arrive; progress(done, total, outcome) after each job.
        ExecutorLost (the executor died under the batch) says what the cache kept.
"""

from __future__ import annotations

import functools
import time
from typing import Callable, Sequence

from aoizora.compile.cache import Cache, cache_key
from aoizora.errors import ExecutorLost, UserError
from aoizora.compile.executor import LocalExecutor
from aoizora.compile.jobs import Job, Outcome, job_key, run_job, runs_in_process


def run_jobs(jobs: Sequence[Job], *, workers: int | None = None, cache: Cache | None = None,
             progress: Callable[[int, int, Outcome], None] | None = None,
             fresh_process: bool = False, executor=None, ahead=None, background: bool = False,
             stop=None) -> list[Outcome]:
    """Runs jobs (cache first, then on `executor`, default local worker processes: `workers`
    spawned processes; workers=0 runs in this process). Results in job order. fresh_process:
    one process per job (exact per-job peak memory, at the cost of a JAX start-up each).
    ahead: a prefetch.Prefetch whose jobs are taken from it, not run again. background: at
    idle priority where the executor can; stop: a threading.Event that cancels the batch
    (executor.Cancelled). This process fills the cache from the results. Ctrl-C cancels
    pending jobs; finished ones are already in the cache."""
    results: list[Outcome | None] = [None] * len(jobs)
    keys = [cache_key(job_key(j)) for j in jobs]
    done = 0

    def finish(i: int, out: Outcome, store: bool = True) -> None:
        nonlocal done
        out.key = keys[i]
        if store and not out.cached and cache is not None and (out.ok or out.verdict):
            meta = {"job": jobs[i].name, **job_key(jobs[i])}
            if out.ok:
                cache.put(keys[i], out.text, meta)
            else:  # the compiler's verdict, which the same job meets again
                cache.put_failure(keys[i], out.error, meta)
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
        refused = cache.get_failure(keys[i]) if cache is not None and text is None else None
        if text is not None:
            finish(i, Outcome(job.name, job.kind, True, text=text, cached=True,
                              seconds=time.perf_counter() - t))
        elif refused is not None:
            finish(i, Outcome(job.name, job.kind, False, error=refused, out_of_memory=True,
                              verdict=True, cached=True, seconds=time.perf_counter() - t))
        else:
            todo.append(i)
    run = functools.partial(_execute, jobs, finish, workers=workers, executor=executor,
                            fresh_process=fresh_process, background=background, stop=stop)
    try:
        run(todo)
        late = []
        for i in run_ahead:  # its run ahead stored it in the cache
            out = ahead.take(keys[i])
            if out is None:
                late.append(i)
            else:
                finish(i, out, store=False)
        run(late)
    except ExecutorLost as e:
        if e.kept is None:
            e.kept = _kept(cache)
        raise
    return results


def _kept(cache: Cache | None) -> str:
    """What an executor's death left: the results this process stored, which a rerun reads."""
    if cache is None:
        return "nothing was kept (no cache: --no-cache)"
    return (f"kept the {cache.stored} results finished before it in the cache {cache.root} "
            "(a rerun reads them)")


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
        executor = LocalExecutor()
    try:
        executor.run([jobs[i] for i in todo], lambda k, out: finish(todo[k], out),
                     workers=workers, fresh_process=fresh_process, background=background,
                     stop=stop)
    finally:
        if own:
            executor.close()

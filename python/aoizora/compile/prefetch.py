"""Jobs run ahead of the plan's phases: the existing deployments' compiles start with the
plan, beside lowering, Stage 1 and the Top-K's compiles, instead of after the decision.

    ahead = Prefetch.start(jobs, cache, executor)   inert when running ahead cannot help
    run_jobs(..., ahead=ahead)                      a job the thread has started is taken from
                                                    it (waited for), not run again; one it has
                                                    not started yet the caller runs itself
    ahead.close()                                   stops what is left; waits for the thread

Which jobs can run ahead: only those that need nothing the plan computes. A baseline's
candidate is known once the shardings are enumerated (its tags), so its analysis and full
compiles can start at once; whether it fits in memory is known only after Stage 1, so a
baseline that does not fit is compiled for nothing (its outcome is never asked for).

Jobs run ahead only on an executor with room for them beside the plan's own jobs
(`executor.room_ahead`): a Ray cluster of 8 or more CPUs, where tasks reserve CPUs and have
no priority. Local processes have none by default: on two cores running ahead gained
nothing measurable (docs/planner.md), and a job the plan waits for, started at idle
priority, starves while anything else keeps the cores busy. LocalExecutor(room_ahead=True)
runs them in a pool of their own at idle priority (nice 19).
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
from typing import Sequence

from aoizora.compile.batch import run_jobs
from aoizora.compile.cache import Cache, cache_key
from aoizora.compile.executor import Cancelled
from aoizora.compile.jobs import Job, Outcome, job_key, runs_in_process


class Prefetch:
    def __init__(self, jobs: Sequence[Job] = (), cache: Cache | None = None, executor=None):
        self.futures: dict[str, cf.Future] = {}
        # Who runs each job: "pending" until the thread starts it ("ahead") or the plan asks
        # for it first ("plan": the plan runs it itself rather than wait behind other jobs).
        self.owner: dict[str, str] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = None
        if not jobs:
            return
        jobs = list({cache_key(job_key(j)): j for j in jobs}.items())
        self.futures = {k: cf.Future() for k, _ in jobs}
        self.owner = dict.fromkeys(self.futures, "pending")
        self.thread = threading.Thread(target=self._work, args=(jobs, cache, executor),
                                       name="aoizora-prefetch", daemon=True)
        self.thread.start()

    @classmethod
    def start(cls, jobs: Sequence[Job], cache: Cache | None, executor) -> "Prefetch":
        """Runs `jobs` ahead, or returns an inert Prefetch where that cannot help: a model
        that runs in this process, or a Ray without room beside the plan's own jobs."""
        if any(runs_in_process(j.model) for j in jobs):
            return cls()
        if not getattr(executor, "room_ahead", False):  # None: local processes, no room
            return cls()
        return cls(jobs, cache, executor)

    def _work(self, jobs: list[tuple[str, Job]], cache: Cache | None, executor) -> None:
        """One job at a time, each claimed before it starts, so that the plan can take over
        one it needs before the thread reaches it."""
        def done(_i, _n, out: Outcome) -> None:
            self.futures[out.key].set_result(out)

        for key, job in jobs:
            with self.lock:
                if self.stop.is_set() or self.owner[key] != "pending":
                    continue
                self.owner[key] = "ahead"
            try:
                run_jobs([job], workers=1, cache=cache, executor=executor, progress=done,
                         background=True, stop=self.stop)
            except Cancelled:
                break
            except BaseException as e:  # a bug in a worker: the plan raises it where it waits
                for f in self.futures.values():
                    if not f.done():
                        f.set_exception(e)
                return
        for f in self.futures.values():
            if not f.done():
                f.cancel()

    def has(self, key: str) -> bool:
        return key in self.futures

    def ran_ahead(self) -> int:
        """Jobs the thread started (the others the plan ran itself, or nobody needed)."""
        return sum(o == "ahead" for o in self.owner.values())

    def take(self, key: str) -> Outcome | None:
        """The outcome of the job with this cache key, waiting for it if the thread has
        started it; None when it was not run ahead, was stopped before it ran, or has not
        started yet (it is then the caller's to run)."""
        f = self.futures.get(key)
        if f is None:
            return None
        with self.lock:
            if self.owner[key] == "pending":
                self.owner[key] = "plan"
                return None
        try:
            return f.result()
        except cf.CancelledError:
            return None

    def close(self) -> None:
        """Stops the jobs not yet done (their workers killed) and waits for the thread."""
        self.stop.set()
        if self.thread is not None:
            self.thread.join()

"""Where lower and compile jobs run: local worker processes (the default) or a Ray cluster.

    executor = make_executor("local" | "ray" | "ray://HOST:PORT")   UserError on a bad name or
                                                                     an unreachable cluster
    add_argument(parser); executor = from_args(args)                 --executor for a command
    executor.run(jobs, done, workers=None, fresh_process=False,      done(i, Outcome) per job,
                 background=False, stop=None)                        in completion order;
                                                                     background: idle priority
                                                                     (local); stop: an Event
                                                                     that cancels the batch
    executor.room_ahead                                              may jobs run ahead of a
                                                                     plan (prefetch.py)?
    executor.description                                             "local processes", ...
    executor.close()                                                 stops what it started

A job carries only what a worker needs (jobs.Job: model config, workload, candidate,
target); the worker sends back an Outcome (for Ray through its object store) and writes
nothing: the driver fills the content-addressed cache (batch.run_jobs), so a second run
on any machine hits it, and Ctrl-C cannot leave a half-written entry (cache.py).

Faults, by what is lost (docs/planner.md, "Where jobs run"):
- a worker (killed, for memory or by hand; on Ray also a lost worker node): its job runs
  once more, and the Outcome says why (Outcome.retried); dying again, the job comes back as
  a failed Outcome ("worker died twice") that the planner reports and skips like a failed
  compile;
- the Ray itself (this machine's raylet died, a `ray://` cluster stopped or unreachable):
  ExecutorLost, naming what was lost and the jobs in flight; nothing can run, the command
  stops and the same command resumes from the cache.
An exception raised by our own code in a worker is a bug and propagates, as in a local
worker. Ray is imported only when asked for.

`work` (default jobs.run_job) is what a worker runs for one job: a seam for tests that
need a worker to die.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import functools
import logging
import multiprocessing
import os
import re
import signal
import threading
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from aoizora.compile import compile_flags
from aoizora.compile.signals import exit_quietly_on_sigterm
from aoizora.errors import ExecutorLost, UserError, one_line
from aoizora.compile.jobs import Job, Outcome, run_job, versions

Done = Callable[[int, Outcome], None]


class Cancelled(Exception):
    """A batch stopped by its `stop` event (prefetch.py stops the jobs it runs ahead)."""

_RAY_ADDRESS = re.compile(r"ray://[A-Za-z0-9.\-_\[\]:]+:\d+")


def check_name(name: str) -> str:
    """The executor name as given, or UserError: local, ray, or ray://HOST:PORT."""
    if name in ("local", "ray") or _RAY_ADDRESS.fullmatch(name):
        return name
    raise UserError(f"--executor {name!r}: use local, ray (a Ray on this machine's cores) "
                    "or ray://HOST:PORT (a Ray cluster's client address)")


def add_argument(p) -> None:
    p.add_argument("--executor", default="local", metavar="local|ray|ray://HOST:PORT",
                   help="where lowering and compile jobs run: local processes (default), ray "
                        "(a Ray started on this machine's cores) or ray://HOST:PORT (a Ray "
                        "cluster); the cache stays on this machine")


def from_args(args):
    """The executor of --executor. UserError on a bad name, and beside --workers for Ray,
    whose cluster CPUs decide how many jobs run at once."""
    name = check_name(args.executor)
    if name != "local" and getattr(args, "workers", None):
        raise UserError(f"--workers sets local processes; with --executor {name} the "
                        "cluster's CPUs decide how many jobs run at once: leave out --workers")
    return make_executor(name)


def make_executor(name: str, *, work: Callable[[Job], Outcome] = run_job):
    check_name(name)
    if name == "local":
        return LocalExecutor(work=work)
    return RayExecutor(None if name == "ray" else name, work=work)


def _died(job: Job, why: str, out_of_memory: bool, retried: str) -> Outcome:
    return Outcome(job.name, job.kind, False, out_of_memory=out_of_memory, retried=retried,
                   error=f"{job.candidate.name}: worker died twice (tried twice): {why}")


def _marked(done: Done, why: str) -> Done:
    """done(), each outcome marked as a second attempt after `why`."""
    def again(i: int, out: Outcome) -> None:
        out.retried = why
        done(i, out)
    return again


# ---- local worker processes -------------------------------------------------------------

class LocalExecutor:
    """Spawned worker processes on this machine, kept from one batch to the next.

    A worker's start-up (a Python, jax, libtpu and the analysis fork server it starts:
    optimized_hlo.py) is a few seconds of CPU; a plan runs a handful of batches (lowering,
    the Top-K's analyses, the baselines', the stages around the loop), so the pool and its
    workers live until close(). One pool per calling thread (plan-many plans in threads, each
    as if alone), sized to the most workers a batch asked for; a batch keeps at most its own
    `workers` jobs in flight. A pool broken by a dying worker, or stopped, is not kept.

    libtpu reads its flags (LIBTPU_INIT_ARGS) once, when it loads into a worker: a job under
    compiler flags (Job.flags) runs in a pool whose workers were started with them (the
    kept pool is per flag set: a batch under other flags replaces it); this process's own
    environment never gets them."""

    description = "local processes"
    remote = False   # runs a model this process loaded from a user's file? (run_jobs)
    def __init__(self, work: Callable[[Job], Outcome] = run_job, *, room_ahead: bool = False):
        """room_ahead: let a plan run jobs ahead (prefetch.py) in a pool at idle priority. Off
        by default: on two cores it gained nothing measurable, and a job the plan waits for,
        started at idle priority, starves while anything else keeps the cores busy."""
        self.work = work
        self.room_ahead = room_ahead
        # (thread, background) -> its pool (under the flags of that thread's last batch)
        self._kept: dict[tuple[int, bool], _Pool] = {}
        self._lock = threading.Lock()

    def run(self, jobs: Sequence[Job], done: Done, *, workers: int | None = None,
            fresh_process: bool = False, background: bool = False,
            stop: threading.Event | None = None) -> None:
        """workers: jobs at once (default one per two cores); fresh_process: one process per
        job, in a pool of its own; background: the workers at idle priority (nice 19). A job
        whose worker died runs again alone in a process of its own, so a second death is its
        own (a dead worker breaks the whole pool: every job in flight comes back)."""
        if workers is None:
            workers = max(1, min(len(jobs), (os.cpu_count() or 2) // 2))
        by_flags: dict[tuple[str, ...], list[int]] = {}
        for i, job in enumerate(jobs):
            by_flags.setdefault(job.flags, []).append(i)
        for flags, indices in by_flags.items():   # one pool per flag set, one set at a time
            batch = functools.partial(self._batch, jobs, background=background,
                                      stop=stop, flags=flags)
            died = batch(indices, workers, fresh_process, done=done)
            for i, why in died:
                lost = f"its worker process died ({why})"
                if batch([i], 1, True, done=_marked(done, lost)):
                    done(i, _died(jobs[i], f"most likely out of memory: {why}", True, lost))

    def _batch(self, jobs, indices, workers: int, fresh_process: bool, *, done: Done,
               background: bool, stop: threading.Event | None,
               flags: tuple[str, ...] = ()) -> list[tuple[int, str]]:
        """Runs jobs[indices] (all under `flags`), at most `workers` at once; returns
        (index, reason) of those whose worker died."""
        pool = (_Pool(workers, background, fresh_process, flags) if fresh_process
                else self._pool(workers, background, flags))
        queued, running, died = list(indices), {}, []
        try:
            while queued or running:
                while queued and len(running) < workers and not pool.broken:
                    i = queued.pop(0)
                    running[pool.submit(self.work, jobs[i])] = i
                if pool.broken:  # every job not yet back died with the pool
                    died += [(i, pool.broken) for i in queued]
                    queued = []
                for fut in _ready(running, stop):
                    i = running.pop(fut)
                    try:
                        out = fut.result()
                    except cf.process.BrokenProcessPool as e:  # a worker was killed
                        pool.broken = one_line(e)
                        died.append((i, pool.broken))
                        continue
                    done(i, out)
        except BaseException:
            self._forget(pool)
            pool.kill()
            raise
        if fresh_process or pool.broken:
            self._forget(pool)
            pool.executor.shutdown()
        return sorted(died)

    def _pool(self, workers: int, background: bool, flags: tuple[str, ...] = ()) -> "_Pool":
        """This thread's kept pool for `flags`, replaced by a larger one when a batch asks
        for more workers than it has (its workers are idle between this thread's batches).
        A thread keeps one pool per priority: a batch under other flags ends the one kept
        (a flag search runs dozens of sets one after another: their idle workers, a few
        hundred MB each, would otherwise stay until close())."""
        key = (threading.get_ident(), background)
        with self._lock:
            old = self._kept.get(key)
            if old is not None and old.flags == flags and old.workers >= workers:
                return old
            pool = self._kept[key] = _Pool(workers, background, False, flags)
        if old is not None:
            old.executor.shutdown()
        return pool

    def _forget(self, pool: "_Pool") -> None:
        with self._lock:
            self._kept = {k: p for k, p in self._kept.items() if p is not pool}

    def close(self) -> None:
        """Ends the kept workers: idle ones are told to exit, and a pool with a job still
        running (another thread's, when this one was interrupted) is killed."""
        with self._lock:
            pools, self._kept = list(self._kept.values()), {}
        for pool in pools:
            if pool.in_flight():
                pool.kill()
            else:
                pool.executor.shutdown()


class _Pool:
    """A ProcessPoolExecutor of spawned workers, with the multiprocessing children that were
    there before it (kill() spares them) and why it broke, if it did."""

    def __init__(self, workers: int, background: bool, fresh_process: bool,
                 flags: tuple[str, ...] = ()):
        self.workers = workers
        self.flags = flags
        self.broken = ""
        self.futures: set = set()
        self.others = set(multiprocessing.active_children())
        self.executor = cf.ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_start, initargs=(background, flags),
            max_tasks_per_child=1 if fresh_process else None)

    def submit(self, work, job) -> cf.Future:
        try:
            fut = self.executor.submit(work, job)
        except cf.process.BrokenProcessPool as e:  # broke between two of our checks
            fut = cf.Future()
            fut.set_exception(e)
        self.futures = {f for f in self.futures if not f.done()} | {fut}
        return fut

    def in_flight(self) -> bool:
        return any(not f.done() for f in self.futures)

    def kill(self) -> None:
        _stop(self.executor, self.others)


def _ready(running: dict, stop: threading.Event | None) -> set:
    """The futures of `running` that are done (at least one), raising Cancelled
    once `stop` is set."""
    while True:
        ready, _ = cf.wait(running, timeout=None if stop is None else 0.2,
                           return_when=cf.FIRST_COMPLETED)
        if stop is not None and stop.is_set():
            raise Cancelled()
        if ready:
            return ready


def _worker_start(background: bool = False, flags: tuple[str, ...] = ()) -> None:
    """Workers leave Ctrl-C to the parent, which stops them (no traceback from each), and die
    quietly on SIGTERM (signals.py: libtpu's crash traces stay); a background worker runs at
    idle priority (its compile children inherit it). `flags`, the compiler flags of the
    pool's jobs, join LIBTPU_INIT_ARGS before libtpu loads (the analysis children of
    optimized_hlo.py inherit them). Only the worker's environment changes: the cache key
    (jobs.job_key) reads the parent's and the job's flags."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_quietly_on_sigterm()
    os.environ["LIBTPU_INIT_ARGS"] = compile_flags.env_value(
        os.environ.get("LIBTPU_INIT_ARGS", ""), flags)
    if background:
        os.nice(19)


def _stop(pool: cf.ProcessPoolExecutor, others: set) -> None:
    """Cancels pending jobs and kills the workers of this pool now (a running compile is not
    waited for). SIGKILL, not SIGTERM: libtpu's failure handler would print a stack trace
    for each worker. Workers write nothing (the parent fills the cache), so nothing is lost.

    Every worker must die, or interpreter exit waits for it to finish its queued jobs: the
    pool's manager thread may spawn a replacement worker (max_tasks_per_child) after any
    snapshot, and an interrupt inside `submit` can leave a started worker unregistered in
    the pool. So the live table is swept until the manager thread, seeing the pool broken,
    has gone (shutting down first would race its refill: CPython's manager then fails on
    the table shutdown drops), and then every multiprocessing child of this process
    started since the pool was made (not `others`) is killed too."""
    processes = getattr(pool, "_processes", None) or {}
    manager = getattr(pool, "_executor_manager_thread", None)
    deadline = time.monotonic() + 10
    while True:
        _kill(list(processes.values()))
        if manager is None or not manager.is_alive() or time.monotonic() > deadline:
            break
        manager.join(timeout=0.1)
    pool.shutdown(wait=False, cancel_futures=True)
    _kill([p for p in multiprocessing.active_children() if p not in others])


def _kill(procs: list) -> None:
    for p in procs:
        if p.is_alive():
            p.kill()
    for p in procs:
        p.join(timeout=5)


# ---- Ray ---------------------------------------------------------------------------------

RAY_CPUS_FOR_RUNNING_AHEAD = 8

def worker_identity() -> dict[str, str]:
    """What a job's result depends on besides the job (jobs.job_key): the code, jax and
    libtpu versions and XLA_FLAGS of the process that runs it."""
    from aoizora.compile.fingerprint import code_fingerprint

    return {"code": code_fingerprint(), **versions(),
            "xla_flags": os.environ.get("XLA_FLAGS", "")}


def _ray_task(work: Callable[[Job], Outcome], job: Job) -> tuple[Outcome, dict, str]:
    import socket

    exit_quietly_on_sigterm()  # before the job loads libtpu in this worker (signals.py)
    return work(job), worker_identity(), socket.gethostname()


class RayExecutor:
    """Jobs as Ray tasks: a lowering takes one CPU, a compile two (XLA's TPU compiler uses
    both), on a Ray started here (address None: this machine's cores), the Ray this process
    already joined, or a cluster (ray://HOST:PORT). The cluster's CPUs set how many jobs run
    at once. Every result is checked to come from the same code and versions as this
    process, since the cache keys on this process's."""

    def __init__(self, address: str | None, work: Callable[[Job], Outcome] = run_job, *,
                 num_cpus: int | None = None):
        """num_cpus: the CPUs of a Ray started here (default this machine's cores)."""
        import ray

        self.work = work
        self.remote = True
        self.started = not ray.is_initialized()
        if self.started:
            _init_ray(address, num_cpus or os.cpu_count() or 1)
        cpus = [n["Resources"].get("CPU", 0) for n in ray.nodes() if n.get("Alive")]
        self.cpus = int(sum(cpus))
        self.compile_cpus = max(1, min(2, int(max(cpus, default=1))))
        self.description = (f"ray ({'this machine' if address is None else address}, "
                            f"{self.cpus} CPUs)")
        # Ray tasks reserve CPUs and have no priority: a plan's jobs run ahead (prefetch.py)
        # only beside room for its own (two compiles and their lowerings at once).
        self.room_ahead = self.cpus >= RAY_CPUS_FOR_RUNNING_AHEAD
        self.identity = worker_identity()
        # Ray retries nothing: run() reruns a job whose worker was lost, once, and says so.
        self._task = ray.remote(max_retries=0, retry_exceptions=False)(_ray_task)
        self.where = ("the Ray on this machine" if address is None
                      else f"the Ray cluster {address}")

    def run(self, jobs: Sequence[Job], done: Done, *, workers: int | None = None,
            fresh_process: bool = False, background: bool = False,
            stop: threading.Event | None = None) -> None:
        """workers is not used: the cluster's CPUs decide; fresh_process: one job per worker;
        background is not used (Ray has no priorities: see room_ahead). A job whose worker
        was lost runs once more (here, not by Ray, so that the retry is known and said);
        ExecutorLost when the Ray itself is gone."""
        import ray

        attempt: dict = {}   # unfinished: ref -> (job index, why its previous attempt was
                             # lost, or "")
        try:
            with self._lost_ray(attempt):
                for i, job in enumerate(jobs):
                    attempt[self._submit(job, fresh_process)] = (i, "")
            while attempt:   # done() runs outside _lost_ray: its errors are its own
                for i, out in self._arrived(jobs, attempt, fresh_process, stop):
                    done(i, out)
        except ExecutorLost:
            raise   # nothing there to cancel
        except BaseException:
            for ref in attempt:
                ray.cancel(ref, force=True)
            raise

    def _arrived(self, jobs, attempt: dict, fresh_process: bool,
                 stop: threading.Event | None) -> list[tuple[int, Outcome]]:
        """The outcomes that arrived (at least one wait's worth), each taken out of
        `attempt`; a job whose worker was lost the first time is submitted again (into
        `attempt`) instead."""
        arrived = []
        with self._lost_ray(attempt):
            for ref in self._wait(list(attempt), stop):
                i, before = attempt[ref]
                out = self._outcome(ref, jobs[i])
                del attempt[ref]
                if isinstance(out, _Lost) and not before:
                    attempt[self._submit(jobs[i], fresh_process)] = (i, out.why)
                    continue
                if isinstance(out, _Lost):
                    out = _died(jobs[i], out.why, out.out_of_memory, before)
                out.retried = before
                arrived.append((i, out))
        return arrived

    def _submit(self, job: Job, fresh_process: bool):
        opts = {"num_cpus": 1 if job.kind == "lower" else self.compile_cpus}
        if job.flags:  # Ray starts workers of their own for this environment
            opts["runtime_env"] = {"env_vars": {"LIBTPU_INIT_ARGS": compile_flags.env_value(
                os.environ.get("LIBTPU_INIT_ARGS", ""), job.flags)}}
        if fresh_process:
            opts["max_calls"] = 1
        return self._task.options(**opts).remote(self.work, job)

    @staticmethod
    def _wait(pending: list, stop: threading.Event | None) -> list:
        """The refs of `pending` that are ready (at least one), or Cancelled once `stop` is
        set."""
        import ray

        while True:
            ready, _ = ray.wait(pending, num_returns=1, timeout=None if stop is None else 0.2)
            if stop is not None and stop.is_set():
                raise Cancelled()
            if ready:
                return ready

    def _outcome(self, ref, job: Job) -> "Outcome | _Lost":
        import ray
        from ray import exceptions as rx

        try:
            out, identity, host = ray.get(ref)
        # A worker or the node it ran on died (on another node: this node's own death is
        # _lost_ray's); the memory monitor killed it; its result was lost with its node.
        except (rx.WorkerCrashedError, rx.NodeDiedError, rx.OutOfMemoryError,
                rx.ObjectLostError) as e:
            return _Lost(one_line(e), isinstance(e, rx.OutOfMemoryError))
        if identity != self.identity:
            diff = ", ".join(f"{k} {identity.get(k)!r} there, {v!r} here"
                             for k, v in self.identity.items() if identity.get(k) != v)
            raise UserError(f"the Ray worker on {host} runs other code or versions ({diff}): "
                            "install the same aoizora, jax and libtpu on every node")
        return out

    @contextlib.contextmanager
    def _lost_ray(self, unfinished: dict):
        """Turns Ray's own death under the block (this machine's raylet, a cluster stopped or
        out of reach: Ray's client raises ConnectionError) into ExecutorLost, counting the
        jobs it took with it (`unfinished`, read then)."""
        from ray import exceptions as rx

        try:
            yield
        except (rx.LocalRayletDiedError, rx.RaySystemError, ConnectionError) as e:
            with_jobs = f" with {len(unfinished)} job(s) unfinished" if unfinished else ""
            raise ExecutorLost(f"lost {self.where} mid-plan{with_jobs} ({one_line(e)})"
                               ) from None

    def close(self) -> None:
        if self.started:
            import ray

            ray.shutdown()
            self.started = False


@dataclass(frozen=True)
class _Lost:
    """A job whose worker was lost (killed, out of memory, its node gone)."""
    why: str
    out_of_memory: bool


def _init_ray(address: str | None, num_cpus: int) -> None:
    """Starts a Ray on this machine's cores (address None) or joins a cluster. Ray's usage
    statistics stay off (they would phone home); its dashboard is not started."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        if address is None:
            ray.init(num_cpus=num_cpus, include_dashboard=False,
                     log_to_driver=False, logging_level=logging.WARNING)
        else:
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
            # The client's log channel carries workers' logs, which are not shown
            # (log_to_driver); when the cluster goes, it logs a traceback of its own for the
            # fault that ExecutorLost says in one line.
            logging.getLogger("ray.util.client.logsclient").setLevel(logging.CRITICAL)
    except ConnectionError as e:   # Ray's client puts the reason after the first line
        why = " ".join(f"{type(e).__name__}: {e}".split())[:600]
        raise UserError(f"--executor {address}: cannot reach the Ray cluster: {why} "
                        "(is its client server up? a cluster with token authentication also "
                        "needs RAY_AUTH_MODE=token and its token here)") from None

"""Executors (executor.py): a Ray started here on 2 CPUs runs real lowering and compile jobs
of the tiny Wan with the results of this process; the driver fills the cache, which a local
run then hits; a worker that dies is retried once, and a job whose worker always dies is
reported and skipped, on Ray and on local processes alike.

Workers die through the executor's `work` seam: a job function of this module that calls
os._exit, counting its attempts in files (a worker cannot tell the test otherwise)."""

from __future__ import annotations

import functools
import multiprocessing
import os
import re
import sys
import time

import pytest

from aoizora.planning import strategies as S
from aoizora.compile.batch import run_jobs
from aoizora.compile.cache import Cache
from aoizora.errors import UserError
from aoizora.compile.executor import LocalExecutor, RayExecutor, check_name
from aoizora.compile.jobs import Job, Outcome, run_job
from aoizora.models import get_model, get_workload

TARGET = "cpu:4"


@pytest.fixture(scope="module")
def jobs():
    """A lowering and a compile of two tiny candidates on 4 CPU devices (seconds each)."""
    cfg, w = get_model("wan-tiny"), get_workload("tiny")
    by = {c.name: c for c in S.enumerate_candidates(cfg, w, 4)}
    return [Job("lower", by["dp2-ring2"], cfg, w, TARGET),
            Job("compile", by["dp2-uly2"], cfg, w, TARGET)]


def _same(text: str) -> str:
    """The program without the tables of Python frames that traced it and references to
    them: a job traced from another caller (a Ray worker's loop) differs only in them."""
    text = re.sub(r"FileNames\n.*?StackFrames\n.*?\n\n", "", text, flags=re.S)
    return re.sub(r"stack_frame_id=\d+", "", text)


def _attempt(folder: str, job: Job) -> int:
    """Counts this attempt at `job` in folder/<job>; returns its number."""
    with open(os.path.join(folder, job.name.replace(":", "_")), "a") as f:
        f.write("x")
        f.flush()
        return f.tell()


def dies(folder: str, job: Job) -> Outcome:
    """A lowering's worker dies at its first attempt, a compile's at every attempt."""
    if _attempt(folder, job) == 1 or job.kind == "compile":
        os._exit(3)
    return run_job(job)


def _attempts(folder, job: Job) -> int:
    return len(open(os.path.join(folder, job.name.replace(":", "_"))).read())


@pytest.fixture
def attempts(tmp_path):
    """(folder counting attempts, job function of this module -> work for an executor)."""
    return tmp_path, lambda fn: functools.partial(fn, str(tmp_path))


@pytest.fixture(scope="module")
def by_value():
    """Ray pickles this module's job functions by value: its workers cannot import it."""
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def test_ray_results_equal_local_ones_and_fill_the_cache_for_any_executor(
        ray_executor, jobs, tmp_path):
    cache = Cache(str(tmp_path / "cache"))
    seen = []
    remote = run_jobs(jobs, cache=cache, executor=ray_executor,
                        progress=lambda d, n, o: seen.append(d))
    assert seen == [1, 2] and all(o.ok and not o.cached for o in remote)
    assert [o.name for o in remote] == [j.name for j in jobs]   # job order, not finish order
    local = [run_job(j) for j in jobs]
    assert [_same(o.text) for o in remote] == [_same(o.text) for o in local]
    assert "HloModule" in remote[1].text and "sdy.mesh" in remote[0].text
    again = run_jobs(jobs, cache=cache, executor=LocalExecutor())
    assert all(o.cached for o in again) and [o.text for o in again] == [o.text for o in remote]


def test_ray_retries_a_dead_worker_once_then_reports_its_job(ray_executor, by_value, jobs,
                                                            attempts):
    """Both jobs' workers die; the lowering succeeds at its second attempt, the compile dies
    again and comes back failed with the reason."""
    folder, work = attempts
    lower, dead = run_jobs(jobs, cache=None, executor=RayExecutor(None, work=work(dies)))
    assert lower.ok and "sdy.mesh" in lower.text and _attempts(folder, jobs[0]) == 2
    assert lower.retried.startswith("WorkerCrashedError")   # said, for planning.retries
    assert not dead.ok and _attempts(folder, jobs[1]) == 2
    assert dead.error.startswith("dp2-uly2: worker died twice") and "\n" not in dead.error
    assert dead.retried.startswith("WorkerCrashedError")


def test_local_reruns_a_job_whose_worker_died_alone_once(jobs, attempts):
    """A dead worker breaks the whole pool; its job runs again in a process of its own, and
    dying there too, comes back failed (a local worker dies mostly for memory)."""
    folder, work = attempts
    dead = run_jobs(jobs[1:], cache=None, executor=LocalExecutor(work=work(dies)))[0]
    assert not dead.ok and _attempts(folder, jobs[1]) == 2 and dead.out_of_memory
    assert dead.error.startswith("dp2-uly2: worker died twice") and "out of memory" in dead.error
    assert dead.retried.startswith("its worker process died (BrokenProcessPool")


def test_planner_skips_a_job_whose_worker_always_dies(ray_executor, by_value, jobs, attempts):
    """A dead compile is skipped with its reason (the plan's planning.skipped), like an XLA
    error, and the planner goes on."""
    from types import SimpleNamespace

    from aoizora.planning import compile_policy
    from aoizora.planning.run_state import Run
    from aoizora.planning.settings import Progress, Settings

    settings = Settings(cache=None, executor=RayExecutor(None, work=attempts[1](dies)))
    run = Run(settings, Progress(), jobs[1].model, jobs[1].workload,
              stage2=None, target=SimpleNamespace(spec=TARGET, platform="cpu"))
    compile_policy.compile_candidates(run, "compile", [jobs[1].candidate])
    assert run.graphs == {} and len(run.skipped) == 1
    assert run.skipped[0].startswith("dp2-uly2: compile failed: dp2-uly2: worker died twice")


@pytest.mark.parametrize("name", ["local", "ray", "ray://10.0.0.1:10001", "ray://head:1"])
def test_executor_names_accepted(name):
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["Ray", "ray:", "ray://", "ray://host", "dask", "ray:/h:1"])
def test_bad_executor_name_is_one_line(name):
    with pytest.raises(UserError, match="use local, ray"):
        check_name(name)


def _sleeps(job: Job) -> Outcome:
    time.sleep(60)
    return Outcome(job.name, job.kind, True)


@pytest.mark.parametrize("fresh_process", [False, True])
def test_an_interrupt_kills_every_worker_at_once(jobs, fresh_process):
    """Ctrl-C while workers run and more jobs are queued: every worker, including one a
    refilling pool (fresh_process) spawned after the interrupt, dies within seconds, so
    interpreter exit does not wait for queued minute-long jobs."""
    before = set(multiprocessing.active_children())
    finished = []

    def done(i, out):   # the first result arrives quickly, then the interrupt
        finished.append(i)
        raise KeyboardInterrupt

    quick = [jobs[0]] + [jobs[1]] * 5
    work = functools.partial(_quick_then_sleep, quick[0].name)
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        LocalExecutor(work=work).run(quick, done, workers=2, fresh_process=fresh_process)
    assert finished == [0]
    alive = [p for p in multiprocessing.active_children() if p not in before]
    assert not alive and time.monotonic() - start < 40


def _quick_then_sleep(quick: str, job: Job) -> Outcome:
    if job.name == quick:
        return Outcome(job.name, job.kind, True)
    return _sleeps(job)


def _pid_and_in_flight(folder: str, job: Job) -> Outcome:
    """Records this worker's pid and how many jobs were running beside it (a file per job
    in flight), after waiting (30 s at most) for as many as the file `want` says."""
    mine = os.path.join(folder, f"running.{os.getpid()}.{time.monotonic_ns()}")
    open(mine, "w").close()
    with open(os.path.join(folder, "want")) as f:
        want = int(f.read())
    running = lambda: len([f for f in os.listdir(folder) if f.startswith("running.")])
    deadline = time.monotonic() + 30
    while running() < want and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    beside = running()
    os.remove(mine)
    return Outcome(job.name, job.kind, True, text=f"{os.getpid()} {beside}")


def test_workers_are_kept_between_batches_and_each_batch_keeps_its_own_width(jobs, tmp_path):
    """Two batches on one LocalExecutor run in the same worker processes (a worker's start-up
    is paid once per plan, not per batch); a batch of width 1 on the kept 2-worker pool still
    runs one job at a time; close() ends the workers."""
    before = set(multiprocessing.active_children())
    executor = LocalExecutor(work=functools.partial(_pid_and_in_flight, str(tmp_path)))
    seen = []
    try:
        for width in (2, 1):
            (tmp_path / "want").write_text(str(width))
            got = {}
            executor.run([jobs[0]] * 4, lambda i, out: got.__setitem__(i, out.text),
                         workers=width)
            seen.append({int(t.split()[0]) for t in got.values()})
            assert max(int(t.split()[1]) for t in got.values()) == width
    finally:
        executor.close()
    assert len(seen[0]) == 2 and seen[1] <= seen[0]
    time.sleep(1)
    assert not [p for p in multiprocessing.active_children() if p not in before]

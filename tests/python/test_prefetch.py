"""Jobs run ahead of the plan (prefetch.py): the existing deployments' compiles start with the
plan at idle priority, each job runs once, the plan is the one made without running ahead,
and what is still running when the plan ends is stopped."""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import time

from aoizora.planning import planner, strategies
from aoizora.compile.cache import Cache, cache_key
from aoizora.compile.executor import LocalExecutor
from aoizora.compile.jobs import Job, Outcome, job_key, run_job
from aoizora.models import get_model, get_workload
from aoizora.compile.prefetch import Prefetch

TINY = dict(model="wan-tiny", video="tiny", frames=None, topology="v5e:2x4")


def recorded(folder: str, job: Job) -> Outcome:
    """Runs the job and leaves a file saying which job ran at which priority."""
    out = run_job(job)
    with open(os.path.join(folder, f"{os.getpid()}-{time.monotonic_ns()}.json"), "w") as f:
        json.dump({"kind": job.kind, "candidate": job.candidate.name, "nice": os.nice(0)}, f)
    return out


def test_deployments_compile_ahead_at_idle_priority_once_each(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    cache = Cache(str(tmp_path / "cache"))
    settings = planner.Settings(top_k=2, workers=1, cache=cache, executor=LocalExecutor(
        work=functools.partial(recorded, str(runs)), room_ahead=True))
    ahead = planner.plan(**TINY, settings=settings).plan
    jobs = [json.loads(p.read_text()) for p in runs.iterdir()]
    ran = [(j["kind"], j["candidate"]) for j in jobs]
    assert len(ran) == len(set(ran)), "a job run ahead ran again"
    deployed = {b.candidate for tag, b in ahead.baselines.items() if tag != "alpa-style"}
    background = {(j["kind"], j["candidate"]) for j in jobs if j["nice"] == 19}
    # Only the deployments' analyses and full compiles ran ahead (those the plan asked for
    # before the thread reached them it ran itself), the first of them at least.
    assert background and background <= {(k, c) for k in ("analyze", "compile") for c in deployed}
    assert ahead.planning["jobs_run_ahead"] == len(background)
    assert ahead.planning["cache_hits"] == 0  # a cold plan: what ran ahead was no hit
    # The same plan without running ahead (from the cache the first run filled).
    again = planner.plan(**TINY, settings=planner.Settings(top_k=2, workers=1, cache=cache,
                                                           run_ahead=False)).plan
    assert again.planning["jobs_run_ahead"] == 0
    assert (again.choice.candidate, again.choice.placement, again.choice.simulated_s) == (
        ahead.choice.candidate, ahead.choice.placement, ahead.choice.simulated_s)
    assert {t: b.simulated_s for t, b in again.baselines.items()} == {
        t: b.simulated_s for t, b in ahead.baselines.items()}


def sleeps(job: Job) -> Outcome:
    time.sleep(120)
    return Outcome(job.name, job.kind, True, text="late")


def test_closing_stops_the_jobs_still_running_and_kills_their_workers():
    cfg, wl = get_model("wan-tiny"), get_workload("tiny", model="wan-tiny")
    cands = strategies.enumerate_candidates(cfg, wl, 8)[:2]
    jobs = [Job("lower", c, cfg, wl, "cpu:8") for c in cands]
    before = set(multiprocessing.active_children())
    ahead = Prefetch.start(jobs, None, LocalExecutor(work=sleeps, room_ahead=True))
    time.sleep(3)  # the worker is up and sleeping in the first job
    t = time.monotonic()
    ahead.close()
    assert time.monotonic() - t < 15
    assert not ahead.thread.is_alive()
    key = cache_key(job_key(jobs[0]))
    assert ahead.has(key) and ahead.take(key) is None  # stopped: the caller runs it itself
    assert ahead.owner == {key: "ahead", cache_key(job_key(jobs[1])): "pending"}
    assert not [p for p in multiprocessing.active_children() if p not in before]


def test_a_job_the_thread_has_not_started_is_the_callers():
    """The plan never waits behind the thread's queue: asked for a job the thread has not
    started, take() hands it back to run, and the thread skips it."""
    cfg, wl = get_model("wan-tiny"), get_workload("tiny", model="wan-tiny")
    cands = strategies.enumerate_candidates(cfg, wl, 8)[:2]
    jobs = [Job("lower", c, cfg, wl, "cpu:8") for c in cands]
    before = set(multiprocessing.active_children())
    ahead = Prefetch.start(jobs, None, LocalExecutor(work=sleeps, room_ahead=True))
    second = cache_key(job_key(jobs[1]))
    assert ahead.take(second) is None and ahead.owner[second] == "plan"
    ahead.close()
    assert ahead.ran_ahead() <= 1
    assert not [p for p in multiprocessing.active_children() if p not in before]


def test_nothing_runs_ahead_for_a_model_of_this_process():
    from aoizora.models.base import FunctionSpec

    spec = FunctionSpec.__new__(FunctionSpec)
    cand = strategies.enumerate_candidates(get_model("wan-tiny"),
                                           get_workload("tiny", model="wan-tiny"), 8)[0]
    ahead = Prefetch.start([Job("lower", cand, spec, None, "cpu:8")], None,
                           LocalExecutor(room_ahead=True))
    assert ahead.thread is None and not ahead.futures


def test_local_processes_run_nothing_ahead_unless_asked():
    cfg, wl = get_model("wan-tiny"), get_workload("tiny", model="wan-tiny")
    cand = strategies.enumerate_candidates(cfg, wl, 8)[0]
    for executor in (None, LocalExecutor()):
        ahead = Prefetch.start([Job("lower", cand, cfg, wl, "cpu:8")], None, executor)
        assert ahead.thread is None and not ahead.futures


def test_a_ray_of_two_cpus_has_no_room_to_run_ahead(ray_executor):
    """Ray tasks reserve CPUs: running ahead there would hold the CPUs the plan's own
    lowerings wait for."""
    cfg, wl = get_model("wan-tiny"), get_workload("tiny", model="wan-tiny")
    cand = strategies.enumerate_candidates(cfg, wl, 8)[0]
    assert ray_executor.cpus == 2 and not ray_executor.room_ahead
    ahead = Prefetch.start([Job("lower", cand, cfg, wl, "cpu:8")], None, ray_executor)
    assert ahead.thread is None and not ahead.futures

"""Compiler flags as part of a compile job (compile_flags.py, flag_effects.py, flag_search.py):
a flag reaches libtpu only in a worker started with it, changes the loaded graph and the
simulated exposed time in the direction it documents, and the cache keeps programs compiled
under different flags apart; a bad flag set name or a flag libtpu does not know is one line.

One real deviceless compile pair (Wan 1.3B, the README default's dp2-ag4 on v5e:2x4, XLA's
optimized HLO), shared by the module: about 10 s of CPU on a quiet machine."""

from __future__ import annotations

import os

import pytest

from aoizora import _core
from aoizora.compile import compile_flags
from aoizora.compile.batch import run_jobs
from aoizora.compile.cache import Cache
from aoizora.compile.executor import LocalExecutor
from aoizora.compile.jobs import Job, job_key, run_job
from aoizora.errors import UserError
from aoizora.models import get_model, get_workload
from aoizora.planning import flag_effects, flag_search, kernels
from aoizora.planning import strategies as S
from aoizora.planning.stage2 import Pair, Stage2

TARGET = "v5e:2x4"
# XLA documents --xla_enable_async_all_gather as "convert synchronous all-gathers into
# asynchronous ones": on by default in libtpu, so turning it off is the program without it.
SYNC_ALL_GATHER = ("--xla_enable_async_all_gather=false",)


@pytest.fixture(scope="module")
def wan13b():
    cfg, wl = get_model("wan2.1-t2v-1.3b"), get_workload("480p", 21)
    c = {c.name: c for c in S.enumerate_candidates(cfg, wl, 8)}["dp2-ag4"]
    return kernels.with_kernel(c, cfg, wl, "tpu", TARGET), cfg, wl


@pytest.fixture(scope="module")
def compiled(wan13b, tmp_path_factory):
    """The candidate analysed with libtpu's default (async all-gathers) and with the flag
    that keeps them synchronous, in one batch through the local executor, cached."""
    c, cfg, wl = wan13b
    cache = Cache(str(tmp_path_factory.mktemp("cache")))
    jobs = [Job("analyze", c, cfg, wl, TARGET), Job("analyze", c, cfg, wl, TARGET,
                                                    flags=SYNC_ALL_GATHER)]
    executor = LocalExecutor()
    try:
        outs = run_jobs(jobs, workers=2, cache=cache, executor=executor)
        pools = [p.flags for p in executor._kept.values()]
    finally:
        executor.close()
    assert all(o.ok for o in outs), [o.error for o in outs]
    return jobs, outs, cache, pools


def _simulated(text: str, c):
    stage2 = Stage2.for_topology(TARGET)
    graph = Stage2.load(text)
    device_of = list(_core.default_placement(stage2.topology, list(c.mesh_shape)).device_of)
    pair = stage2.simulate(Pair(c, "jax-default", device_of, 0.0), graph)
    return graph, pair, flag_search.exposed_seconds(pair)


def test_async_all_gather_changes_graph_and_exposed_time(compiled, wan13b):
    """Async all-gathers are start/done pairs in the loaded graph the simulator overlaps with
    compute: without them, more exposed all-gather time and a longer simulated step."""
    c = wan13b[0]
    _, (default, sync), _, _ = compiled
    g_async, p_async, exposed_async = _simulated(default.text, c)
    g_sync, p_sync, exposed_sync = _simulated(sync.text, c)
    d = flag_effects.changes(flag_effects.summary(default.text, g_async),
                             flag_effects.summary(sync.text, g_sync))
    assert d["program"] == "changed"
    assert d["async"].get("all-gather", 0) < 0 < d["sync"].get("all-gather", 0)
    assert exposed_sync > exposed_async * 1.1
    assert p_sync.simulated > p_async.simulated


def test_cache_keeps_flag_sets_apart(compiled):
    jobs, outs, cache, _ = compiled
    assert outs[0].key != outs[1].key
    assert cache.get(outs[0].key) == outs[0].text != outs[1].text == cache.get(outs[1].key)
    again = run_jobs(jobs, cache=cache)   # both hits: nothing compiles, nothing mixes
    assert [o.cached for o in again] == [True, True]
    assert [o.text for o in again] == [o.text for o in outs]
    # Lowering is jax's alone: one key whatever the flags.
    lower = [Job("lower", j.candidate, j.model, j.workload, j.target, flags=j.flags)
             for j in jobs]
    assert job_key(lower[0]) == job_key(lower[1])


def test_workers_are_kept_per_flag_set(compiled):
    """The batch ran each flag set in a pool of its own; the one kept after it is the last
    set's (a thread keeps one), and this process never had the flags."""
    *_, pools = compiled
    assert pools == [SYNC_ALL_GATHER]
    assert "--xla_enable_async_all_gather" not in os.environ.get("LIBTPU_INIT_ARGS", "")


def test_flagged_job_refused_in_a_process_without_the_flags(wan13b):
    c, cfg, wl = wan13b
    with pytest.raises(RuntimeError, match="without its libtpu flags"):
        run_job(Job("analyze", c, cfg, wl, TARGET, flags=SYNC_ALL_GATHER))


def test_bad_flag_set_name_is_one_line():
    with pytest.raises(UserError) as e:
        compile_flags.lookup("xla_no_such_set")
    assert "\n" not in str(e.value) and "maxdiffusion-wan" in str(e.value)
    with pytest.raises(UserError, match="--flags 'fast'"):
        flag_search.plan_flags("fast", "v5e", "tpu", False)
    with pytest.raises(UserError, match="CPU"):
        flag_search.plan_flags("published", "v5e", "cpu", False)


def test_catalogue_records_sources():
    sets = compile_flags.catalogue()
    assert sets["none"].flags == ()
    assert compile_flags.published("v5e").name == "maxdiffusion-wan"
    assert compile_flags.published("tpu7x").name == "maxdiffusion-tpu7x"
    for s in sets.values():
        assert s.source
    assert "7cfb8801d41d" in sets["maxdiffusion-wan"].source
    assert sets["xla_enable_async_all_reduce"].flags == ("--xla_enable_async_all_reduce=true",)
    names = [s.name for s in compile_flags.search_sets("v5e")]
    assert names[:2] == ["none", "maxdiffusion-wan"] and names[7] == "maxdiffusion-tpu7x"
    assert sorted(names) == sorted(sets) and len(set(names)) == len(names)


def test_libtpu_unknown_flag_is_one_line(wan13b):
    """libtpu exits at start on a flag it does not know: the job says which, in one line."""
    c, cfg, wl = wan13b
    executor = LocalExecutor()
    try:
        with pytest.raises(UserError, match="does not know the compiler flag "
                                            "'xla_tpu_no_such_flag'") as e:
            run_jobs([Job("analyze", c, cfg, wl, TARGET, flags=("--xla_tpu_no_such_flag=1",))],
                     cache=None, executor=executor)
    finally:
        executor.close()
    assert "\n" not in str(e.value)


def test_published_flags_reach_the_emitted_command_and_the_report():
    """A plan under MaxDiffusion's published set carries it in plan.json, in
    LIBTPU_INIT_ARGS of the emitted MaxDiffusion command, and in the report."""
    import json

    from aoizora import maxdiffusion
    from aoizora.plan_format import Plan
    from aoizora.report import render

    path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "results",
                        "maxdiffusion", "wan-1.3b_v5e-2x4_480p-21f.plan.json")
    with open(path) as f:
        plan = Plan.from_dict(json.load(f))
    assert 'id="flags"' in render(plan)   # an older plan: the section says it lacks them
    pub = compile_flags.published("v5e")
    flag_search.apply(plan, "published", pub)
    plan = Plan.from_dict(json.loads(json.dumps(plan.to_dict())))
    assert plan.flags["chosen"]["name"] == "maxdiffusion-wan"
    doc = maxdiffusion.to_maxdiffusion(plan, list(plan.choice.chip_ids))
    assert all(f in doc["maxdiffusion"]["command"] for f in pub.flags)
    assert "--xla_tpu_scoped_vmem_limit_kib=65536" in doc["maxdiffusion"]["libtpu_init_args"]
    assert "maxdiffusion-wan" in render(plan).split('id="flags"')[1]


def test_plan_schema_checks_the_flags_record():
    from aoizora import plan_schema

    plan_schema._check_flags({})
    plan_schema._check_flags(flag_search.record("published", compile_flags.published("v6e")))
    with pytest.raises(ValueError, match="flags.chosen"):
        plan_schema._check_flags({"mode": "none", "chosen": {"name": "x", "flags": ["x=1"]}})
    with pytest.raises(ValueError, match="flags.mode"):
        plan_schema._check_flags({"mode": "fast", "chosen": {}})


@pytest.mark.parametrize("budget", [1, 5, 16, 17, 40])
def test_flag_search_compiles_under_flags_no_more_than_it_says(budget):
    # Every compile fails, so no Stage 2 is needed: what counts is what was compiled and
    # what the record and the terminal say of it.
    from types import SimpleNamespace as NS

    jobs = []

    def run_batch(name, batch):
        jobs.extend(batch)
        return [NS(ok=False, error="stub")] * len(batch)

    best = NS(candidate=NS(name="a"), device_of=[0, 1])
    _, record = flag_search.search(None, best, [NS(candidate=NS(name="b"))], "v5e",
                                   make_job=lambda c, flags: (c.name, tuple(flags)),
                                   run_batch=run_batch, budget=budget)
    flagged = [j for j in jobs if j[1]]
    assert 1 <= len(flagged) <= budget
    said = record["budget"]
    assert said["compiles"] == len(flagged) and said["unflagged"] == len(jobs) - len(flagged)
    line = flag_search.lines({"mode": "search", "chosen": {"name": "none", "flags": []},
                              "search": record})[1]
    assert (f"({len(flagged)} compiles under flags, at most {budget}; "
            f"{len(jobs) - len(flagged)} without, the plan's own)") in line


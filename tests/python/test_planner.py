"""The planner end to end on the tiny Wan (real lowering, Stage 1, deviceless TPU compiles,
Q2, simulation), the executable plan, and the one-line errors for bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import jax
import numpy as np
import pytest

from aoizora.compile import compiler, tpu
from aoizora.planning import kernels, planner, run_state
from aoizora.compile.cache import Cache
from aoizora.errors import UserError
from aoizora.compile.jobs import Outcome
from aoizora.models import get_model, get_workload, wan
from aoizora.plan_format import Plan

from conftest import TINY


@pytest.fixture
def cache_dir(tiny_cache_dir):
    return tiny_cache_dir


@pytest.fixture
def result(tiny_plan):
    return tiny_plan


def test_plan_keeps_the_decision_and_says_when_a_baseline_replaced_it(result):
    plan = result.plan
    assert "existing" in plan.baselines and "alpa-style" in plan.baselines
    d = plan.planning["decision"]
    # The decision is the best simulated pair of a Top-K sharding (no baseline pooled in).
    top_k = set(plan.planning["top_k"])
    assert d["candidate"] in top_k
    judged = [p for p in result.pairs if p.candidate.name in top_k]
    assert d["simulated_s"] == min(p.simulated for p in judged)
    # The plan is the decision unless a baseline's own pair simulates faster, and says so.
    faster = [b for b in plan.baselines.values() if b.simulated_s < d["simulated_s"]]
    kept = [c for c in plan.uncertainty["changes"] if not c["made"]]  # not defended
    if not kept:
        assert plan.planning["pooling_changed_choice"] == bool(faster)
    if not faster and not kept:
        assert (plan.choice.candidate, plan.choice.placement) == (d["candidate"], d["placement"])
        assert plan.planning["chosen_from"] == "top-k"


def test_plan_figures_are_consistent(result):
    c = result.plan.choice
    assert int(np.prod(c.mesh_shape)) == 8 == len(c.device_coords) == len(set(map(tuple, c.device_coords)))
    assert c.q1_s > 0 and c.q2_s > 0 and c.simulated_s > 0
    # The simulator never beats the compute-only bound of the program it ran.
    best = result.pairs[0]
    assert best.sim.step_seconds >= best.sim.compute_bound_seconds * (1 - 1e-9)
    # Stage 1 kept at most K shardings, all of them fitting.
    assert 1 <= len(result.plan.planning["top_k"]) <= 2
    assert result.plan.planning["candidates"] == len(result.stage1)
    # Compiled for the slice's own TPU, and the plan says so, with the libtpu flags the
    # compiles ran under (a deployment runs with them: --emit maxdiffusion).
    target = dict(result.plan.topology["compile_target"])
    assert "--xla_tpu_scoped_vmem_limit_kib=" in target.pop("libtpu_init_args")
    assert target == {"platform": "tpu", "name": "v5e:2x4", "devices": 8,
                      "wrap": [False, False, False]}


def test_tpu_plan_names_its_kernel_and_the_simulator_prices_it(result):
    """On a TPU target the chosen candidate runs the splash kernel; the plan names it with
    its block sizes, and the compiled program's kernel ops carry the kernel model's FLOPs."""
    plan, c = result.plan, result.plan.candidate()
    assert c.kernel == "splash" and plan.choice.strategy["kernel"] == "splash"
    shape = kernels.attention_shapes(c, get_model("wan-tiny"), get_workload("tiny"))
    assert shape.q_len % c.block_q == 0 and shape.kv_len % c.block_kv == 0
    assert c.block_q % 128 == 0 and c.block_kv % 128 == 0
    ops = [op for r in result.graph.regions for op in r.ops
           if op.name.startswith("splash_mha_fwd")]
    assert len(ops) == shape.calls
    batch = 2 // (c.data * c.fsdp)
    want = 4 * batch * shape.heads * shape.q_len * shape.kv_len * shape.head_dim
    assert all(op.flops == want and not op.opaque for op in ops)
    for b in plan.baselines.values():  # the baselines run the kernel too
        assert b.strategy["kernel"] in kernels.SPLASH_KERNELS  # tokamax_ring: the ring one


def test_plan_json_round_trips(result, tmp_path):
    path = tmp_path / "plan.json"
    result.plan.save(str(path))
    again = Plan.load(str(path))
    assert again.to_dict() == result.plan.to_dict()
    assert json.loads(path.read_text())["schema"] == "aoizora.plan/1"


def test_second_run_is_served_from_the_cache(result, cache_dir):
    settings = planner.Settings(top_k=2, workers=1, cache=Cache(cache_dir))
    again = planner.plan(**TINY, settings=settings)
    p = again.plan.planning
    assert p["cache_hits"] == p["jobs"] > 0
    assert again.plan.choice.candidate == result.plan.choice.candidate
    assert again.plan.choice.device_coords == result.plan.choice.device_coords


def test_plan_mesh_puts_devices_at_the_planned_chips(result):
    plan = result.plan
    mesh = plan.mesh(tpu.compile_only_devices("v5e:2x4"))
    assert mesh.axis_names == tuple(plan.choice.axis_names)
    assert [list(d.coords) for d in mesh.devices.flat] == plan.choice.device_coords


def test_plan_runs_the_tiny_model_on_cpu_devices(result):
    """The plan executes unchanged through JAX: same output as one device (its Pallas kernel
    through the Pallas interpreter, as CPU devices cannot run Mosaic)."""
    cfg, w = get_model("wan-tiny"), get_workload("tiny")
    params = wan.init_params(cfg, jax.random.key(0))
    args = [jax.random.normal(jax.random.key(i + 1), s.shape, s.dtype)
            for i, s in enumerate(cfg.abstract_inputs(w))]
    ref = jax.jit(lambda p, *a: cfg.apply(p, *a, workload=w))(params, *args)
    devices = jax.devices("cpu")[:8]
    plan = result.plan
    assert plan.candidate().kernel == "splash"
    layout = plan.layout(cfg, devices, interpret=True)
    p_shard, in_shard = plan.shardings(cfg, w, devices)
    out = jax.jit(lambda p, *a: cfg.apply(p, *a, workload=w, layout=layout))(
        jax.device_put(params, p_shard), *[jax.device_put(a, s) for a, s in zip(args, in_shard)])
    assert len(out.sharding.device_set) == 8
    assert np.abs(np.asarray(out) - np.asarray(ref)).max() < 1e-4


def test_plan_compiles_the_14b_two_block_proxy_for_the_tpu(result):
    plan = result.plan
    model, w = get_model("wan2.1-t2v-14b", blocks=2), get_workload("480p", 21)
    # The same sharding, with the kernel's block sizes for this model's shards.
    c = kernels.with_kernel(plan.candidate(), model, w, "tpu", "v5e:2x4")
    hlo = compiler.compile(c, model, w, "v5e:2x4",
                           order=[tuple(x) for x in plan.choice.device_coords])
    assert "num_partitions=8" in hlo and 'custom_call_target="tpu_custom_call"' in hlo


def test_every_simulated_figure_carries_its_interval_and_the_rule_that_chose(result):
    """Each compared row has its interval across the joint draws and the plan's speedup over
    it; a row ties exactly where that speedup's interval holds 1; each change the plan made
    to what the user runs was defended."""
    from aoizora import plan_schema
    from aoizora.planning import intervals, speedups

    plan = result.plan
    u = plan.uncertainty
    assert u["rule"] == intervals.POINT and u["method"] == "joint draws"
    assert u["generation"] == "v5e" and u["draws"] == 100
    for c in [plan.choice, *plan.runners_up, *plan.baselines.values()]:
        fwd = c.extra["interval"]["forward"]
        assert fwd["low_s"] <= c.simulated_s <= fwd["high_s"]
        assert fwd["point_s"] == pytest.approx(c.simulated_s)
    tied = {(t["candidate"], t["placement"]) for t in u["ties"]}
    for c in [*plan.runners_up, *plan.baselines.values()]:
        sp = c.extra["speedup"]
        assert sp["low"] <= sp["median"] <= sp["high"]
        if (c.candidate, c.placement) != (plan.choice.candidate, plan.choice.placement):
            assert ((c.candidate, c.placement) in tied) == (sp["low"] <= 1 <= sp["high"])
    assert all(ch["made"] == (ch["p"] >= speedups.DEFEND) for ch in u["changes"])
    plan_schema.check(plan.to_dict())


def test_robust_plan_has_no_worse_a_worst_case(result, cache_dir):
    from aoizora.planning import intervals

    settings = planner.Settings(top_k=2, workers=1, cache=Cache(cache_dir), robust=True)
    robust = planner.plan(**TINY, settings=settings).plan
    by = robust.uncertainty["ranked_by"]
    assert robust.uncertainty["rule"] == intervals.ROBUST
    high = lambda p: intervals.ranked_interval(p.choice.extra, by)["high_s"]
    assert high(robust) <= high(result.plan) * (1 + 1e-9)


def test_robust_picks_the_best_worst_case_where_the_point_rule_does_not():
    """Two pairs: A simulates 1.0 s, all of it exposed gathers; B 1.1 s, all compute. With
    communication known to 50 % and compute to 5 %, A's worst case is 2.0 s, B's 1.158 s:
    the point rule takes A, --robust takes B."""
    from types import SimpleNamespace

    from aoizora.hardware import error_bands
    from aoizora.planning import pooling
    from aoizora.planning.stage2 import Pair

    bands = error_bands.Bands("v5e", error_bands.Band(0.5, error_bands.OWN),
                              error_bands.Band(0.05, error_bands.OWN))
    a = Pair(SimpleNamespace(name="a"), "p", [0], q2=1.0, simulated=1.0,
             split={"forward_s": {"compute": 0.0, "all-gather": 1.0}, "step_s": 1.0})
    b = Pair(SimpleNamespace(name="b"), "p", [0], q2=1.1, simulated=1.1,
             split={"forward_s": {"compute": 1.1}, "step_s": 1.1})
    assert pooling.pooled([a, b], {})[0] is a
    assert pooling.pooled([a, b], {}, robust=pooling.high_end(bands, None))[0] is b


def test_unknown_model_lists_the_valid_ones():
    with pytest.raises(UserError, match="unknown model 'wan3'.*wan2.1-t2v-14b"):
        planner.plan("wan3", "480p", 21, "v5e:2x4")


def test_unknown_topology_lists_the_valid_ones():
    with pytest.raises(UserError, match="unknown topology 'v5e:3x3'.*v5e:2x4"):
        planner.plan("wan-tiny", "tiny", None, "v5e:3x3")


def test_a_workload_that_fits_nowhere_says_the_numbers(tmp_path):
    settings = planner.Settings(workers=0, cache=Cache(str(tmp_path)))
    with pytest.raises(UserError, match=r"fits in no sharding on v5e:1x1.*GB"):
        planner.plan("wan2.1-t2v-14b", "480p", 21, "v5e:1x1", settings=settings)


def test_a_candidate_that_fails_to_compile_is_reported_and_skipped(cache_dir, monkeypatch):
    real = run_state.run_jobs
    broken = {}

    def run_jobs(jobs, **kw):
        outs = real(jobs, **kw)
        # The first batch of compiles: the Top-K's (analysis compiles on a TPU target).
        if jobs and jobs[0].kind in ("compile", "analyze") and "name" not in broken:
            o = outs[0]
            broken["name"] = jobs[0].candidate.name
            outs[0] = Outcome(o.name, o.kind, False, error="injected failure")
        return outs

    monkeypatch.setattr(run_state, "run_jobs", run_jobs)
    settings = planner.Settings(top_k=3, workers=1, cache=Cache(cache_dir))
    r = planner.plan(**TINY, settings=settings)
    assert any(s.startswith(broken["name"]) and "injected failure" in s for s in r.skipped)
    assert r.plan.choice.candidate != broken["name"]


def test_oracle_is_a_reference_that_never_changes_the_choice(result, cache_dir, monkeypatch):
    """--oracle compiles every fitting sharding and simulates every placement; it may beat
    the plan, never lose to it, and the plan's own choice stays what it was."""
    from aoizora.planning import strategies

    real = strategies.enumerate_candidates
    chosen = result.plan.choice.candidate
    # A small space (the plan's choice, the baselines and a few more) keeps this test fast.
    keep = lambda cands: [c for i, c in enumerate(cands) if i < 4 or c.name == chosen  # noqa: E731
                          or c.baselines]
    monkeypatch.setattr(strategies, "enumerate_candidates", lambda *a: keep(real(*a)))
    plain = planner.plan(**TINY, settings=planner.Settings(top_k=2, workers=1,
                                                           cache=Cache(cache_dir)))
    r = planner.plan(**TINY, settings=planner.Settings(top_k=2, workers=1, oracle=True,
                                                       cache=Cache(cache_dir)))
    oracle = r.plan.baselines["oracle"]
    assert oracle.simulated_s <= r.plan.choice.simulated_s
    assert r.plan.choice.candidate == plain.plan.choice.candidate
    assert r.plan.choice.device_coords == plain.plan.choice.device_coords
    assert r.plan.planning["compiled"] > plain.plan.planning["compiled"]


def test_cli_writes_plan_report_and_trace(result, cache_dir, tmp_path):
    env = {"AOIZORA_CACHE": cache_dir, "PATH": "/usr/bin:/bin"}
    import os

    env = {**os.environ, **env}
    out = subprocess.run(
        [sys.executable, "-m", "aoizora.cli", "plan", "--model", "wan-tiny", "--video", "tiny",
         "--topology", "v5e:2x4", "--top-k", "2", "--workers", "1", "--quiet",
         "--out", str(tmp_path / "p.json"), "--report", str(tmp_path / "r.html"),
         "--trace", str(tmp_path / "t.json")], capture_output=True, text=True, env=env,
        timeout=600)
    assert out.returncode == 0, out.stderr
    assert "AoiZora" in out.stdout and "existing" in out.stdout
    html = (tmp_path / "r.html").read_text()
    assert "<svg" in html and result.plan.choice.candidate in html
    trace = json.loads((tmp_path / "t.json").read_text())
    assert trace["traceEvents"]
    bad = subprocess.run([sys.executable, "-m", "aoizora.cli", "plan", "--topology", "v9:2x2"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "unknown topology" in bad.stderr


def test_a_baseline_jax_cannot_lay_out_is_reported_and_the_plan_is_written(
        tmp_path, monkeypatch, capsys):
    """v5p:2x2x4 (16 chips, the smallest catalog slice where this happens): JAX's default
    order cannot build xdit-usp's mesh 2x2x4 (create_device_mesh finds no assignment for
    its axis of size 2), so a deployment could not run it there. The plan is still written,
    and the plan, the tables of `plan` and `compare` and the report say why. Compiled for
    CPU devices: the default order depends on the slice alone, and this is the fast path."""
    import html
    import re

    from aoizora import cli, plan_schema
    from aoizora.commands.plan import comparison_rows

    monkeypatch.setenv("AOIZORA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "500")  # one table row per line
    out, report = tmp_path / "p.json", tmp_path / "r.html"
    assert cli.main(["plan", "--model", "wan-tiny", "--video", "tiny", "--topology",
                     "v5p:2x2x4", "--top-k", "1", "--compile-target", "cpu", "--quiet",
                     "--out", str(out), "--report", str(report)]) == 0
    plan = plan_schema.load(str(out))
    why = "Failed to find assignment for logical_axis_index 1 of size 2"
    usp = plan.baselines["xdit-usp"]
    assert usp.candidate == "dp2-usp4x2" and usp.extra["no_default_order"].startswith(why)
    assert usp.placement != "jax-default" and usp.simulated_s > 0
    said = f"xdit-usp (not deployable with JAX's default order on this slice: {why}"
    assert [r for r in comparison_rows(plan) if r[0].startswith(said)]
    # the terminal's tables: the row marked [n], the reason once beneath the table
    note = re.compile(r"^xdit-usp \[(\d)\] .*^\[\1\] not deployable with JAX's default order "
                      f"on this slice: {re.escape(why)}", re.M | re.S)
    assert note.search(capsys.readouterr().out)
    assert html.escape(said) in report.read_text()
    # "existing" is the best deployment that JAX can lay out, never this one.
    assert plan.baselines["existing"].extra.get("no_default_order") is None
    assert cli.main(["compare", "--plan", str(out)]) == 0
    assert note.search(capsys.readouterr().out)


def _saved_plan(planning=None, baselines=None) -> dict:
    from aoizora.plan_format import Choice

    choice = Choice("dp2-ag4", [2, 4], ["data", "context"], {}, "axes x|y",
                    [[x, y, 0] for y in range(4) for x in range(2)])
    d = Plan({"name": "m"}, {"video": "tiny"}, {"name": "v5e:2x4"}, choice,
             planning=planning or {}).to_dict()
    d["baselines"] = {tag: {**d["choice"], "extra": extra}
                      for tag, extra in (baselines or {}).items()}
    return d


@pytest.mark.parametrize("planning, field", [
    ({"baselines_failed": {"xdit-usp": "compile failed"}}, "baselines_failed.xdit-usp"),
    ({"baselines_failed": ["xdit-usp"]}, "baselines_failed must be an object"),
])
def test_a_saved_plan_with_a_malformed_failed_baseline_is_refused(planning, field):
    from aoizora import plan_schema

    plan_schema.check(_saved_plan({"baselines_failed": {
        "xdit-usp": {"candidate": "dp2-usp4x2", "why": "compile failed"}}}))
    with pytest.raises(ValueError, match=field):
        plan_schema.check(_saved_plan(planning))


def test_a_saved_baseline_whose_no_default_order_is_not_a_reason_is_refused():
    from aoizora import plan_schema

    plan_schema.check(_saved_plan(baselines={"x": {"no_default_order": "no assignment"}}))
    with pytest.raises(ValueError, match="baselines.x.extra.no_default_order"):
        plan_schema.check(_saved_plan(baselines={"x": {"no_default_order": 3}}))

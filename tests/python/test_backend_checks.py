"""What goes through the TPU backend (compile_policy: compile_in_full, unpredicted,
backend_prediction; decision.backend_accepted_decision, pooling.backend_accepted_pool,
oracle.oracle_and_refusals): a sharding, the plan's included, is analysed only when
its verdict can be predicted (HBM from XLA's buffer assignment, VMEM from the kernel's
blocks), compiled in full otherwise, or when asked (verify: the plan's; verify_baselines:
every one); the plan and its tables say which."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from aoizora.compile import optimized_hlo
from aoizora.planning import compile_policy, kernels, planner, pooling, strategies
from aoizora.planning.decision import backend_accepted_decision
from aoizora.planning.oracle import oracle_and_refusals
from aoizora.compile.cache import Cache
from aoizora.models import get_model, get_workload
from aoizora.planning.run_state import FULL_COMPILE, Run
from aoizora.planning.stage2 import Pair

V5E = {"hbm_bytes": 16e9, "cores_per_chip": 1}
TPU7X = {"hbm_bytes": 192e9, "cores_per_chip": 2}


def _candidate(name="dp2-ag4", blocks=(512, 512, 512)):
    cfg, wl = get_model("wan2.1-t2v-1.3b"), get_workload("480p", 21)
    c = next(c for c in strategies.enumerate_candidates(cfg, wl, 8) if c.name == name)
    return dataclasses.replace(c, kernel="splash", block_q=blocks[0], block_kv=blocks[1],
                               block_kv_compute=blocks[2])


def _run(spec, hbm_of, *, verify_baselines=False, verify=False, platform="tpu"):
    """A run_state.Run with what the prediction reads: the slice's chip figures, the
    analysis's HBM bytes, the model (Wan 1.3B: head dim 128)."""
    return Run(
        planner.Settings(cache=None, verify_baselines=verify_baselines, verify=verify),
        planner.Progress(),
        get_model("wan2.1-t2v-1.3b"), get_workload("480p", 21),
        SimpleNamespace(topology=SimpleNamespace(spec=spec)),
        SimpleNamespace(platform=platform), hbm_of=hbm_of)


def test_a_program_within_hbm_and_vmem_is_predicted_to_compile_with_its_numbers():
    c = _candidate()
    why = compile_policy.backend_prediction(_run(V5E, {c.name: 3 * 2**30}), c)
    assert why.startswith("analysed, not compiled in full; predicted to compile:")
    assert "HBM 3.00 GiB of 14.90 GiB" in why
    bound = kernels.vmem_bytes(512, 512, 512, 128) / 2**20
    assert f"VMEM at most {bound:.1f} of 64 MiB" in why


@pytest.mark.parametrize("hbm_of", [{}, {"dp2-ag4": int(0.95 * 16e9)}],
                         ids=["no HBM figure", "HBM near the chip's"])
def test_hbm_unknown_or_near_the_limit_is_left_to_the_backend(hbm_of):
    assert compile_policy.backend_prediction(_run(V5E, hbm_of), _candidate()) is None


def test_tpu7x_hbm_is_one_cores_share_of_the_chip():
    """90 GB fits one chip of 192 GB, not one of its two TensorCores (the device, 96)."""
    c = _candidate()
    assert compile_policy.backend_prediction(_run(TPU7X, {c.name: 90e9}), c) is None
    assert "of 89.41 GiB (XLA" in compile_policy.backend_prediction(_run(TPU7X, {c.name: 45e9}), c)


def test_a_ulysses_ring_sharding_over_its_residual_bound_is_left_to_the_backend():
    """The splash kernel in a ring step returns its logsumexp: Wan 14B's usp8x2 on TPU7x-16
    at 480p 81f had blocks 8192 x 1024 x 512, 53.0 MiB by the bound without those outputs, so
    it was predicted to compile and was the plan; libtpu refused it at 73.48 MiB of 64. Now
    the outputs count in the block search (69.0 MiB, over the limit: it leaves the triple),
    and the planner holds such a sharding to kernels.residual_vmem_bytes (its batch of 2 a
    device, TPU7x's spill slots: over 64 MiB), so it is compiled in full before it is the
    plan."""
    c = _candidate("usp4x2", blocks=(8192, 1024, 512))
    assert c.form == "ulysses_ring" and kernels.returns_residuals(c)
    assert kernels.vmem_bytes(8192, 1024, 512, 128) / 2**20 == pytest.approx(53.0)
    with_lse = kernels.vmem_bytes(8192, 1024, 512, 128, residuals=True)
    assert with_lse / 2**20 == pytest.approx(69.0) and with_lse > kernels.scoped_vmem_bytes()
    assert kernels.backend_vmem(c, 128, 2, "tpu7x")[0] > kernels.scoped_vmem_bytes()
    assert compile_policy.backend_prediction(_run(TPU7X, {c.name: 2**30}), c) is None
    shape = kernels.attention_shapes(c, get_model("wan2.1-t2v-1.3b"),
                                     get_workload("480p", 21), "splash")
    assert shape.residuals
    assert all(kernels.vmem_bytes(*t, 128, residuals=True) <= kernels.scoped_vmem_bytes()
               for t in kernels.legal_triples(shape, 128))
    plain = _candidate("dp2-ag4")
    assert not kernels.returns_residuals(plain)
    assert not kernels.attention_shapes(plain, get_model("wan2.1-t2v-1.3b"),
                                        get_workload("480p", 21), "splash").residuals


def test_blocks_over_the_vmem_bound_are_left_to_the_backend():
    """MaxDiffusion's published TPU7x-8 blocks (6400 x 2048): the bound says 67.5 MiB of
    64 (libtpu: 66 MiB, refused), so only the backend can say."""
    c = _candidate(blocks=(6400, 2048, 1024))
    assert kernels.vmem_bytes(6400, 2048, 1024, 128) > kernels.scoped_vmem_bytes()
    assert compile_policy.backend_prediction(_run(V5E, {c.name: 2**30}), c) is None


def test_only_unpredicted_baselines_are_compiled_in_full_unless_asked():
    ok, big = _candidate(), _candidate("dp2-uly4")
    hbm = {ok.name: 2**30, big.name: 15 * 2**30}
    run = _run(V5E, hbm)
    run.graphs = {ok.name: object(), big.name: object()}
    assert compile_policy.unpredicted(run, [ok, big, ok]) == [big]
    assert set(run.predicted) == {ok.name}
    every = _run(V5E, hbm, verify_baselines=True)
    every.graphs = dict(run.graphs)
    assert compile_policy.unpredicted(every, [ok, big]) == [ok, big] and not every.predicted
    every.compiled_in_full.add(ok.name)
    assert compile_policy.unpredicted(every, [ok, big]) == [big]


def _pair(c, seconds, tag=""):
    return Pair(c, "row-major", list(range(8)), q2=seconds, simulated=seconds, tag=tag)


@pytest.mark.parametrize("verify", [False, True])
def test_the_decision_is_compiled_in_full_only_when_unpredicted_or_asked(verify,
                                                                          monkeypatch):
    """The decision's sharding is held to the baselines' rule: predicted from HBM and VMEM,
    it stays analysed (said in run.predicted) and only the baselines' analyses run; with
    verify, or when its HBM is unknown, it is compiled in full in that batch."""
    small, unknown, base = _candidate(), _candidate("dp2-uly4"), _candidate("dp2-usp2x2")
    run = _run(V5E, {small.name: 2**30}, verify=verify)
    run.graphs = {small.name: object(), unknown.name: object()}
    batches = []
    monkeypatch.setattr(compile_policy, "compile_candidates",
                        lambda run, what, todo, full=(): batches.append(
                            ([c.name for c in todo], [c.name for c in full])))
    backend_accepted_decision(run, [_pair(small, 1.0), _pair(unknown, 2.0)], [base])
    assert batches == [([base.name], [small.name] if verify else [])]
    assert (small.name in run.predicted) is not verify
    batches.clear()
    backend_accepted_decision(run, [_pair(unknown, 2.0)], [])
    assert batches == [([], [unknown.name])] and unknown.name not in run.predicted


@pytest.mark.parametrize("backend_accepts", [True, False])
def test_a_baseline_that_wins_the_pooling_is_compiled_in_full_first(backend_accepts,
                                                                     monkeypatch):
    """The plan's sharding is held to the prediction rule: a baseline's pair that beats
    the decision, its verdict not predictable (HBM unknown), is compiled in full;
    refused, it leaves the table and the decision is the plan."""
    decision, alpa = _candidate(), _candidate("dp2-uly4")
    run = _run(V5E, {})
    run.graphs = {decision.name: object(), alpa.name: object()}
    run.compiled_in_full = {decision.name}
    run.predicted = {alpa.name: "analysed, not compiled in full; predicted ..."}
    compiled = []

    def verify(run, what, todo):
        compiled.extend(c.name for c in todo)
        for c in todo:
            if backend_accepts:
                run.compiled_in_full.add(c.name)
            else:
                del run.graphs[c.name]
                run.skip(c.name, FULL_COMPILE, "full compile failed: RESOURCE_EXHAUSTED")

    monkeypatch.setattr(compile_policy, "compile_in_full", verify)
    pool, base = pooling.backend_accepted_pool(run, [_pair(decision, 2.0)],
                                               {"alpa": _pair(alpa, 1.0, "alpa")})
    assert compiled == [alpa.name] and alpa.name not in run.predicted
    if backend_accepts:
        assert pooling.pooled(pool, base)[0].candidate.name == alpa.name
    else:
        assert base == {} and run.failed_baselines["alpa"]["candidate"] == alpa.name
        assert "RESOURCE_EXHAUSTED" in run.failed_baselines["alpa"]["why"]
        assert pooling.pooled(pool, base)[0].candidate.name == decision.name


def test_the_hbm_figure_travels_with_the_analysis_text():
    report = ("Memory Space: default (color=0)\nTotal bytes: 4135936 (3.94MiB)\n"
              "  cumulative_size; ...\nMemory Space: alt (color=1)\nTotal bytes: 7\n")
    text = optimized_hlo._with_hbm("HloModule jit_step\n\nENTRY e {}\n", report)
    assert optimized_hlo.hbm_bytes(text) == 4135936
    assert optimized_hlo.hbm_bytes("HloModule jit_step\n") is None
    assert optimized_hlo._with_hbm("HloModule m\n", "no totals here") == "HloModule m\n"


def test_a_predicted_baseline_that_wins_the_pooling_is_the_plan_uncompiled(monkeypatch):
    """A baseline's pair that beats the decision and whose verdict is predicted becomes the
    plan analysed only (nothing compiled), unless verify asks for the full compile."""
    decision, alpa = _candidate(), _candidate("dp2-uly4")
    for verify in (False, True):
        run = _run(V5E, {alpa.name: 2**30}, verify=verify)
        run.graphs = {decision.name: object(), alpa.name: object()}
        compiled = []
        monkeypatch.setattr(compile_policy, "compile_in_full", lambda run, what, todo: (
            compiled.extend(c.name for c in todo),
            run.compiled_in_full.update(c.name for c in todo)))
        pool, base = pooling.backend_accepted_pool(run, [_pair(decision, 2.0)],
                                                   {"alpa": _pair(alpa, 1.0, "alpa")})
        assert pooling.pooled(pool, base)[0].candidate.name == alpa.name
        assert compiled == ([alpa.name] if verify else [])
        assert (alpa.name in run.predicted) is not verify


def test_the_plan_says_which_shardings_the_backend_compiled(tmp_path):
    """The tiny Wan on v5e:2x4 (TPU target): every sharding analysed only (all small), the
    plan's included, the ring forms too (their kernels, which return residuals, far below
    the limit by kernels.residual_vmem_bytes), and the plan, its choice and its rows say
    so."""
    from aoizora.commands.plan import comparison_rows

    r = planner.plan("wan-tiny", "tiny", None, "v5e:2x4",
                     planner.Settings(top_k=2, workers=1, cache=Cache(str(tmp_path))))
    p = r.plan.planning
    full, only = set(p["compiled_in_full"]), p["analysed_only"]
    rings = {x.candidate.name for x in r.stage1 if kernels.returns_residuals(x.candidate)}
    assert not full and rings and rings & set(only)
    assert all("residuals returned" in only[n] for n in rings & set(only))
    assert r.plan.choice.candidate in set(only) | full
    if r.plan.choice.candidate in only:
        assert r.plan.choice.extra["analysed_only"] == only[r.plan.choice.candidate]
    assert p["programs"].startswith("optimized HLO")
    assert "verify" not in p["phases"]   # nothing compiled in full
    for tag, b in r.plan.baselines.items():
        if b.candidate in full:
            assert "analysed_only" not in b.extra
        else:
            assert b.extra["analysed_only"] == only[b.candidate]
            assert "HBM" in only[b.candidate] and "analysed, not compiled in full" in b.label(tag)
    labels = [row[0] for row in comparison_rows(r.plan)]
    assert any("analysed, not compiled in full" in label for label in labels)


def test_a_sharding_the_oracles_full_compile_refuses_leaves_the_plan(monkeypatch):
    """With the oracle, a sharding predicted to compile that the backend then refuses (the
    oracle compiles its best in full) cannot be the plan: it leaves the pool, and the oracle
    is the best pair whose sharding compiles. (Wan 14B's ring forms on v5e-4: predicted
    within the VMEM bound, refused by libtpu at 66.8 MiB of 64; before, the plan kept the
    refused sharding and crashed on its missing program.)"""
    predicted, other, alpa = _candidate(), _candidate("dp2-uly4"), _candidate("dp2-ring4")
    run = _run(V5E, {predicted.name: 2**30})
    run.settings = dataclasses.replace(run.settings, oracle=True)
    run.stage2.rank = lambda c, graph, q1=None: []      # no placements beyond the pairs
    run.graphs = {c.name: object() for c in (predicted, other, alpa)}
    run.compiled_in_full = {other.name}
    run.predicted = {predicted.name: "analysed, not compiled in full; predicted ..."}

    def verify(run, what, todo):
        for c in todo:
            if c.name == predicted.name:
                del run.graphs[c.name]
                run.skip(c.name, FULL_COMPILE,
                         "full compile failed: CompileTimeScopedVmemOom")
            else:
                run.compiled_in_full.add(c.name)

    monkeypatch.setattr(compile_policy, "compile_in_full", verify)
    pool = [_pair(predicted, 1.0), _pair(other, 2.0)]
    oracle, pool, base = oracle_and_refusals(
        run, [predicted, other, alpa], [], pool, {"alpa": _pair(alpa, 1.5, "alpa")}, None)
    assert oracle.candidate.name == alpa.name
    assert [p.candidate.name for p in pool] == [other.name]
    assert pooling.pooled(pool, base)[0].candidate.name == alpa.name
    assert any("CompileTimeScopedVmemOom" in s for s in run.skipped)


def test_the_ring_kernel_is_held_to_its_residual_bound():
    """tokamax's ring kernel spills registers into VMEM (TPU7x, 4736 x 2560 x 512, 20 heads:
    libtpu 100.6 MiB in the issue-32 plans, 31 of them spill slots; vmem_bytes said 69.6):
    kernels.residual_vmem_bytes counts TPU7x's spills as 1.6 score tiles and is above that
    total, so the ring is compiled in full; at MaxDiffusion's 512s it is far below the limit
    and predicted to compile, as a splash sharding is."""
    c = dataclasses.replace(_candidate("dp2-ring4"), kernel="tokamax_ring")
    big = dataclasses.replace(c, block_q=4736, block_kv=2560, block_kv_compute=512)
    assert kernels.backend_vmem(big, 128, 2, "tpu7x")[0] / 2**20 >= 100.6
    splash = _candidate()
    hbm = {c.name: 2**30, splash.name: 2**30}
    assert compile_policy.backend_prediction(_run(dict(TPU7X, generation="tpu7x"), hbm), big) is None
    assert "residuals returned" in compile_policy.backend_prediction(_run(V5E, hbm), c)
    assert compile_policy.backend_prediction(_run(V5E, hbm), splash) is not None

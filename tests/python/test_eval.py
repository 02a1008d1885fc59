"""aoizora eval: the evaluation machinery on the tiny model on v5e:2x4, real lowering and
real TPU compiles. The candidate list is cut to the baselines plus a few others so the whole
module stays well under a minute on a loaded 2-core machine."""

import csv
import json
import os

import pytest

from aoizora import evaluate, strategies
from aoizora.cache import Cache
from aoizora.evaluate import Setting

TINY = Setting("wan-tiny", "tiny", 9, "v5e:2x4")
KEEP = {"ag8", "ag8w", "uly8w", "dp2-ag4w", "dp2-usp2x2", "dp2-ring4"}


@pytest.fixture(scope="module")
def subset():
    """Only the candidates in KEEP (every baseline of the tiny setting is among them)."""
    mp = pytest.MonkeyPatch()
    full = strategies.enumerate_candidates
    mp.setattr(strategies, "enumerate_candidates",
               lambda *a, **k: [c for c in full(*a, **k) if c.name in KEEP])
    yield
    mp.undo()


@pytest.fixture(scope="module")
def evaluated(subset, tmp_path_factory):
    root = tmp_path_factory.mktemp("eval")
    cache = Cache(str(root / "cache"))
    out = str(root / "out")
    results = evaluate.run_grid([TINY], out, oracle=True, workers=0, cache=cache)
    return results[0], out, cache


@pytest.fixture(scope="module")
def planned(evaluated):
    """The same setting planned again (from the cache) for cross-checks."""
    from aoizora.planner import Settings, plan

    _, _, cache = evaluated
    return plan(TINY.model, TINY.video, TINY.frames, TINY.topology,
                Settings(workers=0, cache=cache, oracle=True))


def test_spearman_closed_forms():
    assert evaluate.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert evaluate.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ranks (1,2,3,4) vs (2,1,4,3): d^2 = 4, rho = 1 - 6*4/(4*15) = 0.6
    assert evaluate.spearman([1, 2, 3, 4], [2, 1, 4, 3]) == pytest.approx(0.6)
    assert evaluate.spearman([1, 2, 3], [5, 5, 5]) is None
    assert evaluate.spearman([1, 2], [1, 2]) is None
    assert evaluate.geomean([2.0, 8.0]) == pytest.approx(4.0)


def test_paper_grid():
    g = evaluate.grid("paper")
    assert len(g) == 36 and len({s.key for s in g}) == 36
    assert g[0].key == "wan-14b_v5e-2x4_480p-21f"
    assert g[1].key == "wan-14b_v5e-2x2_480p-21f"
    assert all(s.model == "wan2.1-t2v-14b" for s in g[:18])
    only = evaluate.select(g, ["14b", "4x4"])
    assert len(only) == 6 and all("4x4" in s.key and "14b" in s.key for s in only)
    assert evaluate.select(g, None) == g


def test_setting_figures(evaluated, planned):
    r, _, _ = evaluated
    assert r["status"] == "ok", r.get("reason")
    ours = r["aoizora"]["simulated_s"]
    assert ours > 0
    # Every baseline's pair is in AoiZora's simulated pool: it is never slower.
    assert {"existing", "alpa-style"} <= set(r["baselines"])
    for tag, b in r["baselines"].items():
        assert ours <= b["simulated_s"] * (1 + 1e-12), tag
        assert r["speedup"][f"vs_{tag}"] == pytest.approx(b["simulated_s"] / ours)
        assert r["speedup"][f"vs_{tag}"] >= 1.0
    # The oracle simulated every placement of every compiled candidate: at least as fast.
    assert r["oracle"]["simulated_s"] <= ours * (1 + 1e-12)
    assert r["speedup"]["oracle"] <= 1.0 + 1e-12
    assert r["oracle"]["simulated_s"] == pytest.approx(r["stage1"]["winner_simulated_s"])
    assert sorted(r["stage1"]["compiled"]) == sorted(planned.graphs)
    assert set(r["stage1"]["compiled"]) == {x.candidate.name for x in planned.stage1 if x.fits}


def test_recall_rank_follows_stage1_order(evaluated, planned):
    r, _, _ = evaluated
    s1 = r["stage1"]
    order = evaluate.q1_order(planned.stage1)
    assert len(order) == sum(x.fits for x in planned.stage1)
    assert all(a.q1_seconds <= b.q1_seconds for a, b in zip(order, order[1:]))
    names = [x.candidate.name for x in order]
    assert s1["top_k"] == names[:s1["k"]]
    assert s1["winner_q1_rank"] == names.index(s1["winner"])
    assert s1["in_top_k"] == (s1["winner_q1_rank"] < s1["k"])
    assert s1["legal"] == len(KEEP)
    assert s1["top_k_best"] in s1["top_k"]
    assert s1["top_k_loss"] >= 0.0
    assert (s1["top_k_loss"] == 0.0) == (s1["top_k_best_s"] == s1["winner_simulated_s"])
    if s1["in_top_k"]:
        assert s1["top_k_best"] == s1["winner"]


def test_spread_and_spearman(evaluated, planned):
    r, _, _ = evaluated
    sp = r["placement_spread"]
    assert sp["candidate"] == r["aoizora"]["candidate"]
    assert sp["best_s"] <= r["aoizora"]["simulated_s"] <= sp["worst_s"]
    assert sp["spread"] == pytest.approx(sp["worst_s"] / sp["best_s"] - 1)
    assert sp["best_s"] <= sp["default_s"] <= sp["worst_s"]
    n_ranked = {}
    for p in planned.ranked:
        n_ranked[p.candidate.name] = n_ranked.get(p.candidate.name, 0) + 1
    assert sp["placements"] in (n_ranked[sp["candidate"]], n_ranked[sp["candidate"]] + 1)
    per = r["spearman"]["per_candidate"]
    assert set(per) == set(r["stage1"]["top_k"])
    for name, v in per.items():
        pts = [(q2, sim) for n, _, q2, sim in r["q2_vs_simulated"] if n == name]
        assert len(pts) == v["placements"]
        want = evaluate.spearman([a for a, _ in pts], [b for _, b in pts])
        assert v["rho"] == want
        assert want is None or -1.0 <= want <= 1.0
        # the simulated latency of Q2's best placement (ties by placement name)
        q2_best = min((q2, pl, sim) for n, pl, q2, sim in r["q2_vs_simulated"] if n == name)[2]
        assert v["q2_best_is_sim_best"] == (q2_best <= min(b for _, b in pts) * (1 + 1e-9))
        assert v["q2_best_loss"] == pytest.approx(q2_best / min(b for _, b in pts) - 1)
    rhos = [v["rho"] for v in per.values() if v["rho"] is not None]
    assert r["spearman"]["min"] == (min(rhos) if rhos else None)


def test_planning_time_and_resume(evaluated):
    r, out, cache = evaluated
    t = r["planning"]
    assert t["cold_cache_hits"] == 0 and t["cold_jobs"] > 0
    assert t["warm_cache_hits"] == t["warm_jobs"] == t["cold_jobs"]
    assert t["warm_s"] < t["cold_s"]
    path = evaluate.setting_path(out, TINY)
    assert json.load(open(path))["key"] == TINY.key
    logged = []
    again = evaluate.run_grid([TINY], out, oracle=True, workers=0, cache=cache,
                              log=logged.append)
    assert again[0]["planning"] == t and "kept" in logged[0]
    written = evaluate.write_outputs(out)
    rows = list(csv.DictReader(open(os.path.join(out, "results.csv"))))
    assert len(rows) == 1 and rows[0]["key"] == TINY.key
    assert float(rows[0]["aoizora_ms"]) == pytest.approx(r["aoizora"]["simulated_s"] * 1e3)
    assert TINY.key in open(os.path.join(out, "results.md")).read()
    assert all(os.path.getsize(p) > 0 for p in written)


def test_rerun_keeps_the_colder_measurement():
    def res(cold, hits):
        return {"status": "ok", "planning": {"cold_s": cold, "cold_cache_hits": hits,
                                             "cold_jobs": 63, "cold_phases": {"total": cold}}}
    old, new = res(131.0, 13), res(0.4, 63)
    evaluate._keep_cold(new, old)
    assert new["planning"]["cold_s"] == 131.0 and new["planning"]["cold_cache_hits"] == 13
    assert new["planning"]["rerun_s"] == 0.4
    colder = res(120.0, 0)
    evaluate._keep_cold(colder, res(0.3, 63))    # a colder rerun replaces a warm one
    assert colder["planning"]["cold_s"] == 120.0 and "rerun_s" not in colder["planning"]

"""The oracle (Settings.oracle): the best simulated pair over every placement Stage 2
considers of every compiled sharding, compiled in full like the plan. A reference the plan
is measured against, never used to choose it; its full compiles can remove shardings the
backend refuses from the pool, which oracle_and_refusals applies.
"""

from __future__ import annotations

from aoizora.errors import UserError
from aoizora.planning import compile_policy, pooling
from aoizora.planning.run_state import Run
from aoizora.planning.stage2 import Pair


def oracle_and_refusals(run: Run, candidates: list, s1: list, pool: list[Pair],
                        base_pairs: dict[str, Pair], video
                        ) -> tuple[Pair | None, list[Pair], dict[str, Pair]]:
    """With Settings.oracle: the oracle (best_pair), and the pool and the baselines' pairs
    less every sharding whose full compile there the TPU backend refused although the
    analysis predicted it to compile (a Skip in run; a refused baseline in
    run.failed_baselines); the plan's sharding is then held to the rule again. Without it:
    (None, pool, base_pairs)."""
    if not run.settings.oracle:
        return None, pool, base_pairs
    oracle = best_pair(run, candidates, s1, pool + list(base_pairs.values()))
    pool = [p for p in pool if p.candidate.name in run.graphs]
    if not pool:
        raise UserError("every judged sharding failed the full compile: "
                        + "; ".join(run.skipped[-3:]))
    for tag in [t for t, p in base_pairs.items() if p.candidate.name not in run.graphs]:
        name = base_pairs.pop(tag).candidate.name
        run.failed_baselines[tag] = {"candidate": name, "why": run.skip_reason(name)}
    pool, base_pairs = pooling.backend_accepted_pool(run, pool, base_pairs, video)
    return oracle, pool, base_pairs


def best_pair(run: Run, candidates: list, s1: list, simulated: list[Pair]) -> Pair:
    """The best simulated pair over every placement Stage 2 considers of every compiled
    sharding (the plan's own pool included), compiled in full like the plan: a sharding the
    TPU backend refuses is skipped. Raises UserError when the backend refuses them all."""
    by_name = {c.name: c for c in candidates}
    q1_of = {r.candidate.name: r.q1_seconds for r in s1}
    run.progress.phase("oracle: simulate every pair", len(run.graphs))
    every = list(simulated)
    for name, g in run.graphs.items():
        for p in run.stage2.rank(by_name[name], g, q1=q1_of.get(name)):
            every.append(run.stage2.simulate(p, g))
        run.progress.advance(name)
    for p in sorted(every, key=lambda p: (p.simulated, p.q2)):
        if p.candidate.name in run.graphs:
            compile_policy.compile_in_full(run, "full compile of the oracle", [p.candidate])
            if p.candidate.name in run.graphs:
                return p
    raise UserError("every simulated sharding failed the full compile: "
                    + "; ".join(run.skipped[-3:]))

"""How sure the plan is: the joint draws every row is priced under (pricer), each choice's
interval and the speedups' (annotate_intervals: plan.uncertainty), and the plan's changes
to what the user runs defended against them (defended). Where the slice's figures have no
profile to draw from, the error bands' intervals stand in, and plan.uncertainty says why.
"""

from __future__ import annotations

from aoizora.plan_format import Plan
from aoizora.planning import baseline_pairs, model_draws, pooling
from aoizora.planning.run_state import Run
from aoizora.planning.stage2 import NoDefaultOrder, Pair


def pricer(run: Run, video):
    """The joint draws of the slice's figures every row is priced under (confidence.py);
    None, with run.not_drawn, where the figures have no profile to draw from."""
    from aoizora.planning import confidence

    try:
        draws = model_draws.ModelDraws(run.stage2, run.settings.draws, run.settings.seed)
    except model_draws.UncertainModel as e:
        run.not_drawn = str(e)
        run.progress.note(f"no joint draws: {e}; intervals from the error bands")
        return None
    return confidence.Pricer(draws, run.graphs, video)


def annotate_intervals(run: Run, plan: Plan, simulated: list[Pair], video, pricer,
                       best: Pair, base_pairs: dict[str, Pair], oracle: Pair | None,
                       changes: list[dict]) -> None:
    """Every choice of `plan` with its interval and its speedup's, plan.uncertainty
    (confidence.annotate) from the joint draws; where the slice's figures cannot be drawn
    (`pricer` None), the error bands' intervals and ties (intervals.annotate), and
    plan.uncertainty says why."""
    from aoizora.planning import confidence, intervals

    if pricer is not None:
        pairs = {(p.candidate.name, p.placement): (p, "") for p in simulated + [best]}
        pairs |= {(p.candidate.name, p.placement): (p, tag) for tag, p in base_pairs.items()}
        if oracle is not None:
            pairs[(oracle.candidate.name, oracle.placement)] = (oracle, "oracle")
        confidence.annotate(plan, pricer, pairs, best, changes, run.settings.defend_p,
                            intervals.ROBUST if run.settings.robust else intervals.POINT)
        return
    parts = ({(p.candidate.name, p.placement): video.parts(p) for p in simulated}
             if video is not None else {})
    intervals.annotate(plan, pooling.bands(run), intervals.ROBUST if run.settings.robust
                       else intervals.POINT, parts)
    plan.uncertainty["not_drawn"] = run.not_drawn


def defended(run: Run, pricer, ranked: list[Pair], base_pairs: dict[str, Pair]
             ) -> tuple[Pair, list[dict]]:
    """The plan's pair once each change it makes to what the user runs is defended
    (confidence.defend), and the changes considered; the first of `ranked` without draws."""
    from aoizora.planning import confidence

    if pricer is None or run.settings.defend_p <= 0:
        return ranked[0], []
    tag = baseline_pairs.existing_tag(base_pairs, run.no_default_order)
    return confidence.defend(pricer, ranked, lambda p: on_default_order(run, p),
                             base_pairs.get(tag), tag or "", run.settings.defend_p)


def on_default_order(run: Run, pair: Pair) -> Pair | None:
    """`pair`'s sharding on JAX's default device order, simulated; None where JAX has none."""
    graph = run.graphs[pair.candidate.name]
    try:
        default = run.stage2.default_pair(pair.candidate, graph, q1=pair.q1)
    except NoDefaultOrder:
        return None
    default.tag = pair.tag  # the same row (a baseline's, or none), on another order
    return run.stage2.simulate(default, graph)

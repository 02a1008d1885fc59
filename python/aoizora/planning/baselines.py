"""The baselines AoiZora is measured against, computed on the same model and slice.

- existing deployment: the hand-tuned configurations of open-source practice
  (MaxDiffusion's default: context parallelism over the whole slice with weights sharded
  over it; its CFG recipes, data 2 x context N/2 with K/V all-gathered, ring, Ulysses, or
  Ulysses 2 x ring (Ulysses innermost, on a chip's two cores on TPU7x); xDiT-style Ulysses x
  ring; the official Wan FSDP + Ulysses), each on JAX's default device order, which is how
  MaxDiffusion lays them out (mesh_utils.create_device_mesh, never reordered). The best of
  them (simulated) is reported as "existing".
- Alpa-style logical search: among the shardings that fit in HBM (Stage 1's memory check),
  the one with the least compute + communication under XLA auto-sharding's per-collective
  alpha-beta model, on the default order. Each collective Stage 1 predicts
  (stage1.PredictedCollective: kind, mesh axes, real group size n, V bytes per device,
  executions) costs, per execution, with beta = 1 / one link's bandwidth:
      all-gather, reduce-scatter   alpha + beta (n-1)/n V     (V: the gathered array)
      all-reduce                   alpha + 2 beta (n-1)/n V
      all-to-all                   alpha + beta (n-1)/n V / n (XLA's form, no penalty factor)
      collective-permute           alpha + beta V
      collective-broadcast         alpha + beta V
  one link per axis, no contention, no wraparound, nothing overlapped. A group over part of
  an axis ("x:(1)2") or over several axes is priced by its real size n; every axis has the
  same link, so XLA's rule for a 2-D group (the larger alpha and beta of its axes) is that
  link's. A group of one device costs nothing.
- the oracle (planner option): every fitting candidate x every placement, simulated.

A FunctionSpec (`--model file.py:make_spec`) has only the Alpa-style baseline: nobody has
hand-tuned a deployment of an arbitrary function.
"""

from __future__ import annotations

from typing import Callable

from aoizora.planning import stage1, strategies
from aoizora.models.base import FunctionSpec

ALPA = "alpa-style"


class UnknownCollectiveKind(Exception):
    """Stage 1 predicted a collective kind the alpha-beta model has no form for
    (_BETA_FACTOR): a bug in aoizora (Stage 1 and this table disagree), never bad input.
    Deliberately no ValueError, so that no handler for unreadable text turns it into a
    skipped candidate or a priced-at-zero baseline: it ends the command as a bug."""

    def __init__(self, kind: str):
        super().__init__(f"alpa-style cost: Stage 1 predicted a collective of kind {kind!r}, "
                         f"which the alpha-beta model cannot price (it knows "
                         f"{', '.join(_BETA_FACTOR)})")
        self.kind = kind


# Bytes per link, per byte of V, as a function of the group size n (see the docstring).
_BETA_FACTOR: dict[str, Callable[[int], float]] = {
    "all-gather": lambda n: (n - 1) / n,
    "reduce-scatter": lambda n: (n - 1) / n,
    "all-reduce": lambda n: 2 * (n - 1) / n,
    "all-to-all": lambda n: (n - 1) / n / n,
    "collective-permute": lambda n: 1.0,
    "collective-broadcast": lambda n: 1.0,
}


def collective_seconds(c: stage1.PredictedCollective, link_bandwidth: float,
                       alpha: float = 1e-6) -> float:
    """One predicted collective's alpha-beta time, all executions, in seconds.

    Raises UnknownCollectiveKind on a kind the model does not know (never priced at zero
    silently)."""
    if c.kind not in _BETA_FACTOR:
        raise UnknownCollectiveKind(c.kind)
    n = c.group_size
    if n <= 1:
        return 0.0
    return c.executions * (alpha + _BETA_FACTOR[c.kind](n) * c.bytes / link_bandwidth)


def alpa_cost(result: stage1.Stage1Result, link_bandwidth: float,
              alpha: float = 1e-6) -> float:
    """Alpa's estimate of one Stage 1 result, in seconds: compute plus every predicted
    collective's alpha-beta time (collective_seconds), nothing overlapped."""
    return result.compute_seconds + sum(collective_seconds(c, link_bandwidth, alpha)
                                        for c in result.collectives)


def baseline_candidates(model, stage1_results: list, link_bandwidth: float,
                        alpha: float) -> dict[str, strategies.Candidate]:
    """tag -> candidate for every baseline that exists for this slice. A hand-tuned
    configuration that does not fit in memory is left out (it cannot be deployed); the
    Alpa-style pick is the least alpa_cost among the fitting results (ties by name), and
    absent when nothing fits. link_bandwidth in bytes/s per link, alpha in seconds."""
    fits = {r.candidate.name: r for r in stage1_results if r.fits}
    # A function spec (the generic path) has no hand-tuned deployment to compare with. Each
    # tag's candidate is the planned one (with the attention kernel and blocks it was lowered
    # with: a MaxDiffusion recipe runs its published blocks,
    # candidate_filter.published_recipes).
    out = {} if isinstance(model, FunctionSpec) else {
        tag: r.candidate for r in fits.values() for tag in r.candidate.baselines}
    if fits:
        best = min(fits.values(), key=lambda r: (alpa_cost(r, link_bandwidth, alpha),
                                                 r.candidate.name))
        out[ALPA] = best.candidate
    return out

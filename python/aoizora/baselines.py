"""The baselines AoiZora is measured against, computed on the same model and slice.

- existing deployment: the hand-tuned configurations of open-source practice
  (MaxDiffusion's default: context parallelism over the whole slice with weights sharded
  over it; its data 2 x context 4 recipe; xDiT-style Ulysses x ring), each on JAX's default
  device order. The best of them (simulated) is reported as "existing".
- Alpa-style logical search: the fitting sharding with the least per-mesh-axis alpha-beta
  cost (XLA auto-sharding's model: all-gather / reduce-scatter alpha + beta (n-1)/n bytes,
  all-reduce twice, one link per axis, no contention, no wraparound), on the default order.
- the oracle (planner option): every fitting candidate x every placement, simulated.
"""

from __future__ import annotations

from typing import Any

from aoizora import strategies

ALPA = "alpa-style"


def alpa_cost(result: Any, candidate: strategies.Candidate, link_bandwidth: float,
              alpha: float = 1e-6) -> float:
    """Alpa's per-axis alpha-beta estimate of one Stage 1 result, in seconds: compute plus
    every predicted byte over its mesh axis at one link's bandwidth, nothing overlapped."""
    sizes = dict(candidate.mesh_axes())
    comm = 0.0
    for axis, nbytes in result.comm_bytes_by_axis.items():
        n = 1
        for a in axis.split(","):  # a collective over several axes runs over their product
            n *= sizes.get(a.strip(), 1)
        if n > 1:
            comm += nbytes * (n - 1) / n / link_bandwidth
    count = sum(result.comm_count_by_kind.values())
    return result.compute_seconds + comm + alpha * count


def baseline_candidates(model, workload, n_chips: int, stage1_results: list,
                        link_bandwidth: float, alpha: float) -> dict[str, strategies.Candidate]:
    """tag -> candidate for every baseline that exists for this slice. A hand-tuned
    configuration that does not fit in memory is left out (it cannot be deployed)."""
    fits = {r.candidate.name: r for r in stage1_results if r.fits}
    out = {tag: c for tag, c in strategies.baseline_candidates(model, workload, n_chips).items()
           if c.name in fits}
    if fits:
        best = min(fits.values(), key=lambda r: (alpa_cost(r, r.candidate, link_bandwidth, alpha),
                                                 r.candidate.name))
        out[ALPA] = best.candidate
    return out

"""Stage 1 over the C++ core: StableHLO of each candidate in, Q1, memory and the predicted
communication out, then the Top-K that Stage 2 compiles.

    analyze(candidate, stablehlo_text, topology, **options) -> Stage1Result
    analyze_all([(candidate, text), ...], topology, **options) -> list[Stage1Result]
        ranked: fitting candidates by Q1 ascending (ties in input order), then the rejected
        ones (each with reject_reason); rank is set on every result.
    select_top_k(results, k=None) -> the k best fitting results by Q1 (k=None: DEFAULT_K)
    choose_k(winner_ranks=None, top_k=None) -> K: the --top-k override, else the K that
        measured recall asks for (k_from_recall), else DEFAULT_K
    top1_recall(winner_ranks, k) -> fraction of settings whose Stage-2 winner was in Top-K
    predicted_vs_compiled(result, graph) -> {kind: (predicted bytes, compiled bytes)}

Stage1Result.collectives lists every predicted collective (PredictedCollective: kind, axes,
real group size, V bytes per device, executions), for per-collective baselines.

`options` pass through to _core.analyze_stablehlo (peak_flops, hbm_bytes, link_bandwidth,
alpha, slice_dims, slice_wrap, hbm_usable_fraction); `topology` sets the chip figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from aoizora import _core

# K when the user gives none and no recall has been measured yet. The rule (k_from_recall):
# the smallest K that held the final winner in every setting of the evaluation grid, plus a
# slack of 1. Update MEASURED_WINNER_RANKS from `aoizora eval --grid paper` (docs/stage1.md).
DEFAULT_K = 4
# Q1 rank (0-based) of the sharding that won after Stage 2 and the simulator, with every
# fitting sharding compiled (`aoizora eval --grid paper --oracle`), on the fit half of the
# grid only (recall is reported on the other half): 480p 21f, 720p 21f and 720p 41f on
# v5e:2x2, v5e:2x4 and v5e:4x4, Wan 2.1 14B then Wan 2.1 1.3B, Q1 priced on placements
# (docs/results/grid.md: the run they come from and the held-out half).
MEASURED_WINNER_RANKS: tuple[int, ...] = (0, 0, 1, 2, 1, 1, 0, 5, 1,
                                          0, 1, 3, 1, 2, 1, 0, 0, 0)

KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")


# One collective Stage 1 predicts (identical ones merged): kind, axes, group_size (the real
# group: a sub-axis "x:(1)2" counts 2, a group over several axes their product; a permute's
# pair is 2), bytes (V per device for one execution: all-gather's gathered result,
# reduce-scatter's unscattered operand, the operand otherwise), executions, origin. Bound
# field for field from stage1/candidate_analysis.h.
PredictedCollective = _core.PredictedCollective


@dataclass
class Stage1Result:
    """A candidate's Stage 1 analysis. Every figure is the C++ result's (`core`, a
    _core.Stage1Result: the fields of stage1/candidate_analysis.h, read as attributes of
    this object); the candidate and its Q1 rank are added here."""
    candidate: Any                      # strategies.Candidate
    core: Any = field(default_factory=_core.Stage1Result)
    rank: int = -1                      # set by analyze_all

    def __getattr__(self, name: str):
        if name in ("candidate", "core", "rank") or name.startswith("__"):
            raise AttributeError(name)  # not set yet (copy, unpickle): no recursion
        return getattr(self.core, name)

    @property
    def memory_bytes(self) -> float:
        return self.param_bytes + self.peak_activation_bytes

    def to_dict(self) -> dict[str, Any]:
        name = getattr(self.candidate, "name", str(self.candidate))
        return {"candidate": name, "rank": self.rank, "q1_seconds": self.q1_seconds,
                "compute_seconds": self.compute_seconds, "comm_seconds": self.comm_seconds,
                "overlappable_comm_seconds": self.overlappable_comm_seconds,
                "barrier_comm_seconds": self.barrier_comm_seconds,
                "q1_placement": self.q1_placement, "fits": self.fits,
                "reject_reason": self.reject_reason, "param_bytes": self.param_bytes,
                "peak_activation_bytes": self.peak_activation_bytes,
                "comm_bytes_by_kind": dict(self.comm_bytes_by_kind),
                "comm_bytes_by_axis": dict(self.comm_bytes_by_axis)}


def analyze(candidate, stablehlo: str, topology: str | None = None, **options) -> Stage1Result:
    """Raises ValueError (aoizora._core.CoreError) with line:column on unreadable text."""
    if topology:
        options["topology"] = topology
    return Stage1Result(candidate, _core.analyze_stablehlo(stablehlo, **options))


def analyze_all(items: Iterable[tuple[Any, str]], topology: str | None = None,
                **options) -> list[Stage1Result]:
    """Stage 1 over (candidate, StableHLO text) pairs, ranked best first; rejected last."""
    results = [analyze(c, text, topology, **options) for c, text in items]
    fitting = [r for r in results if r.fits]
    order = [fitting[i] for i in _core.select_top_k([r.q1_seconds for r in fitting], 0)]
    ranked = order + [r for r in results if not r.fits]
    for i, r in enumerate(ranked):
        r.rank = i
    return ranked


def choose_k(winner_ranks: Sequence[int] | None = None, top_k: int | None = None) -> int:
    """--top-k wins; else the K measured recall asks for; else DEFAULT_K."""
    if top_k is not None:
        return top_k
    ranks = MEASURED_WINNER_RANKS if winner_ranks is None else tuple(winner_ranks)
    if ranks:
        return _core.k_from_recall(list(ranks), 1, 1)
    return DEFAULT_K


def select_top_k(results: list[Stage1Result], k: int | None = None) -> list[Stage1Result]:
    """The k fitting results with the least Q1, best first (ties: in enumeration order)."""
    k = choose_k(top_k=k)
    fitting = [r for r in results if r.fits]
    order = _core.select_top_k([r.q1_seconds for r in fitting], k)
    return [fitting[i] for i in order]


def top1_recall(winner_ranks: Sequence[int], k: int) -> float:
    """Fraction of settings whose Stage-2 winner had Q1 rank < k (1.0 for no settings)."""
    if not winner_ranks:
        return 1.0
    return sum(1 for r in winner_ranks if r < k) / len(winner_ranks)


def predicted_vs_compiled(result: Stage1Result, graph) -> dict[str, tuple[float, float]]:
    """Per collective kind: (Stage 1's predicted bytes, the compiled HLO's bytes), both per
    device, operand bytes x executions (hlo.CollectiveGraph's convention)."""
    real = {k: 0.0 for k in KINDS}
    for c in graph.collectives:
        real[c.kind] = real.get(c.kind, 0.0) + float(c.operand_bytes) * c.repeat
    kinds = sorted(set(real) | set(result.comm_bytes_by_kind))
    return {k: (float(result.comm_bytes_by_kind.get(k, 0.0)), real.get(k, 0.0)) for k in kinds}

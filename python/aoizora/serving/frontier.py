"""The serving frontier: per split of a slice, latency per video, videos per hour and cost per
video; the splits no other beats on both latency and throughput (or cost); the pick under a
latency bound, with why.

    row = Row(...)                                 one split at one batch (fields below)
    videos_per_hour(replicas, batch, latency_s)    replicas x batch videos every latency_s
    usd_per_video(chips, usd_per_chip_hour, vph)   every chip of the slice, rented for an hour,
                                                   over the videos of that hour
    frontier(rows, against="throughput"|"cost")    the rows on the Pareto frontier
    pick(rows, bound_s, objective="throughput"|"cost") -> Pick: the row and why, or no row
                                                   and why (nothing meets the bound); bound_s
                                                   None: every split is within it

Units: seconds, videos per hour, USD. A batch of b videos on a replica finishes together, so
each of its videos waits the batch's latency. Rows not `priced` (the replicas could share
links and were not simulated together, no plan, no figures) are on no frontier and never
picked. Pure arithmetic on given figures; where they come from is survey.py's.
"""

from __future__ import annotations

from dataclasses import dataclass

OBJECTIVES = ("throughput", "cost")


@dataclass(frozen=True)
class Row:
    topology: str                  # the slice ("v5e:4x4")
    split: str                     # "2 x 2x4 (as v5e:2x4)"
    replicas: int
    chips: int                     # chips of the whole slice, all rented
    batch: int                     # videos denoised together per replica
    latency_s: float | None        # seconds a video waits in service: one call of `batch`
                                   # videos on one replica (its plan at that batch)
    videos_per_hour: float | None  # the whole slice
    usd_per_video: float | None    # None: no price for the generation, or not priced
    scope: str = ""                # what latency_s covers ("video", "transformer steps only")
    priced: bool = True            # False: not on any frontier (why_not says why)
    why_not: str = ""
    plan: str = ""                 # the replica's sharding @ placement
    # How the replicas were priced: "apart: <why no link is shared>", or "together: <the
    # replicas simulated at once on the slice, and against the plan alone>"; "" unpriced.
    pricing: str = ""
    # latency_s's 90 % interval across joint draws of the model (the replica plan's, scaled
    # to latency_s); None where the plan has none
    latency_interval_s: tuple[float, float] | None = None


@dataclass(frozen=True)
class Pick:
    row: Row | None                # None: no split meets the bound
    why: str                       # one sentence


def videos_per_hour(replicas: int, batch: int, latency_s: float) -> float:
    return replicas * batch * 3600.0 / latency_s


def usd_per_video(chips: int, usd_per_chip_hour: float, vph: float) -> float:
    return chips * usd_per_chip_hour / vph


def _value(row: Row, against: str) -> float | None:
    """The second coordinate, larger is better: throughput, or minus the cost."""
    if against == "throughput":
        return row.videos_per_hour
    return None if row.usd_per_video is None else -row.usd_per_video


def frontier(rows: list[Row], against: str = "throughput") -> list[Row]:
    """The priced rows with figures that no other row dominates: none is at least as fast and
    at least as good on `against` (more videos per hour, or fewer USD per video) and better
    on one of the two. Equal rows are all kept. Fastest first."""
    if against not in OBJECTIVES:
        raise ValueError(f"against {against!r}: use one of {OBJECTIVES}")
    pts = [r for r in rows if r.priced and r.latency_s is not None
           and _value(r, against) is not None]

    def dominated(r: Row) -> bool:
        return any(o.latency_s <= r.latency_s and _value(o, against) >= _value(r, against)
                   and (o.latency_s < r.latency_s or _value(o, against) > _value(r, against))
                   for o in pts)

    return sorted((r for r in pts if not dominated(r)),
                  key=lambda r: (r.latency_s, -_value(r, against)))


def pick(rows: list[Row], bound_s: float | None, objective: str = "throughput") -> Pick:
    """The row within `bound_s` seconds per video (None: any latency) with the most videos
    per hour (objective "throughput") or the fewest USD per video ("cost"), ties to the
    faster; with a sentence saying why it wins, or why nothing does."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective {objective!r}: use one of {OBJECTIVES}")
    pts = [r for r in rows if r.priced and r.latency_s is not None
           and _value(r, objective) is not None]
    if not pts:
        return Pick(None, "no split has figures to choose from" + (
            " with a price (the price table has none for these generations)"
            if objective == "cost" else ""))
    within = [r for r in pts if bound_s is None or r.latency_s <= bound_s]
    if not within:
        fastest = min(pts, key=lambda r: r.latency_s)
        return Pick(None, f"no split meets the latency bound of {_s(bound_s)}: the fastest, "
                          f"{_label(fastest)}, takes {_s(fastest.latency_s)} per video")
    best = max(within, key=lambda r: (_value(r, objective), -r.latency_s))
    return Pick(best, _why(best, within, pts, bound_s, objective))


def _why(best: Row, within: list[Row], pts: list[Row], bound_s: float | None,
         objective: str) -> str:
    measure = ("the most videos per hour" if objective == "throughput"
               else "the lowest cost per video")
    splits = f"{len(within)} split{'s' if len(within) > 1 else ''}"
    if bound_s is None:
        text = (f"{_label(best)}: {_s(best.latency_s)} per video (no latency bound) and "
                f"{_figures(best)}: {measure} of the {splits} with figures")
    else:
        text = (f"{_label(best)}: {_s(best.latency_s)} per video, within the bound of "
                f"{_s(bound_s)}, and {_figures(best)}: {measure} of the {splits} that meet it")
    faster = [r for r in within if r.latency_s < best.latency_s]
    if faster:
        f = min(faster, key=lambda r: r.latency_s)
        text += f"; {_label(f)} is faster ({_s(f.latency_s)}) but {_figures(f)}"
    over = [r for r in pts if r not in within and _value(r, objective) > _value(
        best, objective)]
    if over:
        o = max(over, key=lambda r: _value(r, objective))
        text += f"; {_label(o)} would give {_figures(o)} but takes {_s(o.latency_s)}"
    return text


def _label(r: Row) -> str:
    return f"{r.split} on {r.topology}" + (f" at batch {r.batch}" if r.batch != 1 else "")


def _figures(r: Row) -> str:
    vph = f"{r.videos_per_hour:,.0f} videos per hour"
    return vph if r.usd_per_video is None else f"{vph} at {_usd(r.usd_per_video)} per video"


def _s(seconds: float) -> str:
    return f"{seconds:.3g} s"


def _usd(usd: float) -> str:
    return f"{usd:.3g} USD"

"""Serving under load: every configuration (split x batch) of a survey fed one stream of
requests through the queue simulator, and the cheapest one whose p99 latency meets a bound.

    load = Load(rate_per_hour, arrivals_s, source, warmup, seed, wait_s)
    stream(rate, source, requests, warmup, seed, wait_s) -> Load   from the command's
        options: rate "R/h" with source "poisson", or a trace file (rate None); UserError
    as_json(load, load_rows, pick, bound_s) -> dict               `serve --json`'s "load"
    under_load(rows, load, prices) -> [LoadRow]    one per frontier.Row, in order
    pick(load_rows, bound_s) -> frontier.Pick       the cheapest stable row with p99 <= bound_s
    LoadRow(...)                                    fields below

A configuration's seconds per call come from its own rows: a split's rows at batch b give
seconds_per_call[b] = that row's latency_s (one call of b videos on one replica, as the
planner priced it at that batch: `serve --batch 1,2` plans each replica shape at each); a row at batch B is simulated only when every size 1..B of its split is
priced, else it says which is not (nothing is scaled from another batch). Every
configuration sees the same arrivals (common random numbers), so their differences are the
configurations', not the draws'.

Cost per video under load: every chip of the slice rented for the hour, over the requests
served in it (the offered rate, when the replicas keep up): chips x USD per chip-hour /
rate. Idle replicas are paid for, so at a given rate it is the slice's price, not the split's
speed, that sets it. A configuration whose capacity is below the rate is "overloaded": its
queue grows without bound, its percentiles grow with the number of requests, and it is
never picked. All figures are simulated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aoizora.errors import UserError
from aoizora.serving import arrivals, queue_sim
from aoizora.serving.frontier import Pick, Row
from aoizora.serving.prices import PriceTable


@dataclass(frozen=True)
class Load:
    """One stream of requests and the policy every configuration serves it with."""

    rate_per_hour: float           # the offered rate (Poisson's R, or the trace's own)
    arrivals_s: np.ndarray         # arrival times, seconds, non-decreasing
    source: str                    # "poisson" or the trace's path
    warmup: int                    # the first requests, served and not measured
    seed: int = 0                  # Poisson's seed (a trace: none used)
    wait_s: float = 0.0            # T: how long a batch waits to fill (queue_sim.Policy)

    @property
    def requests(self) -> int:
        """Requests measured (after the warm-up)."""
        return len(self.arrivals_s) - self.warmup


REQUESTS = 20_000   # requests a Poisson stream holds unless asked otherwise


def stream(rate: str | None, source: str, requests: int | None, warmup: int | None,
           seed: int = 0, wait_s: float = 0.0) -> Load:
    """The stream: Poisson at `rate` ("30/h"; `requests` arrivals, default REQUESTS) when
    `source` is "poisson", else the trace at path `source` (its first `requests` lines, or
    all; `rate` must be None: the trace sets it). `warmup` default: a tenth. UserError, one
    line, on a bad rate, trace or count."""
    if source != "poisson":
        if rate is not None:
            raise UserError(f"--rate and --arrivals {source}: the trace sets the rate; give "
                            "one or the other")
        times = arrivals.read_trace(source)
        if requests is not None:
            if requests > len(times):
                raise UserError(f"--requests {requests}: the trace {source} has "
                                f"{len(times)} arrivals")
            times = times[:requests]
        per_hour = arrivals.trace_rate_per_hour(times)
    else:
        per_hour = arrivals.rate_per_hour(rate or "")
        times = arrivals.poisson(per_hour, requests or REQUESTS, seed)
    warmup = len(times) // 10 if warmup is None else warmup
    if warmup > len(times) - 2:
        raise UserError(f"--warmup {warmup}: leaves fewer than 2 of the {len(times)} "
                        "requests to measure")
    return Load(per_hour, times, source, warmup, seed, wait_s)


@dataclass(frozen=True)
class LoadRow:
    topology: str
    split: str
    replicas: int
    chips: int
    batch: int                     # B, requests per call at most
    seconds_per_call: float | None   # one call of B on one replica; None: not priced
    capacity_per_hour: float | None  # replicas x B every seconds_per_call
    utilisation: float | None
    p50_s: float | None            # latency: queue + service, seconds
    p90_s: float | None
    p99_s: float | None
    mean_wait_s: float | None      # queued before the call starts
    mean_batch: float | None       # requests per call
    usd_per_video: float | None    # chips x USD per chip-hour / videos served per hour
    stable: bool = False           # rate < capacity (False too where not simulated)
    why_not: str = ""              # why there are no figures


def _tables(rows: list[Row]) -> dict[tuple[str, str], dict[int, float]]:
    """(slice, split) -> {batch: seconds per call} from its priced rows."""
    out: dict[tuple[str, str], dict[int, float]] = {}
    for r in rows:
        if r.priced and r.latency_s is not None:
            out.setdefault((r.topology, r.split), {})[r.batch] = r.latency_s
    return out


def under_load(rows: list[Row], load: Load, prices: PriceTable) -> list[LoadRow]:
    """Each row's configuration serving `load` (module doc)."""
    tables = _tables(rows)
    return [_load_row(r, tables.get((r.topology, r.split), {}), load, prices) for r in rows]


def _load_row(r: Row, table: dict[int, float], load: Load, prices: PriceTable) -> LoadRow:
    base = dict(topology=r.topology, split=r.split, replicas=r.replicas, chips=r.chips,
                batch=r.batch)
    empty = dict(seconds_per_call=None, capacity_per_hour=None, utilisation=None, p50_s=None,
                 p90_s=None, p99_s=None, mean_wait_s=None, mean_batch=None,
                 usd_per_video=None)
    if not r.priced or r.latency_s is None:
        return LoadRow(**base, **empty, why_not=r.why_not or "not priced")
    policy = queue_sim.Policy(r.replicas, r.batch, load.wait_s)
    service = queue_sim.Service(table)
    missing = queue_sim.missing_sizes(policy, service)
    if missing:
        return LoadRow(**base, **empty, why_not=f"seconds per call at batch "
                       f"{', '.join(map(str, missing))} not priced: a batch of fewer than "
                       f"{r.batch} may run, and its time needs its own plan (--batch "
                       f"{','.join(map(str, range(1, r.batch + 1)))})")
    s = queue_sim.simulate(load.arrivals_s, policy, service, load.warmup)
    usd = prices.usd_per_chip_hour(r.topology.partition(":")[0])
    served = min(load.rate_per_hour, s.capacity_per_hour)
    return LoadRow(**base, seconds_per_call=r.latency_s, capacity_per_hour=s.capacity_per_hour,
                   utilisation=s.utilisation, p50_s=s.p50_s, p90_s=s.p90_s, p99_s=s.p99_s,
                   mean_wait_s=s.mean_wait_s, mean_batch=s.mean_batch,
                   usd_per_video=None if usd is None else r.chips * usd / served,
                   stable=s.capacity_per_hour > load.rate_per_hour)


def pick(rows: list[LoadRow], bound_s: float) -> Pick:
    """The stable row with p99 <= bound_s and the fewest USD per video (rows without a
    price after every priced one), ties to the lower p99 then fewer chips; and why, or why
    none (`Pick.row` None)."""
    ran = [r for r in rows if r.p99_s is not None]
    if not ran:
        return Pick(None, "no configuration was simulated: "
                    + (rows[0].why_not if rows else "no rows"))
    stable = [r for r in ran if r.stable]
    if not stable:
        most = max(ran, key=lambda r: r.capacity_per_hour)
        return Pick(None, f"every configuration is overloaded at this rate: the most "
                          f"capacity, {_label(most)}, serves {most.capacity_per_hour:,.1f} "
                          "videos per hour")
    meets = [r for r in stable if r.p99_s <= bound_s]
    if not meets:
        best = min(stable, key=lambda r: r.p99_s)
        return Pick(None, f"no configuration meets p99 <= {bound_s:g} s: the lowest p99, "
                          f"{_label(best)}, is {_s(best.p99_s)}")
    best = min(meets, key=_cost_order)
    return Pick(best, _why(best, meets, stable, bound_s))


def _cost_order(r: LoadRow) -> tuple:
    return (r.usd_per_video is None, r.usd_per_video or 0.0, r.p99_s, r.chips)


def _why(best: LoadRow, meets: list[LoadRow], stable: list[LoadRow], bound_s: float) -> str:
    n = len(meets)
    what = ("the cheapest per video" if best.usd_per_video is not None
            else "the lowest p99 (none of them has a price)")
    text = (f"{_label(best)}: p99 {_s(best.p99_s)}, within {bound_s:g} s, "
            f"{best.utilisation:.0%} busy, {_usd(best)}: {what} of the {n} "
            f"configuration{'s' if n > 1 else ''} that meet it")
    ties = [r for r in meets if r is not best and r.usd_per_video == best.usd_per_video
            and r.usd_per_video is not None]
    if ties:
        text += (f"; {len(ties)} more cost the same (the same slice: its chips are paid "
                 "for, busy or idle), this one has the lowest p99")
    over = [r for r in stable if r not in meets and _cost_order(r) < _cost_order(best)]
    if over:
        o = min(over, key=_cost_order)
        text += f"; {_label(o)} would cost {_usd(o)} but its p99 is {_s(o.p99_s)}"
    return text


def _label(r: LoadRow) -> str:
    return f"{r.split} on {r.topology} at batch {r.batch}"


def _s(seconds: float) -> str:
    return f"{seconds:,.0f} s" if seconds >= 1000 else f"{seconds:.3g} s"


def _usd(r: LoadRow) -> str:
    return "no price" if r.usd_per_video is None else f"{r.usd_per_video:.3g} USD per video"


def as_json(load: Load, rows: list[LoadRow], chosen: Pick | None,
            bound_s: float | None) -> dict:
    """`serve --json`'s "load": the stream, the policy, every row and the pick."""
    from dataclasses import asdict

    return {"rate_per_hour": load.rate_per_hour, "arrivals": load.source,
            "requests": load.requests, "warmup": load.warmup,
            "seed": load.seed if load.source == "poisson" else None,
            "batch_wait_s": load.wait_s, "rows": [asdict(r) for r in rows],
            "pick": None if chosen is None else {
                "p99_bound_s": bound_s, "row": None if chosen.row is None
                else asdict(chosen.row), "why": chosen.why},
            "note": "a discrete-event simulation of the queue on the simulated seconds per "
                    "call; nothing is measured"}

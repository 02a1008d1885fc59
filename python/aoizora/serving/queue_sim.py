"""A discrete-event simulation of requests queueing for the replicas of one split: who waits,
for how long, and how busy the replicas are.

    policy = Policy(replicas=c, max_batch=B, wait_s=T)
    service = Service({1: 40.0, 2: 55.0})          seconds per call at each batch size
    service = Service({1: 40.0}, exponential=True, seed=7)   test mode (M/M/c)
    missing_sizes(policy, service) -> [b]          batch sizes the policy may form that the
                                                   table does not price (simulate refuses)
    served = run(arrivals, policy, service) -> Served: each request's start and finish, each
                                                   call's start, end and size
    stats = simulate(arrivals, policy, service, warmup) -> QueueStats (fields below)

The queue (docs/serving.md, "Under load"): one first-come-first-served queue feeds `c`
identical replicas. A batch forms at the head of the queue, one at a time: when a replica is
free it takes the queued requests, up to B, as soon as B are queued or the oldest has waited
T seconds, whichever comes first (T = 0: at once, whatever is queued); a replica that comes
free while the batch waits for T takes the next batch. All the requests of a call finish
together, after seconds_per_call[b] for a call of b (the priced plan's figure for batch b;
nothing is scaled or guessed: a size the table lacks is refused). In the test mode a call's
time is drawn from the exponential distribution of that mean (numpy PCG64, `seed`).

Measured: the requests after the first `warmup` (in arrival order; the warm-up is served,
so the measured ones queue behind it). The measured window runs from the first measured
request's arrival to the last measured request's finish; utilisation and throughput are
over it.

The events are arrivals (known ahead: the arrival array), the timer of the forming batch,
and call completions (a heap of when each replica comes free); batches start in the order
they form, so one pass in arrival order is the whole simulation. Deterministic for given
inputs. Units: seconds; rates per hour.
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass

import numpy as np


class NotPriced(Exception):
    """The policy can form a batch whose seconds per call the service table lacks."""


@dataclass(frozen=True)
class Policy:
    replicas: int                  # c, identical replicas of one plan, >= 1
    max_batch: int = 1             # B, requests per call at most, >= 1
    wait_s: float = 0.0            # T, the longest the oldest queued request waits for a
                                   # batch to fill, seconds; 0: serve what is queued at once


@dataclass(frozen=True)
class Service:
    seconds_per_call: dict[int, float]   # batch size b -> seconds one call of b takes
    exponential: bool = False            # test mode: each call Exp(mean seconds_per_call[b])
    seed: int = 0                        # the test mode's draws


@dataclass(frozen=True)
class Served:
    start_s: np.ndarray            # per request: when its call started
    finish_s: np.ndarray           # per request: when its call ended
    calls: np.ndarray              # per call: (start_s, end_s, size), in start order


@dataclass(frozen=True)
class QueueStats:
    requests: int                  # requests measured (after the warm-up)
    warmup: int                    # requests served first and not measured
    offered_per_hour: float        # the arrivals' rate: (n - 1) gaps over their span
    capacity_per_hour: float       # c x B every seconds_per_call[B]: full batches, no idle
    throughput_per_hour: float     # requests finished in the measured window, per hour
    utilisation: float             # busy replica-seconds / (c x the measured window)
    p50_s: float                   # latency (queue + service), percentiles (numpy, linear)
    p90_s: float
    p99_s: float
    mean_latency_s: float
    mean_wait_s: float             # time queued before the call starts
    mean_batch: float              # requests per call, over calls holding measured requests
    stable: bool                   # offered < capacity; else the queue grows without bound
                                   # and the percentiles grow with the number of requests


def missing_sizes(policy: Policy, service: Service) -> list[int]:
    """The batch sizes 1..B a call may have whose time the table does not give."""
    return [b for b in range(1, policy.max_batch + 1) if b not in service.seconds_per_call]


def _check(policy: Policy, service: Service) -> None:
    if policy.replicas < 1 or policy.max_batch < 1:
        raise ValueError(f"replicas {policy.replicas} and max_batch {policy.max_batch} must "
                         "be >= 1")
    if not (math.isfinite(policy.wait_s) and policy.wait_s >= 0):
        raise ValueError(f"wait_s {policy.wait_s} must be finite and >= 0")
    missing = missing_sizes(policy, service)
    if missing:
        have = ", ".join(map(str, sorted(service.seconds_per_call)))
        raise NotPriced(f"seconds per call at batch {', '.join(map(str, missing))} not "
                        f"priced (the table has batch {have})")
    bad = [b for b, s in service.seconds_per_call.items() if not (s > 0 and math.isfinite(s))]
    if bad:
        raise ValueError(f"seconds per call at batch {bad[0]} must be finite and > 0")


def run(arrivals, policy: Policy, service: Service) -> Served:
    """Every request of `arrivals` (seconds, non-decreasing) served under `policy` (module
    doc). Raises NotPriced, or ValueError for a policy or table out of range."""
    _check(policy, service)
    a = [float(t) for t in arrivals]
    n, big, wait = len(a), policy.max_batch, policy.wait_s
    rng = np.random.default_rng(service.seed) if service.exponential else None
    free = [a[0] if a else 0.0] * policy.replicas          # when each replica is free
    start, finish, calls = np.empty(n), np.empty(n), []
    i = 0
    while i < n:
        f = heapq.heappop(free)
        full_at = a[i + big - 1] if i + big - 1 < n else math.inf
        t = max(f, min(a[i] + wait, full_at))               # the batch's start
        j = bisect.bisect_right(a, t, i, min(i + big, n))   # queued by then, up to B
        mean = service.seconds_per_call[j - i]
        s = rng.exponential(mean) if rng is not None else mean
        start[i:j], finish[i:j] = t, t + s
        calls.append((t, t + s, j - i))
        heapq.heappush(free, t + s)
        i = j
    return Served(start, finish, np.asarray(calls, dtype=np.float64).reshape(-1, 3))


def simulate(arrivals, policy: Policy, service: Service, warmup: int) -> QueueStats:
    """run(), then the figures of the requests after the first `warmup` (module doc)."""
    a = np.asarray(arrivals, dtype=np.float64)
    if not 0 <= warmup < len(a) or len(a) < 2:
        raise ValueError(f"warmup {warmup} must leave requests to measure of {len(a)} "
                         "(at least 2 arrivals)")
    served = run(a, policy, service)
    return stats(a, served, warmup, policy, service)


def stats(a: np.ndarray, served: Served, warmup: int, policy: Policy,
          service: Service) -> QueueStats:
    """The figures of requests warmup.. of `served` (module doc)."""
    latency = served.finish_s[warmup:] - a[warmup:]
    wait = served.start_s[warmup:] - a[warmup:]
    w0, w1 = float(a[warmup]), float(served.finish_s[warmup:].max())
    window = max(w1 - w0, 1e-300)
    calls = served.calls
    busy = np.clip(np.minimum(calls[:, 1], w1) - np.maximum(calls[:, 0], w0), 0.0, None)
    done = int(np.count_nonzero((served.finish_s >= w0) & (served.finish_s <= w1)))
    measured_calls = calls[calls[:, 0] >= served.start_s[warmup]]
    span = float(a[-1] - a[0])
    offered = (len(a) - 1) * 3600.0 / span if span > 0 else math.inf
    big = policy.max_batch
    capacity = policy.replicas * big * 3600.0 / service.seconds_per_call[big]
    p50, p90, p99 = np.percentile(latency, [50, 90, 99])
    return QueueStats(
        requests=len(latency), warmup=warmup, offered_per_hour=offered,
        capacity_per_hour=capacity, throughput_per_hour=done * 3600.0 / window,
        utilisation=float(busy.sum()) / (policy.replicas * window),
        p50_s=float(p50), p90_s=float(p90), p99_s=float(p99),
        mean_latency_s=float(latency.mean()), mean_wait_s=float(wait.mean()),
        mean_batch=float(measured_calls[:, 2].mean()), stable=offered < capacity)

"""The queue simulator (serving/queue_sim.py) and its arrivals (serving/arrivals.py): the
mean wait against M/D/1's (Pollaczek-Khinchine) and M/M/c's (Erlang C) closed forms within
3 %, M/M/1's latency percentiles, a hand-worked trace under the batching policy, the
warm-up left out, sizes not priced refused, and the arrivals' parsing and determinism."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from aoizora.errors import UserError
from aoizora.serving import arrivals
from aoizora.serving.queue_sim import NotPriced, Policy, Service, run, simulate


def erlang_c(c: int, a: float) -> float:
    """The probability that an arrival waits in M/M/c with offered load a = lambda / mu."""
    below = sum(a ** k / math.factorial(k) for k in range(c))
    top = a ** c / math.factorial(c) * c / (c - a)
    return top / (below + top)


# ---- closed forms ---------------------------------------------------------------------------
# Seeds are fixed; across seeds the simulated mean wait spreads by about 1.3 % (1 sigma)
# at these sizes, so 3 % is a real check, not a loose one.

def test_md1_mean_wait_is_pollaczek_khinchines():
    s, rho = 2.0, 0.5                         # 2 s a call, one request a call
    lam = rho / s                             # per second
    a = arrivals.poisson(lam * 3600, 200_000, seed=1)
    got = simulate(a, Policy(replicas=1), Service({1: s}), warmup=5_000)
    wq = lam * s * s / (2 * (1 - rho))        # P-K with a deterministic service: 1 s
    assert got.mean_wait_s == pytest.approx(wq, rel=0.03)
    assert got.mean_latency_s == pytest.approx(wq + s, rel=0.03)
    assert got.utilisation == pytest.approx(rho, rel=0.03)
    assert got.capacity_per_hour == pytest.approx(1800.0) and got.stable


def test_mmc_mean_wait_is_erlang_cs():
    c, mean_s, rho = 2, 1.0, 0.5
    lam = rho * c / mean_s
    a = arrivals.poisson(lam * 3600, 300_000, seed=2)
    got = simulate(a, Policy(replicas=c), Service({1: mean_s}, exponential=True, seed=3),
                   warmup=5_000)
    wq = erlang_c(c, lam * mean_s) / (c / mean_s - lam)   # 1/3 s
    assert got.mean_wait_s == pytest.approx(wq, rel=0.03)
    assert got.utilisation == pytest.approx(rho, rel=0.03)


def test_mm1_latency_percentiles_are_the_exponentials():
    # M/M/1's time in the system is exponential of rate mu - lambda: p = -ln(1 - q)/(mu - l).
    mu, lam = 1.0, 0.6
    a = arrivals.poisson(lam * 3600, 200_000, seed=4)
    got = simulate(a, Policy(1), Service({1: 1 / mu}, exponential=True, seed=5), 5_000)
    assert got.p50_s == pytest.approx(math.log(2) / (mu - lam), rel=0.03)
    assert got.p90_s == pytest.approx(math.log(10) / (mu - lam), rel=0.03)
    assert got.p99_s == pytest.approx(math.log(100) / (mu - lam), rel=0.03)


def test_deterministic_service_has_no_exponential_tail():
    """The test mode is a mode: the default service is the table's figure, every call."""
    a = arrivals.poisson(1800, 20_000, seed=6)
    fixed = run(a, Policy(1), Service({1: 1.0}))
    assert np.allclose(fixed.calls[:, 1] - fixed.calls[:, 0], 1.0, rtol=0, atol=1e-9)
    drawn = run(a, Policy(1), Service({1: 1.0}, exponential=True, seed=6))
    assert (drawn.calls[:, 1] - drawn.calls[:, 0]).std() == pytest.approx(1.0, rel=0.05)


# ---- the batching policy, by hand -------------------------------------------------------

TRACE = [0.0, 0.5, 3.0, 3.2, 3.3]
TABLE = Service({1: 1.0, 2: 1.5})


def test_a_batch_starts_when_full_or_when_its_oldest_has_waited_t():
    got = run(TRACE, Policy(replicas=1, max_batch=2, wait_s=1.0), TABLE)
    # [0, 0.5] starts full at 0.5; [3, 3.2] full at 3.2; 3.3 alone: its timer ends at 4.3,
    # but the replica is busy until 4.7.
    assert got.calls.tolist() == [[0.5, 2.0, 2], [3.2, 4.7, 2], [4.7, 5.7, 1]]
    assert (got.finish_s - TRACE).tolist() == pytest.approx([2.0, 1.5, 1.7, 1.5, 2.4])


def test_without_a_wait_a_free_replica_serves_what_is_queued():
    got = run(TRACE, Policy(replicas=1, max_batch=2, wait_s=0.0), TABLE)
    assert got.calls.tolist() == [[0.0, 1.0, 1], [1.0, 2.0, 1], [3.0, 4.0, 1],
                                  [4.0, 5.5, 2]]


def test_a_lone_request_waits_out_the_timer_for_company():
    got = simulate([0.0, 100.0, 200.0], Policy(1, max_batch=2, wait_s=4.0), TABLE, 0)
    assert got.p50_s == pytest.approx(5.0) and got.mean_wait_s == pytest.approx(4.0)
    assert got.mean_batch == 1.0


def test_batching_serves_a_rate_one_at_a_time_cannot():
    """At 1.5 requests a second, one replica serving one at a time (1 s a call) falls
    behind; in batches of up to 4 (1.6 s a call of 4) it keeps up and its tail stays short."""
    a = arrivals.poisson(1.5 * 3600, 20_000, seed=8)
    table = Service({1: 1.0, 2: 1.2, 3: 1.4, 4: 1.6})
    one = simulate(a, Policy(1, max_batch=1), table, 2_000)
    four = simulate(a, Policy(1, max_batch=4), table, 2_000)
    assert not one.stable and one.p99_s > 1_000           # the queue only grows
    assert four.stable and four.capacity_per_hour == pytest.approx(9000.0)
    assert four.p99_s < 10 and four.mean_batch > 1.5
    assert one.throughput_per_hour == pytest.approx(3600.0, rel=0.01)   # its capacity


def test_replicas_share_one_queue():
    # Two requests at once, two replicas: neither waits. One replica: the second waits 1 s.
    assert simulate([0.0, 0.0, 10.0], Policy(2), Service({1: 1.0}), 0).mean_wait_s == 0.0
    one = simulate([0.0, 0.0, 10.0], Policy(1), Service({1: 1.0}), 0)
    assert one.mean_wait_s == pytest.approx(1 / 3)


def test_the_warm_up_is_served_but_not_measured():
    """A burst of 50 at once, then one request every 10 s: the burst queues for up to 50 s,
    the rest never wait. Leaving out the first 50 leaves only the 2 s calls."""
    a = [0.0] * 50 + [200.0 + 10.0 * k for k in range(200)]
    steady = simulate(a, Policy(1), Service({1: 2.0}), warmup=50)
    assert steady.p99_s == pytest.approx(2.0) and steady.requests == 200
    assert steady.utilisation == pytest.approx(0.2, rel=0.01)
    burst = simulate(a, Policy(1), Service({1: 2.0}), warmup=0)
    assert burst.p99_s > 80


def test_a_batch_size_without_seconds_per_call_is_refused():
    with pytest.raises(NotPriced, match=r"batch 1, 3 not priced \(the table has batch 2, 4\)"):
        run([0.0, 1.0], Policy(1, max_batch=4), Service({2: 1.0, 4: 2.0}))


# ---- arrivals -----------------------------------------------------------------------------

@pytest.mark.parametrize("text, per_hour", [("30", 30.0), ("30/h", 30.0), ("0.5/min", 30.0),
                                            ("2/s", 7200.0)])
def test_a_rate_reads_in_requests_per_hour(text, per_hour):
    assert arrivals.rate_per_hour(text) == per_hour


@pytest.mark.parametrize("text, message", [
    ("0", "must be a number > 0"), ("-3/h", "must be a number > 0"),
    ("nan", "must be a number > 0"), ("many", "expected a number of requests per hour"),
    ("3/day", "the unit is /h, /min or /s")])
def test_a_bad_rate_is_one_line(text, message):
    with pytest.raises(UserError, match=message) as e:
        arrivals.rate_per_hour(text)
    assert str(e.value).startswith(f"--rate {text!r}") and "\n" not in str(e.value)


def test_poisson_arrivals_are_the_same_in_another_process():
    code = ("from aoizora.serving import arrivals; "
            "print(repr(arrivals.poisson(30.0, 1000, 7).tolist()[-3:]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == repr(arrivals.poisson(30.0, 1000, 7).tolist()[-3:])
    gaps = np.diff(arrivals.poisson(30.0, 100_000, 7))
    assert gaps.mean() == pytest.approx(120.0, rel=0.01)       # 3600 / 30 s


def test_a_trace_skips_its_header_and_reads_its_first_column(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,prompt\n0.0,a cat\n1.5,b\n\n# a comment\n4,c\n")
    assert arrivals.read_trace(str(path)).tolist() == [0.0, 1.5, 4.0]
    assert arrivals.trace_rate_per_hour(np.array([0.0, 1.5, 4.0])) == pytest.approx(1800.0)


@pytest.mark.parametrize("text, message", [
    ("0\n2\n1\n", "line 3: 1 s comes before the line above (2 s)"),
    ("0\n1\nsoon\n", "line 3: 'soon' is not a time in seconds"),
    ("0\n-1\n", "line 2: -1.0 is not a time in seconds"),
    ("t\n5\n", "1 arrival time(s); a trace needs at least two"),
])
def test_a_bad_trace_is_one_line_naming_the_line(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(UserError) as e:
        arrivals.read_trace(str(path))
    assert message in str(e.value) and str(e.value).startswith(f"--arrivals {path}: ")

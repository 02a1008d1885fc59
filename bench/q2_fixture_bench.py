"""Q2 evaluations per second on a small real compiled program (the layers_scan fixture,
compiled for 16 devices), for random placements on v5e:4x4 and, where the build has
TensorCore devices, on tpu7x:2x2x2 (8 chips, 16 devices). With --baseline PYROOT the same
runs alternate with another build's _core (e.g. the code before a change), in one run, and
the table gives each one's median and the ratio.

    PYTHONPATH=build/dev/pyroot:python .venv/bin/python bench/q2_fixture_bench.py \\
        [--baseline /tmp/oldbuild/pyroot] [--rounds 7] [--evals 20000]

Wall times are measured here, single-threaded, Python->C++ conversion included.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "tests", "data", "hlo", "layers_scan.v5e_4x4.hlo")
SLICES = ("v5e:4x4", "tpu7x:2x2x2")

# One round in a fresh interpreter, so two builds' _core never share a process.
ROUND = r"""
import json, random, sys, time
from aoizora import _core
text = open(sys.argv[1]).read()
graph = _core.load_hlo(text)
out = {}
for name in sys.argv[3].split(","):
    try:
        topo = _core.make_topology(name)
    except _core.CoreError:
        continue
    n = getattr(topo, "num_devices", topo.num_chips)
    if n != graph.num_partitions:
        continue
    rng = random.Random(7)
    places = [rng.sample(range(n), n) for _ in range(int(sys.argv[2]))]
    q2 = _core.Q2Evaluator(graph, topo)
    t = time.perf_counter()
    q2.seconds_many(places)
    out[name] = len(places) / (time.perf_counter() - t)
print(json.dumps(out))
"""


def one_round(pyroot: str, evals: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": f"{pyroot}:{os.path.join(HERE, '..', 'python')}"}
    out = subprocess.run([sys.executable, "-c", ROUND, FIXTURE, str(evals), ",".join(SLICES)],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pyroot", default=os.path.join(HERE, "..", "build", "dev", "pyroot"))
    ap.add_argument("--baseline", help="another build's pyroot to time alongside")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--evals", type=int, default=20000)
    args = ap.parse_args()
    builds = {"this": args.pyroot}
    if args.baseline:
        builds["baseline"] = args.baseline
    rates: dict[str, dict[str, list[float]]] = {b: {} for b in builds}
    for _ in range(args.rounds):
        for b, root in builds.items():  # alternating, so load drifts hit both alike
            for name, r in one_round(root, args.evals).items():
                rates[b].setdefault(name, []).append(r)
    print(f"Q2 evaluations / s, median of {args.rounds} rounds of {args.evals} "
          "(layers_scan fixture, random placements)")
    print(f"{'slice':14s} " + " ".join(f"{b:>12s}" for b in builds) +
          ("   this / baseline" if args.baseline else ""))
    for name in SLICES:
        meds = {b: statistics.median(rates[b][name]) for b in builds if name in rates[b]}
        if not meds:
            continue
        row = f"{name:14s} " + " ".join(f"{meds[b]:12.0f}" if b in meds else f"{'-':>12s}"
                                        for b in builds)
        if args.baseline and len(meds) == 2:
            row += f"   {meds['this'] / meds['baseline']:.3f}"
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Parse throughput and peak memory of the C++ HLO front end against XLA's own HLO text parser
(`jaxlib._hlo.hlo_module_from_text`, the parser behind `HloModule` in jaxlib), on real
compiled HLO: a many-layer sharded transformer, unrolled (a Python loop, not scan), compiled
for v5e:2x4 through libtpu (deviceless). Prints a table and the speed ratio.

    PYTHONPATH=build/hlo/pyroot:python .venv/bin/python bench/hlo_parse_bench.py [--layers 400]
        [--baseline OTHER_PYROOT --rounds 5] [--no-xla]

Each parser runs in its own subprocess so that its peak RSS (ru_maxrss) over the process's
baseline after the text is in memory is the parser's own peak, not the other's. The C++ row
parses and builds the whole CollectiveGraph (what `aoizora` uses), from the file
(`load_hlo_file`, so its own copy of the text is counted in its peak); XLA's row only parses.

`--baseline DIR` adds a row for the `_core` under DIR (another build's pyroot: the code before
a change), and `--rounds N` runs every row N times, in turn, so that load on a shared machine
falls on all of them alike; medians and bests are over all repetitions of all rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join("/tmp", "aoizora_hlo_bench")


def make_hlo(layers: int) -> str:
    path = os.path.join(CACHE, f"dit_unrolled_{layers}.v5e_2x4.hlo")
    if os.path.exists(path):
        return path
    os.makedirs(CACHE, exist_ok=True)
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    from aoizora.compile import jaxenv  # noqa: F401

    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    from aoizora.compile import tpu

    mesh = Mesh(np.array(tpu.compile_only_devices("v5e:2x4")).reshape(2, 4), ("data", "model"))
    d, f, heads = 512, 2048, 8

    def block(x, w):
        wq, wk, wv, wo, w1, w2 = w
        h = x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6)
        q, k, v = (h @ wq, h @ wk, h @ wv)
        b, s, _ = q.shape
        q, k, v = (t.reshape(b, s, heads, -1) for t in (q, k, v))
        a = jax.nn.softmax(jnp.einsum("bshd,bthd->bhst", q, k) / 8.0, axis=-1)
        o = jnp.einsum("bhst,bthd->bshd", a, v).reshape(b, s, -1) @ wo
        x = x + o
        return x + jax.nn.gelu((x / jnp.sqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6)) @ w1) @ w2

    def model(x, ws):
        for w in ws:
            x = block(x, w)
        return x

    spec = lambda shape, p: jax.ShapeDtypeStruct(shape, jnp.bfloat16,  # noqa: E731
                                                 sharding=NamedSharding(mesh, p))
    layer = (spec((d, d), P(None, "model")), spec((d, d), P(None, "model")),
             spec((d, d), P(None, "model")), spec((d, d), P("model", None)),
             spec((d, f), P(None, "model")), spec((f, d), P("model", None)))
    args = (spec((2, 256, d), P("data", None, None)), [layer] * layers)
    t0 = time.perf_counter()
    text = jax.jit(model).lower(*args).compile().as_text()
    print(f"compiled {layers} unrolled layers for v5e:2x4 in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr)
    with open(path + ".tmp", "w") as fh:
        fh.write(text)
    os.replace(path + ".tmp", path)
    return path


WORKER = r"""
import json, resource, sys, time
which, path, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
if which == "xla":
    from jaxlib import _hlo
    text = open(path).read()
    parse = lambda: _hlo.hlo_module_from_text(text)
else:
    from aoizora import _core
    parse = lambda: _core.load_hlo_file(path)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
times = []
for _ in range(reps):
    t0 = time.perf_counter(); out = parse(); times.append(time.perf_counter() - t0); del out
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"times": times, "peak_extra": peak - base}))
"""


def run_worker(which: str, path: str, reps: int, pyroot: str | None = None) -> dict:
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if pyroot:  # that build's _core first, this checkout's Python package after it
        env["PYTHONPATH"] = os.pathsep.join([pyroot, os.path.join(HERE, "..", "python")])
    out = subprocess.run([sys.executable, "-c", WORKER, which, path, str(reps)], env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_rows(rows: dict, path: str, reps: int, rounds: int) -> dict:
    """rows: label -> (worker, pyroot). Each round runs every row once, in turn."""
    times: dict = {label: [] for label in rows}
    peak: dict = {label: 0 for label in rows}
    for _ in range(rounds):
        for label, (which, pyroot) in rows.items():
            r = run_worker(which, path, reps, pyroot)
            times[label] += r["times"]
            peak[label] = max(peak[label], r["peak_extra"])
    out = {}
    for label, t in times.items():
        t.sort()
        out[label] = {"best_s": t[0], "median_s": t[len(t) // 2], "peak_extra": peak[label]}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=400)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--hlo", help="use this HLO file instead of compiling one")
    ap.add_argument("--baseline", help="pyroot of another build of _core to compare with")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--no-xla", action="store_true", help="leave XLA's parser out")
    args = ap.parse_args()
    path = args.hlo or make_hlo(args.layers)
    size = os.path.getsize(path)
    ours = "aoizora._core.load_hlo_file (C++)"
    xla = "jaxlib._hlo.hlo_module_from_text"
    spec = {ours: ("aoizora", None)}
    if args.baseline:
        spec["  same, baseline build"] = ("aoizora", os.path.abspath(args.baseline))
    if not args.no_xla:
        spec[xla] = ("xla", None)
    rows = run_rows(spec, path, args.reps, args.rounds)
    mb = size / 1e6
    print(f"HLO: {path} ({mb:.1f} MB, {sum(1 for _ in open(path))} lines); "
          f"{args.rounds} round(s) of {args.reps} repetitions")
    print(f"{'parser':<34} {'best s':>8} {'median s':>9} {'MB/s':>8} {'peak extra RSS':>15} {'x file':>7}")
    for label, r in rows.items():
        print(f"{label:<34} {r['best_s']:>8.3f} {r['median_s']:>9.3f} {mb / r['median_s']:>8.1f} "
              f"{r['peak_extra'] / 1e6:>12.1f} MB {r['peak_extra'] / size:>7.2f}")
    if xla in rows:
        print(f"speed ratio (XLA time / aoizora time): {rows[xla]['best_s'] / rows[ours]['best_s']:.1f}x")


if __name__ == "__main__":
    main()

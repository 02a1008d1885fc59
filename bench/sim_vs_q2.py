"""How well Q2 ranks placements, judged by the flow-level simulator: for each program, the
placements rank_placements returns (Q2's candidates, best first) plus JAX's default are
simulated, and the table gives Spearman's rho between Q2 and simulated step time, where
Q2's pick lands in the simulator's order, and the simulated gain over the default placement
of Q2's pick and of the simulator's own best.

    PYTHONPATH=build/sim/pyroot:python .venv/bin/python bench/sim_vs_q2.py [--max 40]
        [--wan ag16w,dp2-usp4x2]   # also Wan 2.1 14B 720p/81f forwards (sim_bench's cache)

All latencies are simulated on the v5e model (nothing here is measured but wall time).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data", "hlo")


def spearman(a, b) -> float:
    from scipy.stats import spearmanr

    if len(set(a)) < 2 or len(set(b)) < 2:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def programs(wan: str | None):
    with open(os.path.join(DATA, "MANIFEST.json")) as f:
        manifest = json.load(f)
    for name, entry in sorted(manifest.items()):
        if ".v5e_" not in name:
            continue
        topo = "v5e:2x4" if "2x4" in name else "v5e:4x4"
        yield name, os.path.join(DATA, name), topo, list(entry["mesh"].values())
    if wan:
        sys.path.insert(0, HERE)
        from sim_bench import compiled_hlo

        for cand in wan.split(","):
            path, mesh = compiled_hlo(cand, False)
            yield f"wan14b 720p81 {cand}", path, "v5e:4x4", mesh


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", type=int, default=40, help="placements per program")
    ap.add_argument("--wan", nargs="?", const="ag16w", default=None, metavar="CANDIDATES",
                    help="also Wan 2.1 14B forwards of these candidates (default ag16w)")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    from aoizora import _core

    head = (f"{'program':<28}{'mesh':>6}{'placements':>11}{'rho':>7}{'Q2 pick':>9}"
            f"{'pick vs default':>17}{'sim best vs default':>21}{'wall s':>8}")
    print(head)
    print("-" * len(head))
    for name, path, topo_name, mesh in programs(args.wan):
        t0 = time.perf_counter()
        topo = _core.make_topology(topo_name)
        graph = _core.load_hlo_file(path)
        ranking = _core.rank_placements(graph, topo, mesh, search_starts=0)
        cands = [(r.name, list(r.device_of), r.q2) for r in ranking.ranked[: args.max]]
        default = ranking.default
        if default is not None and all(c[1] != list(default.device_of) for c in cands):
            cands.append((default.name, list(default.device_of), default.q2))
        sims = [_core.simulate(graph, topo, c[1]).step_seconds for c in cands]
        q2s = [c[2] for c in cands]
        rho = spearman(q2s, sims)
        # ranked[0] is Q2's pick; ties (within 1e-6) share the better rank.
        pick_rank = 1 + sum(1 for x in sims if x < sims[0] * (1 - 1e-6))
        d_sim = (_core.simulate(graph, topo, list(default.device_of)).step_seconds
                 if default is not None else float("nan"))
        gain = lambda s: d_sim / s if s > 0 else float("nan")  # noqa: E731
        print(f"{name:<28}{'x'.join(map(str, mesh)):>6}{len(cands):>11}{rho:>7.3f}"
              f"{pick_rank:>6}/{len(cands):<3}{gain(sims[0]):>16.3f}x"
              f"{gain(min(sims)):>20.3f}x{time.perf_counter() - t0:>8.2f}")
    print("rho: Spearman between Q2 and simulated step over the placements (nan: all equal);")
    print("Q2 pick: rank of Q2's best among them by simulated step (ties share a rank); "
          "gains are simulated.")


if __name__ == "__main__":
    main()

"""Compiles the whole programs of calibration/published.json that name a candidate, for the
TPU target of their slice (libtpu compiles without a TPU), and writes each compiled HLO
beside this file (<id>.hlo.txt.gz), the file `aoizora calibrate` and bench/fidelity.py
simulate. Run after a change to the models, the kernels or the lowering:

    PYTHONPATH=build/dev/pyroot:python .venv/bin/python calibration/programs/compile.py [ID ...]
"""

from __future__ import annotations

import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from aoizora import jaxenv  # noqa: E402,F401
from aoizora import _core, compiler, kernels, strategies, validate  # noqa: E402
from aoizora.cache import Cache  # noqa: E402


def compile_program(prog: dict) -> str:
    """The compiled HLO text of a program entry ("model", "video", "frames", "topology",
    "candidate", optional "blocks" [q, kv, kv_compute]; absent: the searched blocks)."""
    cfg, wl = validate.workload(prog["model"], prog["video"], prog["frames"])
    n = _core.make_topology(prog["topology"]).num_devices
    by = {c.name: c for c in strategies.enumerate_candidates(cfg, wl, n)}
    if prog["candidate"] not in by:
        raise SystemExit(f"{prog['id']}: no candidate {prog['candidate']!r} on {prog['topology']}")
    blocks = tuple(prog["blocks"]) if prog.get("blocks") else None
    cand = kernels.with_kernel(by[prog["candidate"]], cfg, wl, "tpu", prog["topology"],
                               blocks=blocks)
    [out] = compiler.run_jobs([compiler.Job("compile", cand, cfg, wl, prog["topology"])],
                              cache=Cache())
    if not out.ok:
        raise SystemExit(f"{prog['id']}: {cand.name} did not compile: {out.error}")
    return out.text


def main() -> None:
    with open(os.path.join(HERE, "..", "published.json"), encoding="utf-8") as f:
        programs = [p for p in json.load(f)["programs"] if p.get("candidate")]
    wanted = set(sys.argv[1:])
    for prog in programs:
        if wanted and prog["id"] not in wanted:
            continue
        path = os.path.join(HERE, prog["id"] + ".hlo.txt.gz")
        text = compile_program(prog)
        with gzip.open(path + ".tmp", "wt", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
        print(f"{prog['id']}: {len(text) / 1e6:.1f} MB of HLO -> {os.path.relpath(path)}")


if __name__ == "__main__":
    main()

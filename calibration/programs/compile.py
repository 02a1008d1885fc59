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
from aoizora.recipe import compile_candidate  # noqa: E402


def main() -> None:
    with open(os.path.join(HERE, "..", "published.json"), encoding="utf-8") as f:
        programs = [p for p in json.load(f)["programs"] if p.get("candidate")]
    wanted = set(sys.argv[1:])
    for prog in programs:
        if wanted and prog["id"] not in wanted:
            continue
        path = os.path.join(HERE, prog["id"] + ".hlo.txt.gz")
        text = compile_candidate(prog["model"], prog["video"], prog["frames"], prog["topology"],
                                 prog["candidate"], prog.get("blocks"))
        with open(path + ".tmp", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
            f.write(text.encode("utf-8"))   # mtime 0: the same program, the same bytes
        os.replace(path + ".tmp", path)
        print(f"{prog['id']}: {len(text) / 1e6:.1f} MB of HLO -> {os.path.relpath(path)}")


if __name__ == "__main__":
    main()

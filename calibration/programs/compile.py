"""Compiles the whole programs of calibration/published.json that name a candidate, for the
TPU target of their slice (libtpu compiles without a TPU), and writes each compiled HLO
beside this file (the entry's "hlo", gzipped), the files `aoizora calibrate` and
bench/fidelity.py simulate. Run after a change to the models, the kernels or the lowering:

    .venv/bin/python calibration/programs/compile.py [ID ...]

Each program compiles in a child process of its own, under its entry's "libtpu_init_args"
when it has them (LIBTPU_INIT_ARGS exactly, set before libtpu loads: the flags the
published run had), else under aoizora's default (jaxenv). A whole video ("kind": "video")
also compiles the sharding each of its "stages" names, as the pipeline prices it
(pipeline.price_stage: the TPU analysis compile), and checks the entry's meshes and reshard
bytes against what the pipeline computes for the step's sharding on JAX's default order;
where they differ it prints both and exits 1 (the entry is data: fix it by hand).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PUBLISHED = os.path.join(HERE, "..", "published.json")


def _write(rel: str, text: str) -> None:
    path = os.path.join(HERE, "..", rel)
    with open(path + ".tmp", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(text.encode("utf-8"))   # mtime 0: the same program, the same bytes
    os.replace(path + ".tmp", path)
    print(f"{len(text) / 1e6:.1f} MB of HLO -> {os.path.relpath(path)}", flush=True)


def _stages(prog: dict) -> list[str]:
    """Compiles a video's stages; returns where the entry disagrees with the pipeline."""
    from aoizora import _core
    from aoizora.inputs import validate
    from aoizora.planning import strategies
    from aoizora.compile.cache import Cache
    from aoizora.pipeline import price, stage_specs
    from aoizora.planning.stage2 import Stage2

    model, workload = validate.workload(prog["model"], prog["video"], prog["frames"])
    stage2 = Stage2.for_topology(prog["topology"])
    n = stage2.num_devices
    options = {o.name: o for o in stage_specs.text_encoder_options(n) + stage_specs.vae_options(n)}
    configs = {"text_encoder": stage_specs.encoder_for(model), "vae_decode": stage_specs.vae_for(model)}
    cache, priced, wrong = Cache(), {}, []
    for entry in prog["stages"]:
        option = options[entry["sharding"]]
        [p] = price.price_stage(configs[entry["stage"]], workload, stage2, [option], cache=cache)
        if p.simulated_s is None:
            sys.exit(f"{prog['id']}: stage {entry['stage']} {option.name}: {p.error}")
        _write(entry["hlo"], cache.get(p.key))
        if entry["mesh"] != list(option.candidate.mesh_shape):
            wrong.append(f"stage {entry['stage']} mesh: file {entry['mesh']}, "
                         f"{option.name} {list(option.candidate.mesh_shape)}")
        priced[entry["stage"]] = p
    step = {c.name: c for c in strategies.enumerate_candidates(model, workload, n)}[prog["candidate"]]
    chips = _core.default_placement(stage2.topology, list(step.mesh_shape)).device_of
    placed = price.Placed(step, tuple(chips), f"transformer: {step.name} (JAX's default order)")
    got = {r.name: r.max_chip_bytes for r in price.reshards(
        model, workload, stage2, placed, priced["text_encoder"], priced["vae_decode"],
        configs["text_encoder"], configs["vae_decode"])}
    mine = {r["name"]: r["max_chip_bytes"] for r in prog.get("reshards", [])}
    if got != mine:
        wrong.append(f"reshards (most bytes one chip receives): file {mine}, pipeline {got}")
    return wrong


def compile_one(prog: dict) -> int:
    from aoizora.compile import jaxenv  # noqa: F401  (LIBTPU_INIT_ARGS is this process's by now)
    from aoizora.planning.recipe import compile_candidate

    print(f"{prog['id']}: LIBTPU_INIT_ARGS={os.environ.get('LIBTPU_INIT_ARGS', '')}", flush=True)
    _write(prog["hlo"], compile_candidate(prog["model"], prog["video"], prog["frames"],
                                          prog["topology"], prog["candidate"], prog.get("blocks")))
    wrong = _stages(prog) if prog.get("kind") == "video" else []
    for w in wrong:
        print(f"{prog['id']}: {w}", file=sys.stderr)
    return 1 if wrong else 0


def main(argv: list[str]) -> int:
    with open(PUBLISHED, encoding="utf-8") as f:
        programs = {p["id"]: p for p in json.load(f)["programs"] if p.get("candidate")}
    if argv[:1] == ["--one"]:
        return compile_one(programs[argv[1]])
    unknown = sorted(set(argv) - set(programs))
    if unknown:
        sys.exit(f"no program {unknown[0]!r} with a candidate in {PUBLISHED}")
    rc = 0
    for pid, prog in programs.items():
        if argv and pid not in argv:
            continue
        env = dict(os.environ)
        if "libtpu_init_args" in prog:
            env["LIBTPU_INIT_ARGS"] = prog["libtpu_init_args"]
        rc |= subprocess.run([sys.executable, os.path.abspath(__file__), "--one", pid],
                             env=env).returncode
    return rc


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
    sys.exit(main(sys.argv[1:]))

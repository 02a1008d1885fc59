"""Run MaxDiffusion's Wan generation with a plan's device order, without patching its files.

    LIBTPU_INIT_ARGS=... python -m aoizora.launch.maxdiffusion plan.maxdiffusion.yaml \\
        -- prompt="..." output_dir=/tmp/out       # more MaxDiffusion args, after --

Run it where MaxDiffusion is importable (its checkout's src/ on PYTHONPATH, or installed).
It replaces `maxdiffusion.max_utils.create_device_mesh`, which every Wan call site looks up
through `max_utils` (generate_wan.py, the Wan pipeline's VAE and transformer meshes), with
one that returns the plan's device array, then runs `maxdiffusion.generate_wan` as its own
`__main__` with the emitted config file and overrides, followed by your arguments (a key
you repeat wins: pyconfig keeps the last). The planned array is checked against the config
MaxDiffusion parsed: if your arguments change the ici_*_parallelism degrees, it stops.
"""

from __future__ import annotations

import math
import os
import runpy
import sys
from typing import Any

USAGE = "usage: python -m aoizora.launch.maxdiffusion PLAN.yaml [-- MAXDIFFUSION_ARGS...]"


class LaunchError(Exception):
    """A plan that cannot be launched here: one line for the user."""


def planned_devices(doc: dict[str, Any], devices):
    """The plan's devices as the (data, fsdp, context, tensor) array MaxDiffusion's
    create_device_mesh returns: devices.flat[i] is the device with id device_ids[i]."""
    import numpy as np

    order = doc["device_order"]
    ids, shape = [int(i) for i in order["device_ids"]], [int(n) for n in order["mesh_shape"]]
    by_id = {int(d.id): d for d in devices}
    missing = [i for i in ids if i not in by_id]
    if missing or len(ids) != math.prod(shape):
        raise LaunchError(f"the plan's device order does not fit these {len(by_id)} devices "
                          f"(missing ids {missing[:4]}): it was planned for another slice")
    grid = np.empty(len(ids), dtype=object)
    grid[:] = [by_id[i] for i in ids]
    return grid.reshape(shape)


def create_device_mesh_for(doc: dict[str, Any]):
    """A stand-in for max_utils.create_device_mesh(config, devices=None, logging=True) that
    returns the planned array, after checking the config asks for the planned degrees."""
    import jax

    shape = [int(n) for n in doc["device_order"]["mesh_shape"]]

    def create_device_mesh(config, devices=None, logging=True):
        asked = [int(getattr(config, f"ici_{a}_parallelism")) for a in
                 ("data", "fsdp", "context", "tensor")]
        if asked != shape:
            raise LaunchError(f"the config asks for ici parallelism {asked} (data, fsdp, "
                              f"context, tensor) but the plan's device order is for {shape}")
        grid = planned_devices(doc, jax.devices() if devices is None else devices)
        if logging:
            print(f"aoizora: the plan's device order for mesh {shape}: "
                  f"{[int(d.id) for d in grid.flat]}", file=sys.stderr)
        return grid

    return create_device_mesh


def install(doc: dict[str, Any]) -> None:
    """Replace maxdiffusion.max_utils.create_device_mesh with the plan's order."""
    from maxdiffusion import max_utils

    max_utils.create_device_mesh = create_device_mesh_for(doc)


def command_argv(doc: dict[str, Any], config_dir: str, extra: list[str]) -> list[str]:
    """generate_wan's argv: the script, the config file, the overrides as the plan wrote
    them for pyconfig (`maxdiffusion.args`), then `extra`."""
    config = os.path.basename(doc["maxdiffusion"]["config"])
    return ["generate_wan.py", os.path.join(config_dir, config),
            *doc["maxdiffusion"]["args"], *extra]


def _libtpu_env(doc: dict[str, Any]) -> None:
    """Add the plan's LIBTPU_INIT_ARGS flags the environment lacks (before jax loads)."""
    want = doc["maxdiffusion"].get("libtpu_init_args", "").split()
    have = os.environ.get("LIBTPU_INIT_ARGS", "").split()
    names = {f.split("=", 1)[0] for f in have}
    missing = [f for f in want if f.split("=", 1)[0] not in names]
    if missing:
        os.environ["LIBTPU_INIT_ARGS"] = " ".join(have + missing)
        print(f"aoizora: LIBTPU_INIT_ARGS += {' '.join(missing)} (the plan's compile flags)",
              file=sys.stderr)


def main(argv: list[str]) -> int:
    import yaml

    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    path, extra = argv[0], argv[1:]
    if extra and extra[0] == "--":
        extra = extra[1:]
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        if not isinstance(doc, dict) or "device_order" not in doc or "maxdiffusion" not in doc:
            raise LaunchError(f"{path}: not a plan emitted by `aoizora plan --emit maxdiffusion`")
        _libtpu_env(doc)
        try:
            import maxdiffusion
        except ImportError as e:
            raise LaunchError(f"MaxDiffusion is not importable here ({e}): run where its "
                              "checkout's src/ is on PYTHONPATH") from None
        install(doc)
        config_dir = os.path.join(os.path.dirname(maxdiffusion.__file__), "configs")
        sys.argv = command_argv(doc, config_dir, extra)
    except (OSError, yaml.YAMLError, LaunchError) as e:
        print(f"aoizora.launch.maxdiffusion: error: {e}", file=sys.stderr)
        return 2
    runpy.run_module("maxdiffusion.generate_wan", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Run MaxDiffusion's Wan generation with a plan's device order, without patching its files.

    LIBTPU_INIT_ARGS=... python -m aoizora.launch.maxdiffusion plan.maxdiffusion.yaml \\
        -- prompt="..." output_dir=/tmp/out       # more MaxDiffusion args, after --

Run it where MaxDiffusion is importable (its checkout's src/ on PYTHONPATH, or installed).
It replaces `maxdiffusion.max_utils.create_device_mesh`, which every Wan call site looks up
through `max_utils` (generate_wan.py, the Wan pipeline's VAE and transformer meshes), with
one that returns the plan's device array, then runs `maxdiffusion.generate_wan` as its own
`__main__` with the emitted config file and overrides, followed by your arguments (a key
you repeat wins: pyconfig keeps the last). The planned array is checked against the config
MaxDiffusion parsed: if your arguments change the ici_*_parallelism degrees, it stops, in
one line. MaxDiffusion 7cfb880's generate_wan reads `use_magcache`, `magcache_thresh`,
`magcache_K` and `retention_ratio` from every Wan config, and base_wan_1_3b.yml has none of
them (nor can they be
passed: pyconfig refuses a key its file lacks); the launcher adds each missing one, with
base_wan_14b.yml's value (MagCache off), after pyconfig has read the config, and says so.
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


# Keys generate_wan reads that a config may lack, with base_wan_14b.yml's values.
MISSING_KEY_DEFAULTS = {"use_magcache": False, "magcache_thresh": 0.12, "magcache_K": 2,
                        "retention_ratio": 0.2}


def with_missing_keys(initialize):
    """pyconfig.initialize, then each key of MISSING_KEY_DEFAULTS the config lacks added
    to pyconfig's parsed keys (said on stderr)."""
    from maxdiffusion import pyconfig

    def initialize_then_fill(argv, **kwargs):
        initialize(argv, **kwargs)
        keys = pyconfig._config.keys
        added = {k: v for k, v in MISSING_KEY_DEFAULTS.items() if k not in keys}
        keys.update(added)
        if added:
            print(f"aoizora: {os.path.basename(argv[1])} lacks {', '.join(added)}, which "
                  "generate_wan reads: set as in base_wan_14b.yml "
                  f"({', '.join(f'{k}={v}' for k, v in added.items())})", file=sys.stderr)

    return initialize_then_fill


def install(doc: dict[str, Any]) -> None:
    """Replace maxdiffusion.max_utils.create_device_mesh with the plan's order, and
    pyconfig.initialize with one that fills the keys generate_wan reads (module doc)."""
    from maxdiffusion import max_utils, pyconfig

    max_utils.create_device_mesh = create_device_mesh_for(doc)
    pyconfig.initialize = with_missing_keys(pyconfig.initialize)


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
    try:
        runpy.run_module("maxdiffusion.generate_wan", run_name="__main__", alter_sys=True)
    except LaunchError as e:  # raised from inside generate_wan, by the planned mesh
        print(f"aoizora.launch.maxdiffusion: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Regenerates the compiled-HLO fixtures in tests/data/hlo/ from aoizora.hardware.probes.

    .venv/bin/python tests/data/regen.py

Each probe is compiled for v5e:2x4 and v5e:4x4 (TPU, deviceless through libtpu) and for 8
CPU devices. MANIFEST.json records what XLA says about each (collective counts by kind,
cost_analysis flops), so tests can compare the C++ front end against XLA itself.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

from aoizora.compile import tpu
from aoizora.hardware import probes  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hlo")
TARGETS = {
    "v5e_2x4": lambda: tpu.compile_only_devices("v5e:2x4"),
    "v5e_4x4": lambda: tpu.compile_only_devices("v5e:4x4"),
    "cpu8": lambda: tpu.cpu_devices(8),
}


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    manifest = {}
    for target, devices in TARGETS.items():
        devs = devices()
        mesh = probes.mesh_2d(devs, len(devs))
        for probe in probes.PROBES:
            fn, args = probe.build(mesh)
            compiled = fn.lower(*args).compile()
            text = compiled.as_text()
            name = f"{probe.name}.{target}.hlo"
            tmp = os.path.join(OUT, name + ".tmp")
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, os.path.join(OUT, name))
            cost = compiled.cost_analysis() or {}
            if isinstance(cost, list):
                cost = cost[0] if cost else {}
            manifest[name] = {
                "probe": probe.name,
                "target": target,
                "mesh": dict(mesh.shape),
                "device_coords": [list(getattr(d, "coords", [d.id])) for d in mesh.devices.flat],
                "collectives": probes.count_collectives(text),
                "flops": cost.get("flops"),
            }
            print(f"{name}: {len(text)} chars, {manifest[name]['collectives']}")
    with open(os.path.join(OUT, "MANIFEST.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()

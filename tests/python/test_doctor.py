"""The foundation: the console entry point, the C++ core, and a real deviceless TPU compile."""

import subprocess
import sys

from aoizora.compile import tpu
from aoizora.hardware import probes


def test_core_module_imports():
    from aoizora import _core

    assert _core.__version__ == "0.1.0"
    assert issubclass(_core.CoreError, ValueError)


def test_v5e_2x4_compile_only_devices_have_the_physical_coords():
    devices = tpu.compile_only_devices("v5e:2x4")
    coords = sorted(tuple(d.coords) for d in devices)
    assert coords == sorted((x, y, 0) for x in range(2) for y in range(4))
    assert devices[0].device_kind == "TPU v5 lite"


def test_deviceless_tpu_compile_emits_async_collectives():
    mesh = probes.mesh_2d(tpu.compile_only_devices("v5e:2x4"), 8)
    hlo = probes.compile_probe(probes.PROBES[0], mesh)
    assert "num_partitions=8" in hlo
    counts = probes.count_collectives(hlo)
    assert counts.get("all-gather", 0) >= 1
    assert "-start(" in hlo


def test_malformed_topology_name_is_a_user_error():
    import pytest
    from aoizora.errors import UserError

    with pytest.raises(UserError, match="malformed topology name"):
        tpu.split_name("v5e-8")


def test_doctor_exits_zero_and_reports_tpu_target():
    out = subprocess.run([sys.executable, "-m", "aoizora.cli", "doctor"], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "v5e:2x4: target tpu" in out.stdout


def test_doctor_compiles_deviceless_for_v6e_and_tpu7x_too():
    import json

    out = subprocess.run([sys.executable, "-m", "aoizora.cli", "doctor", "--json"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    slices = {s["topology"]: s for s in json.loads(out.stdout)["slices"]}
    for name, kind, devices in (("v6e:2x4", "TPU v6 lite", 8), ("tpu7x:2x2x1", "TPU7x", 8)):
        s = slices[name]
        assert s["target"] == "tpu" and s["device_kind"] == kind and "compile_s" in s, s
        assert len(s["coords"]) == devices and s["collectives"], s

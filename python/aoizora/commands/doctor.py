"""`aoizora doctor`: versions of jax, jaxlib and libtpu, and a real deviceless TPU compile of
a small probe for a slice of each generation family (v5e, v4, v6e, TPU7x; SLICES)."""

from __future__ import annotations

import importlib.metadata
import json
import time

SLICES = ("v5e:2x4", "v5e:4x4", "v4:2x2x2", "v6e:2x4", "tpu7x:2x2x1")


def register(sub) -> None:
    p = sub.add_parser("doctor", help="check jax, jaxlib, libtpu and a deviceless TPU compile")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(run=run)


def _version(pkg: str) -> str:
    try:
        return importlib.metadata.version(pkg)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _check_slice(name: str) -> dict:
    from aoizora.compile import tpu
    from aoizora.hardware import probes

    result: dict = {"topology": name}
    try:
        devices = tpu.compile_only_devices(name)
        result["target"] = "tpu"
        result["device_kind"] = devices[0].device_kind
        result["coords"] = {d.id: list(d.coords) for d in devices}
    except Exception as e:  # fall back to CPU devices and say why
        result["target"] = "cpu"
        result["tpu_error"] = str(e).splitlines()[0]
        devices = tpu.cpu_devices(_devices(name))
    mesh = probes.mesh_2d(devices, len(devices))
    t0 = time.perf_counter()
    try:
        hlo = probes.compile_probe(probes.PROBES[0], mesh)
    except Exception as e:
        result["compile_error"] = str(e).splitlines()[0]
        return result
    result["compile_s"] = round(time.perf_counter() - t0, 3)
    result["collectives"] = probes.count_collectives(hlo)
    result["async"] = "-start(" in hlo
    return result


def _devices(name: str) -> int:
    """JAX devices of a slice: its chips times the generation's TensorCores per chip."""
    from aoizora.compile import tpu
    from aoizora.compile.compile_target import DEVICES_PER_CHIP

    gen, dims = tpu.split_name(name)
    n = DEVICES_PER_CHIP.get(gen, 1)
    for d in dims:
        n *= d
    return n


def run(args) -> int:
    report = {
        "versions": {p: _version(p) for p in ("aoizora", "jax", "jaxlib", "libtpu")},
        "slices": [_check_slice(s) for s in SLICES],
    }
    try:
        from aoizora import _core  # noqa: F401

        report["core"] = "ok"
    except ImportError as e:
        report["core"] = f"missing: {e}"
    ok = report["core"] == "ok" and all(
        s.get("target") == "tpu" and "compile_s" in s for s in report["slices"]
    )
    report["ok"] = ok
    if args.json:
        print(json.dumps(report, indent=2))
        return 0 if ok else 1
    v = report["versions"]
    print(f"aoizora {v['aoizora']}  jax {v['jax']}  jaxlib {v['jaxlib']}  libtpu {v['libtpu']}")
    print(f"C++ core: {report['core']}")
    for s in report["slices"]:
        print(f"\n{s['topology']}: target {s['target']}"
              + (f" ({s['device_kind']})" if "device_kind" in s else ""))
        if "tpu_error" in s:
            print(f"  TPU compile unavailable, fell back to CPU: {s['tpu_error']}")
        if "coords" in s:
            print("  device id -> coords: " + ", ".join(
                f"{i}:{tuple(c)}" for i, c in s["coords"].items()))
        if "compile_error" in s:
            print(f"  compile FAILED: {s['compile_error']}")
            continue
        kinds = ", ".join(f"{k} x{n}" for k, n in sorted(s["collectives"].items())) or "none"
        print(f"  compiled probe in {s['compile_s']} s; collectives: {kinds}; "
              f"{'async' if s['async'] else 'synchronous'} collectives")
    print("\nOK: deviceless TPU compilation works" if ok else "\nFAILED: see above")
    return 0 if ok else 1

"""The devices a measurement runs on, and the provenance it records.

    prepare(platform, devices=None) -> None: sets the environment jax reads when it starts
        (JAX_PLATFORMS; on CPU the host device count). Call it before anything imports jax;
        once jax is loaded it changes nothing and `devices` checks what jax has.
    devices(platform, want=None, purpose="--devices") -> [jax device]: every device of the
        platform, checked to be at least `want` (default: CPU_DEFAULT_DEVICES on CPU, the
        slice on a TPU). UserError, one line naming `purpose`, when the platform has no
        devices or too few, or when a TPU slice spans several hosts.
    provenance(platform, devs, topology) -> dict: platform, device_kind, devices, topology,
        jax/jaxlib/libtpu versions, date (UTC), measured_on (HARNESS_NOTE on CPU).

A TPU run is real hardware; a CPU run measures XLA's CPU runtime and our harness, and every
output of one carries HARNESS_NOTE.
"""

from __future__ import annotations

import datetime
import os
import sys

from aoizora.errors import UserError

PLATFORMS = ("tpu", "cpu")
HARNESS_NOTE = "cpu devices: harness check, not a TPU measurement"
CPU_DEFAULT_DEVICES = 8
_COUNT_FLAG = "--xla_force_host_platform_device_count"


def prepare(platform: str, devices: int | None = None) -> None:
    if platform not in PLATFORMS:
        raise UserError(f"--platform {platform}: use one of {', '.join(PLATFORMS)}")
    if "jax" in sys.modules:   # jax read its environment already (a test session)
        return
    os.environ["JAX_PLATFORMS"] = platform
    flags = os.environ.get("XLA_FLAGS", "")
    if platform == "cpu" and _COUNT_FLAG not in flags:   # before aoizora.compile.jaxenv sets its own
        n = devices or CPU_DEFAULT_DEVICES
        os.environ["XLA_FLAGS"] = f"{flags} {_COUNT_FLAG}={n}".strip()


def devices(platform: str, want: int | None = None, purpose: str = "--devices") -> list:
    from aoizora.compile import jaxenv  # noqa: F401  (environment before jax)

    import jax

    try:
        devs = list(jax.devices(platform))
    except RuntimeError as e:   # no backend for the platform
        first = (str(e).strip().splitlines() or [""])[0].split(" (set JAX_PLATFORMS")[0][:160]
        raise UserError(f"--platform {platform}: jax finds no {platform.upper()} devices "
                        f"({first}); on a machine without a TPU, --platform cpu runs the "
                        "harness on CPU devices") from None
    if platform == "tpu" and jax.process_count() > 1:
        raise UserError(f"this TPU slice spans {jax.process_count()} hosts: aoizora measure "
                        "runs on a single-host slice (all its devices in this process)")
    want = want or (len(devs) if platform == "tpu" else CPU_DEFAULT_DEVICES)
    if len(devs) < want:
        hint = (f"; set XLA_FLAGS={_COUNT_FLAG}={want} before jax starts (aoizora does when "
                "jax is not loaded yet)" if platform == "cpu" else "")
        raise UserError(f"{purpose} needs {want} {platform.upper()} devices but jax has "
                        f"{len(devs)}{hint}")
    return devs


def provenance(platform: str, devs: list, topology: str) -> dict:
    from aoizora.compile.jobs import versions

    v = versions()
    kind = devs[0].device_kind
    return {
        "platform": platform, "device_kind": kind, "devices": len(devs), "topology": topology,
        "jax": v.get("jax"), "jaxlib": v.get("jaxlib"),
        "libtpu": v.get("libtpu") or v.get("libtpu-nightly"),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "measured_on": (f"{len(devs)} x {kind} ({topology})" if platform == "tpu"
                        else HARNESS_NOTE),
    }

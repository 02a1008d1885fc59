"""What the candidates of a plan are compiled for: the slice's own TPU topology through
libtpu (deviceless), or, only when the user asks for it, CPU devices.

    target = compile_target_for(topology)              # the TPU, or a UserError saying why not
    target = compile_target_for(topology, "cpu")       # explicit CPU compile
    target.spec      -> "v5e:2x4", "v5p:4x4x4/wrap=111", "cpu:8"  (a Job's target; cache key)
    target.describe() -> {"platform", "name", "devices", "wrap"[, "libtpu_init_args"]}

A CPU compile runs XLA's CPU pipeline (synchronous collectives, no TPU fusions): its programs
are not what a TPU runs, so it is never chosen silently. The TPU topology is described with
the slice's own wraparound, so a torus compiles as a torus.
"""

from __future__ import annotations

from dataclasses import dataclass

from aoizora.errors import UserError

# Generations libtpu 0.0.42.1 compiles for without hardware, and the number of JAX devices
# (TensorCores) per chip in each.
DEVICES_PER_CHIP = {"v4": 1, "v5e": 1, "v5p": 1, "v6e": 1, "tpu7x": 2}
# Generations JAX names with two dims ("v5e:2x4"); the others take three ("v4:2x2x2").
_TWO_D = {"v5e", "v6e"}
PLATFORMS = ("tpu", "cpu")


@dataclass(frozen=True)
class CompileTarget:
    platform: str               # "tpu" or "cpu"
    name: str                   # the TPU topology name ("v5e:2x4") or "cpu"
    devices: int                # devices the program is partitioned over
    wrap: tuple[bool, ...] = ()  # per TPU axis; () for CPU

    @property
    def spec(self) -> str:
        """The string a compile job carries (and its cache key holds)."""
        if self.platform == "cpu":
            return f"cpu:{self.devices}"
        if any(self.wrap):
            return f"{self.name}/wrap={''.join('1' if w else '0' for w in self.wrap)}"
        return self.name

    def describe(self) -> dict:
        """The target as plan.json records it; a TPU target also records the libtpu flags
        its compiles ran under (this process's LIBTPU_INIT_ARGS, which the compile workers
        add nothing to but the plan's compiler flags), so a deployment can run with the same
        ones."""
        out = {"platform": self.platform, "name": self.name, "devices": self.devices,
               "wrap": list(self.wrap)}
        if self.platform == "tpu":
            import os

            out["libtpu_init_args"] = os.environ.get("LIBTPU_INIT_ARGS", "")
        return out


def parse_spec(spec: str) -> tuple[str, tuple[bool, bool, bool]]:
    """"v5p:4x4x4/wrap=111" -> ("v5p:4x4x4", (True, True, True)); no suffix: no wraparound."""
    name, _, suffix = spec.partition("/wrap=")
    bits = suffix or "000"
    if len(bits) != 3 or set(bits) - {"0", "1"}:
        raise UserError(f"malformed compile target {spec!r}: expected e.g. 'v5p:4x4x4/wrap=111'")
    return name, tuple(b == "1" for b in bits)


def compile_target_for(topology, platform: str = "tpu") -> CompileTarget:
    """The target for a bound topology (`aoizora._core.Topology`): its generation's TPU at its
    dims and wraparound, or `platform="cpu"`: one CPU device per device of the slice. Raises
    UserError when the TPU compile cannot stand for the slice (no deviceless compiler for the
    generation, or a different number of devices per chip than the topology model has)."""
    if platform not in PLATFORMS:
        raise UserError(f"unknown compile target {platform!r}: use one of {', '.join(PLATFORMS)}")
    devices = topology.num_devices
    if platform == "cpu":
        return CompileTarget("cpu", "cpu", devices)
    gen = topology.spec["generation"]
    if gen not in DEVICES_PER_CHIP:
        raise UserError(f"no deviceless TPU compiler for generation {gen!r} (libtpu knows "
                        f"{', '.join(sorted(DEVICES_PER_CHIP))}); plan with --compile-target cpu "
                        f"to compile for {devices} CPU devices instead")
    dims = [int(d) for d in topology.dims]
    wrap = tuple(bool(w) for w in topology.wrap)
    if gen in _TWO_D and dims[2] == 1:
        dims, wrap = dims[:2], wrap[:2] + (False,)
    name = f"{gen}:{'x'.join(str(d) for d in dims)}"
    if DEVICES_PER_CHIP[gen] != topology.cores_per_chip:
        raise UserError(f"{name} compiles to {DEVICES_PER_CHIP[gen]} devices per chip but the "
                        f"topology model has {topology.cores_per_chip}; plan with "
                        f"--compile-target cpu to compile for {devices} CPU devices instead")
    return CompileTarget("tpu", name, devices, wrap)

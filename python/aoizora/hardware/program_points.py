"""Whole programs timed on real TPUs (the "programs" of a measurements file): what such a
calibration point is and how the simulator prices it. Two kinds, by the entry's "kind":

- "program" (the default): one compiled program, e.g. one denoising step of a model;
  "seconds" (or "seconds_per_denoising_step") is one run of it. "kernel_blocks" (optional,
  [block_q, block_kv, block_kv_compute]): the splash kernel's blocks in the timed run where
  the program compiled with others; its kernels are priced at them (with_blocks).
- "video": one video end to end as a deployment times it; "seconds" is the whole. It is
  the text encoder, "steps" runs of the transformer step, the VAE decode and the reshards
  between them. The step is the entry's own "hlo" and "mesh"; each stage in "stages" is
  {"stage": "text_encoder" | "vae_decode", "sharding", "hlo", "mesh"}; each reshard in
  "reshards" is {"name", "max_chip_bytes"}: the most bytes one chip receives
  (pipeline/reshard.py), priced as that module prices it on the profile's link.

    parse(d, folder) -> Program | Video; ValueError naming the entry and the field. A
        program without "hlo" is kept and not simulated; paths are relative to `folder`.
    check(p) -> None: what simulating `p` needs (its files, the slice, every program's
        partition count, known trip counts), as ValueError naming the entry and the field.
    Program.simulate(hardware=None) -> seconds of one run on the flow-level simulator, JAX's
        default device order for its mesh, on the profile of its generation or `hardware`.
    Video.parts(hardware=None) -> VideoParts (each part's seconds); Video.simulate(hardware)
        -> VideoParts.total_s.
    held_out_reason(value), slice_of(what, topology, generation): shared with
        measurements.py's collective points.

Every time here is simulated, never measured; the measured one is the entry's "seconds".
"""

from __future__ import annotations

import functools
import gzip
import math
import os
import re
from dataclasses import dataclass

STAGES = ("text_encoder", "vae_decode")   # a video's stages, in the order they run
# A text encoder stage run on the host CPU (MaxDiffusion's): {"stage": "text_encoder",
# "sharding": "host-cpu"}, no program; priced by pipeline/hosts.py.
HOST = "host-cpu"


def held_out_reason(value) -> str:
    """The reason a point is held out ("" when it is used); `true` holds it out unexplained."""
    if value is True:
        return "held out"
    return value if isinstance(value, str) else ""


def slice_of(what: str, topology: str, generation: str):
    """The slice a point or program ran on, checked against its generation (ValueError)."""
    from aoizora import _core

    try:
        topo = _core.make_topology(topology)
    except _core.CoreError as e:
        raise ValueError(f"{what}: 'topology': {e}") from None
    if topo.spec["generation"] != generation:
        raise ValueError(f"{what}: 'generation' is {generation!r} but {topology} is "
                         f"{topo.spec['generation']!r}")
    return topo


@functools.lru_cache(maxsize=8)
def _graph(path: str, blocks: tuple = ()):
    """The collective graph of a compiled HLO file, read once (a fit simulates it often);
    with `blocks`, its splash kernels record those blocks instead (with_blocks)."""
    from aoizora import _core

    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return _core.load_hlo(with_blocks(f.read(), blocks))


_BLOCK_KEYS = ("block_q", "block_kv", "block_kv_compute")


def with_blocks(text: str, blocks: tuple) -> str:
    """HLO text whose splash kernels' recorded block sizes (kernel_metadata: \\"block_q\\": 512,
    ...) are `blocks` (block_q, block_kv, block_kv_compute), so the kernel model
    (compute/splash_kernel.h) prices its grid steps at the blocks the timed run used; the
    text itself when `blocks` is empty. Raises ValueError when the text records none."""
    if not blocks:
        return text
    out = text
    for key, value in zip(_BLOCK_KEYS, blocks):
        out, n = re.subn(r'(\\"' + key + r'\\": )\d+', r"\g<1>" + str(int(value)), out)
        if n == 0:
            raise ValueError(f"the program records no splash kernel {key} to set to {value}")
    return out


def _simulate(hlo: str, topology: str, mesh: tuple, hardware: str | None,
              blocks: tuple = ()) -> float:
    """Seconds of one run of the program in `hlo` on `topology`, JAX's default order, its
    kernels at `blocks` when given."""
    from aoizora import _core

    topo = _core.make_topology(topology, hardware or "")
    placement = _core.default_placement(topo, list(mesh))
    return _core.simulate(_graph(hlo, blocks), topo, list(placement.device_of)).step_seconds


@dataclass(frozen=True)
class Program:
    """A whole program timed on a real TPU (one step of a model)."""

    id: str
    generation: str
    seconds: float
    hlo: str = ""            # compiled HLO file (absolute path), when the measurement has one
    held_out: str = ""
    topology: str = ""       # the slice it ran on
    mesh: tuple = ()         # its logical mesh shape, placed in JAX's default device order
    source: str = ""
    # The splash kernel's (block_q, block_kv, block_kv_compute) in the timed run, where the
    # program had to compile with others (TPU7x-8's published blocks exceed the scoped VMEM):
    # its kernels are priced at these. Empty: the program's own.
    blocks: tuple = ()

    # What calibrate's tables show of a point.
    kind = "program"
    bytes_per_device = 0
    approximate = False

    def simulate(self, hardware: str | None = None) -> float:
        return _simulate(self.hlo, self.topology, self.mesh, hardware, self.blocks)

    def programs(self) -> list[tuple[str, str, tuple]]:
        """(entry key, hlo, mesh) of every compiled program the point simulates."""
        return [("", self.hlo, self.mesh)]


@dataclass(frozen=True)
class Stage:
    """One stage of a video around the transformer loop, as compiled for the point."""

    stage: str               # one of STAGES
    sharding: str            # its name in pipeline/stage_specs.py ("te-data2-tensor4")
    hlo: str                 # compiled HLO file (absolute path)
    mesh: tuple              # its logical mesh shape, JAX's default device order


@dataclass(frozen=True)
class VideoParts:
    """One video's simulated seconds by part."""

    text_encoder_s: float
    step_s: float
    steps: int
    vae_decode_s: float
    reshard_s: float

    @property
    def total_s(self) -> float:
        return self.text_encoder_s + self.steps * self.step_s + self.vae_decode_s + self.reshard_s


@dataclass(frozen=True)
class Video(Program):
    """One video end to end: text encoder, `steps` transformer steps (the program in `hlo`),
    VAE decode, reshards."""

    steps: int = 0
    stages: tuple = ()       # Stage, one per STAGES entry
    reshards: tuple = ()     # ((name, the most bytes one chip receives), ...)

    kind = "video"

    def parts(self, hardware: str | None = None) -> VideoParts:
        from aoizora import _core

        stage = {s.stage: self._host_seconds() if s.sharding == HOST
                 else _simulate(s.hlo, self.topology, s.mesh, hardware) for s in self.stages}
        spec = _core.make_topology(self.topology, hardware or "").spec
        # pipeline/reshard.py's price: one hop and the busiest chip's bytes over one link.
        reshard = sum(spec["hop_latency"] + b / spec["link_bandwidth"]
                      for _, b in self.reshards if b)
        return VideoParts(stage["text_encoder"], Program.simulate(self, hardware), self.steps,
                          stage["vae_decode"], reshard)

    def simulate(self, hardware: str | None = None) -> float:
        return self.parts(hardware).total_s

    def _host_seconds(self) -> float:
        """The text encoder as MaxDiffusion ran it, on the host CPU (hardware/hosts.json's
        figure for the generation)."""
        from aoizora.models import umt5
        from aoizora.hardware import hosts

        return hosts.seconds(umt5.UMT5_XXL, hosts.host_figure(self.generation))

    def programs(self) -> list[tuple[str, str, tuple]]:
        return [("", self.hlo, self.mesh)] + [
            (f"stages.{s.stage}.", s.hlo, s.mesh) for s in self.stages if s.hlo]


def _mesh(value, where: str, key: str) -> tuple:
    if not (isinstance(value, list) and value and all(
            isinstance(m, int) and not isinstance(m, bool) and m > 0 for m in value)):
        raise ValueError(f"{where}: '{key}' must be a list of positive whole numbers, got "
                         f"{value!r}")
    return tuple(value)


def _stage(d, where: str, folder: str) -> Stage:
    if not isinstance(d, dict) or d.get("stage") not in STAGES:
        raise ValueError(f"{where}: each of 'stages' needs 'stage', one of {', '.join(STAGES)}")
    if d["stage"] == "text_encoder" and d.get("sharding") == HOST:
        return Stage("text_encoder", HOST, "", ())
    for key in ("sharding", "hlo"):
        if not isinstance(d.get(key), str) or not d[key]:
            raise ValueError(f"{where}: stage {d['stage']} needs a string '{key}'")
    return Stage(d["stage"], d["sharding"], os.path.join(folder, d["hlo"]),
                 _mesh(d.get("mesh"), f"{where}: stage {d['stage']}", "mesh"))


def _video(d: dict, base: dict, folder: str) -> Video:
    where = f"program {d['id']}"
    steps = d.get("steps")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"{where}: a video needs 'steps', a positive whole number")
    if not base["hlo"]:
        raise ValueError(f"{where}: a video needs 'hlo', its transformer step's program")
    stages = [_stage(s, where, folder) for s in d.get("stages") or []]
    if sorted(s.stage for s in stages) != sorted(STAGES):
        raise ValueError(f"{where}: 'stages' must hold {' and '.join(STAGES)}, once each")
    reshards = d.get("reshards", [])
    if not isinstance(reshards, list) or not all(
            isinstance(r, dict) and isinstance(r.get("name"), str)
            and isinstance(r.get("max_chip_bytes"), int) and r["max_chip_bytes"] >= 0
            for r in reshards):
        raise ValueError(f"{where}: each of 'reshards' needs a 'name' and 'max_chip_bytes', "
                         "a whole number >= 0")
    stages.sort(key=lambda s: STAGES.index(s.stage))
    return Video(**base, steps=steps, stages=tuple(stages),
                 reshards=tuple((r["name"], r["max_chip_bytes"]) for r in reshards))


def parse(d, folder: str) -> Program:
    if not isinstance(d, dict) or not isinstance(d.get("id"), str):
        raise ValueError("each entry of 'programs' must be an object with a string 'id'")
    kind = d.get("kind", "program")
    if kind not in ("program", "video"):
        raise ValueError(f"program {d['id']}: unknown 'kind' {kind!r} (program or video)")
    seconds = d.get("seconds", d.get("seconds_per_denoising_step"))
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise ValueError(f"program {d['id']}: needs a positive 'seconds' (or "
                         "'seconds_per_denoising_step')")
    hlo, mesh = str(d.get("hlo", "")), d.get("mesh", [])
    if hlo and not (isinstance(d.get("topology"), str) and isinstance(mesh, list) and mesh
                    and all(isinstance(m, int) and not isinstance(m, bool) and m > 0
                            for m in mesh)):
        raise ValueError(f"program {d['id']}: an 'hlo' needs the 'topology' it ran on and its "
                         "'mesh' shape (a list of positive whole numbers)")
    base = dict(id=d["id"], generation=str(d.get("generation", "")), seconds=float(seconds),
                hlo=os.path.join(folder, hlo) if hlo else "",
                held_out=held_out_reason(d.get("held_out")),
                topology=str(d.get("topology", "")), mesh=tuple(mesh),
                source=str(d.get("source", "")))
    if kind == "video":
        return _video(d, base, folder)
    blocks = d.get("kernel_blocks", [])
    if not (isinstance(blocks, list) and len(blocks) in (0, 3)
            and all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in blocks)):
        raise ValueError(f"program {d['id']}: 'kernel_blocks' must be [block_q, block_kv, "
                         "block_kv_compute], positive whole numbers")
    return Program(**base, blocks=tuple(blocks))


def check(p: Program) -> None:
    """What simulating `p` needs, as ValueError naming the program and the field."""
    from aoizora import _core

    for key, hlo, _ in p.programs():
        if not os.path.isfile(hlo):
            raise ValueError(f"program {p.id}: '{key}hlo' {hlo} is not a file")
    topo = slice_of(f"program {p.id}", p.topology, p.generation)
    for key, hlo, mesh in p.programs():
        if math.prod(mesh) != topo.num_devices:
            raise ValueError(f"program {p.id}: '{key}mesh' {list(mesh)} has "
                             f"{math.prod(mesh)} devices but {p.topology} has "
                             f"{topo.num_devices}")
        try:
            graph = _graph(hlo)
        except (_core.CoreError, OSError, UnicodeDecodeError) as e:
            raise ValueError(f"program {p.id}: cannot read its '{key}hlo': {e}") from None
        if graph.num_partitions != topo.num_devices:
            raise ValueError(f"program {p.id}: its '{key}hlo' was compiled for "
                             f"{graph.num_partitions} devices but {p.topology} has "
                             f"{topo.num_devices}")
        loops = [r.name for r in graph.regions if not r.trip_count_known]
        if loops:
            raise ValueError(f"program {p.id}: loop {loops[0]} of its '{key}hlo' has an "
                             "unknown trip count")

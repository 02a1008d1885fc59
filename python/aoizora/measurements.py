"""Published collective measurements of real TPUs (calibration/published.json, schema
aoizora.measurements/1): the points a hardware profile is checked against and, later,
fitted to (issue 14).

    load(path=PUBLISHED) -> list[Point], in file order; ValueError naming the point and the
        field on a malformed file.
    read(path, flag) -> Measurements (points and whole programs) of a user's file;
        UserError, one line naming the file, the point and the field, on anything `load`
        refuses and on a point the simulator could not run (unknown topology, a generation
        that is not the topology's, chip ids outside the slice, bytes that are not whole f32).
    Point.simulate(hardware=None) -> seconds: the point's collective simulated alone
        (single_collective.py) on the current profile of its generation, or on `hardware`.

A file may say where its points were timed ("provenance": an object, kept as it is).
Whole programs ("programs": id, generation, seconds or seconds_per_denoising_step; to be
simulated also "hlo", a compiled HLO file (plain or .gz, relative to the measurements
file), "topology" and "mesh", the logical mesh shape the program runs on in JAX's default
device order). Program.simulate(hardware) -> seconds of one run on the flow-level
simulator; a program without "hlo" is kept and not simulated.
"""

from __future__ import annotations

import functools
import gzip
import json
import math
import os
from dataclasses import dataclass, field

def _published() -> str:
    """The installed copy (aoizora/calibration/), else the source checkout's."""
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, "calibration", "published.json")
    return installed if os.path.exists(installed) else os.path.join(
        here, "..", "..", "calibration", "published.json")


PUBLISHED = _published()
SCHEMA = "aoizora.measurements/1"
KINDS = (  # the collective kinds a point may have (HLO spelling)
    "all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")


@dataclass(frozen=True)
class Point:
    id: str
    generation: str
    topology: str            # a catalog slice, e.g. "v5e:4x8"
    kind: str                # HLO spelling
    groups: tuple            # replica groups of chip ids (empty for a permute)
    pairs: tuple             # [source, target] chip ids (permute only)
    bytes_per_device: int    # an all-gather's input shard; the operand of the others
    seconds: float           # published, measured on the real TPU
    source: str
    approximate: bool = False
    held_out: str = ""       # why the point is shown but not used yet; "" when used

    def simulate(self, hardware: str | None = None) -> float:
        from aoizora import single_collective

        return single_collective.simulate(
            self.kind, self.topology, self.bytes_per_device,
            groups=[list(g) for g in self.groups] or None,
            pairs=[list(p) for p in self.pairs] or None, hardware=hardware)


def _held_out(value) -> str:
    """The reason a point is held out ("" when it is used); `true` holds it out unexplained."""
    if value is True:
        return "held out"
    return value if isinstance(value, str) else ""


def _positive(d: dict, key: str, where: str, integer: bool = False) -> float:
    x = d[key]
    if (isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x)
            or not x > 0 or (integer and x != int(x))):
        raise ValueError(f"point {where}: '{key}' must be a positive "
                         f"{'whole ' if integer else ''}number, got {x!r}")
    return x


def _point(d: dict) -> Point:
    where = d.get("id", "?")
    for key in ("id", "generation", "topology", "kind", "group", "bytes_per_device", "seconds",
                "source"):
        if key not in d:
            raise ValueError(f"point {where}: missing '{key}'")
    for key in ("id", "generation", "topology", "kind", "source"):
        if not isinstance(d[key], str) or not d[key]:
            raise ValueError(f"point {where}: '{key}' must be a non-empty string")
    if d["kind"] not in KINDS:
        raise ValueError(f"point {where}: unknown kind {d['kind']!r} (one of "
                         f"{', '.join(KINDS)})")
    g = d["group"]
    if not isinstance(g, dict):
        raise ValueError(f"point {where}: 'group' must be an object with 'groups' or 'pairs'")
    groups = tuple(tuple(x) for x in g.get("groups", []))
    pairs = tuple(tuple(x) for x in g.get("pairs", []))
    if (d["kind"] == "collective-permute") != bool(pairs) or not (groups or pairs):
        raise ValueError(f"point {where}: a permute needs 'group.pairs', other kinds "
                         "'group.groups'")
    if pairs and any(len(x) != 2 for x in pairs):
        raise ValueError(f"point {where}: each of 'group.pairs' must be [source, target]")
    _positive(d, "seconds", where)
    _positive(d, "bytes_per_device", where, integer=True)
    return Point(id=d["id"], generation=d["generation"], topology=d["topology"],
                 kind=d["kind"], groups=groups, pairs=pairs,
                 bytes_per_device=int(d["bytes_per_device"]), seconds=float(d["seconds"]),
                 source=d["source"], approximate=bool(d.get("approximate", False)),
                 held_out=_held_out(d.get("held_out")))


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

    # What calibrate's tables show of a point.
    kind = "program"
    bytes_per_device = 0
    approximate = False

    def simulate(self, hardware: str | None = None) -> float:
        from aoizora import _core

        topo = _core.make_topology(self.topology, hardware or "")
        placement = _core.default_placement(topo, list(self.mesh))
        return _core.simulate(_graph(self.hlo), topo, list(placement.device_of)).step_seconds


@functools.lru_cache(maxsize=4)
def _graph(path: str):
    """The collective graph of a compiled HLO file, read once (a fit simulates it often)."""
    from aoizora import _core

    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return _core.load_hlo(f.read())


@dataclass(frozen=True)
class Measurements:
    points: list = field(default_factory=list)     # [Point]
    programs: list = field(default_factory=list)   # [Program]
    # Where the file's own points were timed (`aoizora measure` writes platform,
    # device_kind, versions, date, measured_on); {} when the file does not say.
    provenance: dict = field(default_factory=dict)


def _program(d, folder: str) -> Program:
    if not isinstance(d, dict) or not isinstance(d.get("id"), str):
        raise ValueError("each entry of 'programs' must be an object with a string 'id'")
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
    return Program(id=d["id"], generation=str(d.get("generation", "")), seconds=float(seconds),
                   hlo=os.path.join(folder, hlo) if hlo else "",
                   held_out=_held_out(d.get("held_out")), topology=str(d.get("topology", "")),
                   mesh=tuple(mesh), source=str(d.get("source", "")))


def _parse(doc, folder: str = ".") -> Measurements:
    if not isinstance(doc, dict):
        raise ValueError("expected a JSON object with 'schema' and 'points'")
    if doc.get("schema") != SCHEMA:
        raise ValueError(f"'schema' is {doc.get('schema')!r}, expected {SCHEMA!r}")
    if not isinstance(doc.get("points"), list):
        raise ValueError("'points' must be a list of measured points")
    if not isinstance(doc.get("programs", []), list):
        raise ValueError("'programs' must be a list")
    if not isinstance(doc.get("provenance", {}), dict):
        raise ValueError("'provenance' must be an object")
    points = []
    for d in doc["points"]:
        if not isinstance(d, dict):
            raise ValueError("each entry of 'points' must be an object")
        try:
            points.append(_point(d))
        except (TypeError, AttributeError):
            raise ValueError(f"point {d.get('id', '?')}: a field has the wrong type (numbers "
                             "for bytes_per_device and seconds, lists of chip ids in "
                             "'group')") from None
    ids = [p.id for p in points]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"point id {dup[0]!r} appears more than once")
    return Measurements(points, [_program(d, folder) for d in doc.get("programs", [])],
                        doc.get("provenance", {}))


def load(path: str = PUBLISHED) -> list[Point]:
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    try:
        return _parse(doc).points
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def _topology(what: str, topology: str, generation: str):
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


def _check_runnable(p: Point) -> None:
    """What the simulator needs of a point, as ValueError naming the point and the field."""
    topo = _topology(f"point {p.id}", p.topology, p.generation)
    chips = [c for g in (p.groups or p.pairs) for c in g]
    bad = [c for c in chips if not isinstance(c, int) or isinstance(c, bool)
           or not 0 <= c < topo.num_devices]
    if bad:
        raise ValueError(f"point {p.id}: device id {bad[0]!r} in 'group' is not one of the "
                         f"{topo.num_devices} devices of {p.topology} (0..{topo.num_devices - 1})")
    if p.groups and len({len(g) for g in p.groups}) != 1:
        raise ValueError(f"point {p.id}: the replica groups in 'group.groups' differ in size")
    if p.bytes_per_device % 4:
        raise ValueError(f"point {p.id}: 'bytes_per_device' {p.bytes_per_device} is not a "
                         "whole number of f32 elements (a multiple of 4)")


def _check_program(p: Program) -> None:
    """What simulating a program needs, as ValueError naming the program and the field."""
    from aoizora import _core

    if not os.path.isfile(p.hlo):
        raise ValueError(f"program {p.id}: 'hlo' {p.hlo} is not a file")
    topo = _topology(f"program {p.id}", p.topology, p.generation)
    if math.prod(p.mesh) != topo.num_devices:
        raise ValueError(f"program {p.id}: 'mesh' {list(p.mesh)} has {math.prod(p.mesh)} "
                         f"devices but {p.topology} has {topo.num_devices}")
    try:
        graph = _graph(p.hlo)
    except (_core.CoreError, OSError, UnicodeDecodeError) as e:
        raise ValueError(f"program {p.id}: cannot read its 'hlo': {e}") from None
    if graph.num_partitions != topo.num_devices:
        raise ValueError(f"program {p.id}: its HLO was compiled for {graph.num_partitions} "
                         f"devices but {p.topology} has {topo.num_devices}")
    loops = [r.name for r in graph.regions if not r.trip_count_known]
    if loops:
        raise ValueError(f"program {p.id}: loop {loops[0]} has an unknown trip count")


def read(path: str, flag: str = "MEASUREMENTS") -> Measurements:
    from aoizora.errors import UserError
    from aoizora.validate import read_text

    text = read_text(path, flag, "measurements JSON file")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(f"{flag} {path}:{e.lineno}:{e.colno}: not JSON: {e.msg}") from None
    try:
        m = _parse(doc, os.path.dirname(os.path.abspath(path)))
        for p in m.points:
            _check_runnable(p)
        for prog in m.programs:
            if prog.hlo:
                _check_program(prog)
    except ValueError as e:
        raise UserError(f"{flag} {path}: {e}") from None
    return m

"""Published collective measurements of real TPUs (calibration/published.json, schema
aoizora.measurements/1): the points a hardware profile is checked against and, later,
fitted to.

    load(path=PUBLISHED) -> list[Point], in file order; ValueError naming the point and the
        field on a malformed file.
    read(path, flag) -> Measurements (points and whole programs) of a user's file;
        UserError, one line naming the file, the point and the field, on anything `load`
        refuses and on a point the simulator could not run (unknown topology, a generation
        that is not the topology's, chip ids outside the slice, bytes that are not whole f32).
    Point.simulate(hardware=None) -> seconds: the point's collective simulated alone
        (single_collective.py) on the current profile of its generation, or on `hardware`.

A file may say where its points were timed ("provenance": an object, kept as it is).
Whole programs ("programs": one step, or one video end to end) are program_points.py's:
Measurements.programs holds them (program_points.Program and Video), each simulated whole
on the flow-level simulator; one without "hlo" is kept and not simulated.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field

from aoizora.hardware import program_points

def _published() -> str:
    """The installed copy (aoizora/calibration/), else the source checkout's."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package's root
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
        from aoizora.hardware import single_collective

        return single_collective.simulate(
            self.kind, self.topology, self.bytes_per_device,
            groups=[list(g) for g in self.groups] or None,
            pairs=[list(p) for p in self.pairs] or None, hardware=hardware)


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
                 held_out=program_points.held_out_reason(d.get("held_out")))


@dataclass(frozen=True)
class Measurements:
    points: list = field(default_factory=list)     # [Point]
    programs: list = field(default_factory=list)   # [program_points.Program]
    # Where the file's own points were timed (`aoizora measure` writes platform,
    # device_kind, versions, date, measured_on); {} when the file does not say.
    provenance: dict = field(default_factory=dict)


def _program(d, folder: str):
    return program_points.parse(d, folder)


def _parse(doc, folder: str = ".") -> Measurements:
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        from aoizora.inputs import json_document

        raise ValueError(f"not a measurements file (schema {SCHEMA}, as `aoizora measure "
                         f"collectives` writes): {json_document.describe(doc)}")
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


def _check_runnable(p: Point) -> None:
    """What the simulator needs of a point, as ValueError naming the point and the field."""
    topo = program_points.slice_of(f"point {p.id}", p.topology, p.generation)
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


def read(path: str, flag: str = "MEASUREMENTS") -> Measurements:
    from aoizora.errors import UserError
    from aoizora.inputs.validate import read_text

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
                program_points.check(prog)
    except ValueError as e:
        raise UserError(f"{flag} {path}: {e}") from None
    return m

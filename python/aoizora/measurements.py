"""Published collective measurements of real TPUs (calibration/published.json, schema
aoizora.measurements/1): the points a hardware profile is checked against and, later,
fitted to (issue 14).

    load(path=PUBLISHED) -> list[Point], in file order; ValueError naming the point and the
        field on a malformed file.
    Point.simulate(hardware=None) -> seconds: the point's collective simulated alone
        (single_collective.py) on the current profile of its generation, or on `hardware`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

def _published() -> str:
    """The installed copy (aoizora/calibration/), else the source checkout's."""
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, "calibration", "published.json")
    return installed if os.path.exists(installed) else os.path.join(
        here, "..", "..", "calibration", "published.json")


PUBLISHED = _published()
SCHEMA = "aoizora.measurements/1"
_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")


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


def _point(d: dict) -> Point:
    where = d.get("id", "?")
    for key in ("id", "generation", "topology", "kind", "group", "bytes_per_device", "seconds",
                "source"):
        if key not in d:
            raise ValueError(f"point {where}: missing '{key}'")
    if d["kind"] not in _KINDS:
        raise ValueError(f"point {where}: unknown kind {d['kind']!r}")
    g = d["group"]
    groups = tuple(tuple(x) for x in g.get("groups", []))
    pairs = tuple(tuple(x) for x in g.get("pairs", []))
    if (d["kind"] == "collective-permute") != bool(pairs) or not (groups or pairs):
        raise ValueError(f"point {where}: a permute needs 'group.pairs', other kinds "
                         "'group.groups'")
    if not d["seconds"] > 0 or not d["bytes_per_device"] > 0:
        raise ValueError(f"point {where}: 'seconds' and 'bytes_per_device' must be positive")
    return Point(id=d["id"], generation=d["generation"], topology=d["topology"],
                 kind=d["kind"], groups=groups, pairs=pairs,
                 bytes_per_device=int(d["bytes_per_device"]), seconds=float(d["seconds"]),
                 source=d["source"], approximate=bool(d.get("approximate", False)),
                 held_out=d.get("held_out", ""))


def load(path: str = PUBLISHED) -> list[Point]:
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("schema") != SCHEMA:
        raise ValueError(f"{path}: 'schema' is {doc.get('schema')!r}, expected {SCHEMA!r}")
    return [_point(d) for d in doc["points"]]

"""A saved plan (aoizora.plan/1, plan_format.py) checked against its schema before use.

    load(path, flag="--plan") -> plan.Plan; UserError (one line) naming the first field that
        is missing or of the wrong type, or a choice that contradicts itself (mesh size,
        device count, axis names, repeated chips).

plan.Plan.from_dict trusts its input; commands that read a user's file come here first.
"""

from __future__ import annotations

import json
import math

from aoizora.errors import UserError
from aoizora.validate import read_text

_OBJECTS = ("model", "workload", "topology", "choice")
_SECONDS = ("q1_s", "q2_s", "simulated_s")


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _ints(x, lo: int) -> bool:
    return isinstance(x, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= lo for v in x)


def check_choice(c, where: str) -> None:
    """Raises ValueError when the Choice dict `c` is malformed or inconsistent."""
    if not isinstance(c, dict):
        raise ValueError(f"{where} must be an object")
    for key in ("candidate", "placement"):
        if not isinstance(c.get(key), str):
            raise ValueError(f"{where}.{key} must be a string")
    if not isinstance(c.get("strategy"), dict):
        raise ValueError(f"{where}.strategy must be an object")
    mesh, names, coords = c.get("mesh_shape"), c.get("axis_names"), c.get("device_coords")
    if not _ints(mesh, 1) or not mesh:
        raise ValueError(f"{where}.mesh_shape must be a list of positive integers")
    if not isinstance(names, list) or len(names) != len(mesh) or not all(
            isinstance(n, str) for n in names):
        raise ValueError(f"{where}.axis_names must name each of the {len(mesh)} mesh axes")
    if not isinstance(coords, list) or not all(_ints(x, 0) and x for x in coords):
        raise ValueError(f"{where}.device_coords must be a list of device coordinates "
                         "((x, y, z), or (x, y, z, core) on two-core chips)")
    if len(coords) != math.prod(mesh) or len({tuple(x) for x in coords}) != len(coords):
        raise ValueError(f"{where}.device_coords must hold {math.prod(mesh)} distinct devices "
                         f"(the mesh {'x'.join(map(str, mesh))}), found {len(coords)}")
    if not _ints(c.get("chip_ids", []), 0):
        raise ValueError(f"{where}.chip_ids must be a list of device ids")
    for key in _SECONDS:
        x = c.get(key)
        if x is not None and (not _is_number(x) or x < 0):
            raise ValueError(f"{where}.{key} must be a number of seconds >= 0 or null")
    if not isinstance(c.get("extra", {}), dict):
        raise ValueError(f"{where}.extra must be an object")


def check(d) -> None:
    from aoizora.plan_format import SCHEMA

    if not isinstance(d, dict):
        raise ValueError(f"expected a JSON object of schema {SCHEMA}")
    if d.get("schema") != SCHEMA:
        raise ValueError(f"not an AoiZora plan of schema {SCHEMA}: found {d.get('schema')!r}")
    for key in _OBJECTS:
        if not isinstance(d.get(key), dict):
            raise ValueError(f"'{key}' must be an object")
    check_choice(d["choice"], "choice")
    runners = d.get("runners_up", [])
    if not isinstance(runners, list):
        raise ValueError("'runners_up' must be a list")
    for i, c in enumerate(runners):
        check_choice(c, f"runners_up[{i}]")
    base = d.get("baselines", {})
    if not isinstance(base, dict):
        raise ValueError("'baselines' must be an object")
    for tag, c in base.items():
        check_choice(c, f"baselines.{tag}")
    if not isinstance(d.get("planning", {}), dict):
        raise ValueError("'planning' must be an object")


def load(path: str, flag: str = "--plan"):
    from aoizora.plan_format import Plan

    text = read_text(path, flag, "plan JSON file")
    try:
        d = json.loads(text)
        check(d)
    except json.JSONDecodeError as e:
        raise UserError(f"{flag} {path}:{e.lineno}:{e.colno}: not JSON: {e.msg}") from None
    except ValueError as e:
        raise UserError(f"{flag} {path}: {e}") from None
    try:
        return Plan.from_dict(d)
    except TypeError as e:  # a field Choice does not know
        raise UserError(f"{flag} {path}: {e}") from None

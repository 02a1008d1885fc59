"""A topology argument checked before any work: a catalog name ("v5e:2x4") or a JSON file
(the two forms of topo/topology_json.cpp), returned as the C++ core's Topology.

    load(text, flag="--topology", hardware=None) -> _core.Topology; UserError (one line) on
        a bad name or
        file: unreadable or non-UTF-8 bytes, malformed JSON, duplicate keys, a field of the
        wrong type, dims that are not positive integers, zero chips, negative or non-finite
        latencies, bandwidths, FLOP/s or memory. `hardware`, a hardware profile file
        (hardware_file.py, checked there), replaces the chip figures.
    is_file(text) -> True when `text` names a topology file (it ends in .json)

The C++ reader is lenient (it truncates 2.7 to 2, takes the last of duplicate keys, keeps
negative figures); this module refuses all of those first.
"""

from __future__ import annotations

import json
import math

from aoizora.errors import UserError
from aoizora.inputs.validate import no_duplicate_keys, read_text

# spec field -> least allowed value and whether the bound is excluded
_SPEC = {"peak_flops": (0, True), "hbm_bytes": (0, True), "hbm_bandwidth": (0, True),
         "link_bandwidth": (0, True), "hop_latency": (0, False)}


def is_file(text: str) -> bool:
    return text.endswith(".json")


def _figure(value, where: str, lo: float, strict: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{where} must be a finite number, got {value!r}")
    if value < lo or (strict and value == lo):
        raise ValueError(f"{where} must be {'>' if strict else '>='} {lo}, got {value!r}")


def _int_list(value, where: str, lo: int) -> None:
    if (not isinstance(value, list) or not 1 <= len(value) <= 3 or any(
            isinstance(x, bool) or not isinstance(x, int) or x < lo for x in value)):
        raise ValueError(f"{where} must be a list of 1 to 3 integers >= {lo}, got {value!r}")


def _check_grid(d: dict) -> None:
    _int_list(d["dims"], "'dims'", 1)
    wrap = d.get("wrap", [])
    if not isinstance(wrap, list) or len(wrap) > len(d["dims"]) or not all(
            isinstance(w, bool) for w in wrap):
        raise ValueError(f"'wrap' must be a list of booleans, one per dimension, got {wrap!r}")


def _check_explicit(d: dict) -> None:
    chips, links = d.get("chips"), d.get("links")
    if not isinstance(chips, list) or not isinstance(links, list):
        raise ValueError("a topology file needs 'dims', or both 'chips' and 'links' lists")
    if not chips:
        raise ValueError("'chips' is empty: a topology needs at least one chip")
    for i, c in enumerate(chips):
        _int_list(c, f"chips[{i}]", 0)
    if len({tuple(c) for c in chips}) != len(chips):
        raise ValueError("two chips share coordinates")
    for i, link in enumerate(links):
        if not isinstance(link, dict):
            raise ValueError(f"links[{i}] must be an object")
        for end in ("src", "dst"):
            x = link.get(end)
            if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < len(chips):
                raise ValueError(f"links[{i}].{end} must be a chip index 0..{len(chips) - 1}")
        if "bandwidth" in link:
            _figure(link["bandwidth"], f"links[{i}].bandwidth", 0, True)
        if "latency" in link:
            _figure(link["latency"], f"links[{i}].latency", 0, False)
        if not isinstance(link.get("bidirectional", True), bool):
            raise ValueError(f"links[{i}].bidirectional must be true or false")


def _check_cores(spec: dict) -> None:
    """cores_per_chip 1 or 2; two cores need the link between them (TPU7x)."""
    cores = spec.get("cores_per_chip", 1)
    if cores not in (1, 2) or isinstance(cores, bool):
        raise ValueError(f"spec.cores_per_chip must be 1 or 2, got {cores!r}")
    link = spec.get("intra_chip_link")
    if link is not None:
        if not isinstance(link, dict) or set(link) - {"bandwidth", "latency"}:
            raise ValueError("spec.intra_chip_link must be {\"bandwidth\": ..., \"latency\": ...}")
        _figure(link.get("bandwidth"), "spec.intra_chip_link.bandwidth", 0, True)
        _figure(link.get("latency", 0), "spec.intra_chip_link.latency", 0, False)


def check(d) -> None:
    """Raises ValueError naming the first field that is wrong."""
    if not isinstance(d, dict):
        raise ValueError("a topology file must hold a JSON object")
    for key in ("name", "generation"):
        if key in d and (not isinstance(d[key], str) or not d[key]):
            raise ValueError(f"'{key}' must be a non-empty string")
    spec = d.get("spec", {})
    if not isinstance(spec, dict):
        raise ValueError("'spec' must be an object")
    for key, (lo, strict) in _SPEC.items():
        if key in spec:
            _figure(spec[key], f"spec.{key}", lo, strict)
    _check_cores(spec)
    if "dims" in d:
        _check_grid(d)
    else:
        _check_explicit(d)


def load(text: str, flag: str = "--topology", hardware: str | None = None):
    from aoizora import _core
    from aoizora.hardware import hardware_file

    if is_file(text):
        body = read_text(text, flag, "topology JSON file")
        try:
            check(json.loads(body, object_pairs_hook=no_duplicate_keys))
        except json.JSONDecodeError as e:
            raise UserError(f"{flag} {text}:{e.lineno}:{e.colno}: not JSON: {e.msg}") from None
        except ValueError as e:
            raise UserError(f"{flag} {text}: {e}") from None
    try:
        topology = _core.make_topology(text)
    except _core.CoreError as e:  # "<file>: why" for a file: the file is named once
        why = str(e).removeprefix(f"{text}: ")
        raise UserError(f"{flag} {text}: {why}") from None
    if not hardware:
        return topology
    hardware_file.check(hardware)
    try:
        return _core.make_topology(text, hardware)
    except _core.CoreError as e:
        raise UserError(f"--hardware {e}") from None

"""What compiler flags changed in a compiled program: the same sharding compiled under two
flag sets (compile_flags.py), compared as text and as the collective graph the simulator
loads.

    summary(text, graph) -> dict       a program's flag-sensitive facts, JSON-ready:
        "async" / "sync": {collective kind: count x loop trips} as the loaded graph has them
        (an async collective is a start/done pair the simulator can overlap with compute),
        "fusions": fusion instructions in the text, "ops": scheduled ops x trips,
        "order": digest of the schedule (each region's collectives and starts/dones with the
        compute ops between them), "text": digest of the text with instruction names
        numbered by first appearance (a renumbering alone gives the same digest)
    changes(base, other) -> dict       other against base: "program" is "identical",
        "attributes only" (the text differs, the loaded graph does not: the simulator sees
        the same program) or "changed"; deltas of the above; "words", one line for tables

A flag whose program is "identical" or "attributes only" changes nothing the simulator can
see: the planner reports it as such and does not rank it (its figures equal none's).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Any

_NAME = re.compile(r"%[A-Za-z0-9_.\-]+")
_METADATA = re.compile(r", metadata=\{[^}]*\}")
_FUSION = re.compile(r"= [^=]*\bfusion\(")
_DEBUG_TABLES = {"FileNames", "FunctionNames", "FileLocations", "StackFrames"}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _without_debug_tables(text: str) -> str:
    """The text without the source tables jax writes before the computations (file names,
    lines and stack frames of the Python that traced the program: another checkout of the
    same code gives another text for the same program)."""
    keep, skipping = [], False
    for line in text.splitlines():
        if line.strip() in _DEBUG_TABLES:
            skipping = True
        elif skipping and (line.startswith(("%", "ENTRY", "HloModule")) or not line.strip()):
            skipping = False
        if not skipping:
            keep.append(line)
    return "\n".join(keep)


def _renumbered(text: str) -> str:
    """The text without metadata and source tables, its %names replaced by their order of
    first appearance."""
    seen: dict[str, str] = {}

    def name(m: re.Match) -> str:
        return seen.setdefault(m.group(0), f"%v{len(seen)}")

    return _NAME.sub(name, _METADATA.sub("", _without_debug_tables(text)))


def _order(graph) -> str:
    """Digest of the schedule as the simulator reads it: per region, each non-compute op
    (collective, start, done) with the count of compute ops scheduled since the last."""
    parts = []
    for r in graph.regions:
        run, seq = 0, []
        for op in r.ops:
            if op.kind == "compute":
                run += 1
                continue
            seq.append(f"{run}:{op.kind}:{op.opcode}")
            run = 0
        parts.append(f"{r.repeat}[{','.join(seq)}|{run}]")
    return _digest(";".join(parts))


def summary(text: str, graph) -> dict[str, Any]:
    kinds: dict[str, Counter] = {"async": Counter(), "sync": Counter()}
    for c in graph.collectives:
        kinds["async" if c.async_ else "sync"][c.kind] += c.repeat
    return {"async": dict(sorted(kinds["async"].items())),
            "sync": dict(sorted(kinds["sync"].items())),
            "fusions": len(_FUSION.findall(text)),
            "ops": sum(len(r.ops) * r.repeat for r in graph.regions),
            "order": _order(graph), "text": _digest(_renumbered(text)),
            "raw": _digest(text)}


_GRAPH_FIELDS = ("async", "sync", "fusions", "ops", "order")


def changes(base: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    if other["raw"] == base["raw"] or other["text"] == base["text"]:
        program = "identical"
    elif all(other[k] == base[k] for k in _GRAPH_FIELDS):
        program = "attributes only"
    else:
        program = "changed"
    out: dict[str, Any] = {"program": program}
    for kind in ("async", "sync"):
        names = sorted(set(base[kind]) | set(other[kind]))
        delta = {k: other[kind].get(k, 0) - base[kind].get(k, 0) for k in names}
        out[kind] = {k: d for k, d in delta.items() if d}
    out["fusions"] = other["fusions"] - base["fusions"]
    out["ops"] = other["ops"] - base["ops"]
    out["order"] = "same" if other["order"] == base["order"] else "changed"
    out["words"] = _words(program, out)
    return out


def _words(program: str, d: dict[str, Any]) -> str:
    if program == "identical":
        return "no change to the compiled program"
    if program == "attributes only":
        return "attributes only: the same collectives, fusions and schedule"
    said = [f"{n:+d} async {k}" for k, n in d["async"].items()]
    said += [f"{n:+d} sync {k}" for k, n in d["sync"].items()]
    if d["fusions"]:
        said.append(f"{d['fusions']:+d} fusions")
    if d["order"] == "changed":
        said.append("schedule order changed")
    return ", ".join(said) or "other changes (op count)"

"""Named sets of libtpu compiler flags (LIBTPU_INIT_ARGS) a program can be compiled under.

The same sharding compiles into different programs under different flags: which collectives
become asynchronous, what they fuse with, how the latency-hiding scheduler orders them.
This is the catalogue the planner chooses from (docs/planner.md, "Compiler flags"):

    "none"                    no flags beyond jaxenv's (the scoped VMEM limit)
    "maxdiffusion-wan"        MaxDiffusion's published Wan inference set (README)
    "maxdiffusion-tpu7x"      MaxDiffusion's tuned TPU7x set (end_to_end/tpu)
    "<flag name>"             each flag of the published sets alone, e.g.
                              "xla_enable_async_all_reduce"

Each set carries its source (file and commit of MaxDiffusion), read from compile_flags.json.

    lookup(name) -> FlagSet           UserError (one line, the names offered) for a bad name
    published(generation) -> FlagSet  MaxDiffusion's set for that chip generation
    search_sets(generation) -> list   none, the published set, each of its flags alone,
                                      then the rest of the catalogue
    env_value(base, flags) -> str     LIBTPU_INIT_ARGS for a worker: base, then the flags

libtpu reads LIBTPU_INIT_ARGS once, when it loads into a process: a program compiled under a
set must be compiled in a process started with it (executor.py keeps one worker pool per
set), never in the planner's own process.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass

from aoizora.errors import UserError

NONE = "none"


@dataclass(frozen=True)
class FlagSet:
    name: str
    flags: tuple[str, ...]        # "--xla_...=value", in the order published
    source: str                   # where the set (or the flag) was published

    def to_dict(self) -> dict:
        return {"name": self.name, "flags": list(self.flags), "source": self.source}


@functools.lru_cache(maxsize=None)
def _document() -> dict:
    with open(os.path.join(os.path.dirname(__file__), "compile_flags.json")) as f:
        return json.load(f)


def flag_name(flag: str) -> str:
    """"--xla_foo=true" -> "xla_foo"."""
    return flag.lstrip("-").partition("=")[0]


@functools.lru_cache(maxsize=None)
def catalogue() -> dict[str, FlagSet]:
    """Every named set: none, the published sets, each of their flags alone."""
    doc = _document()
    out = {NONE: FlagSet(NONE, (), "no flags beyond aoizora's scoped VMEM limit")}
    for name, s in doc["sets"].items():
        out[name] = FlagSet(name, tuple(s["flags"]), f"{doc['repository']} {s['source']}")
    for name, s in doc["sets"].items():
        for flag in s["flags"]:
            one = flag_name(flag)
            if one not in out:
                out[one] = FlagSet(one, (flag,), f"alone, from the set {name!r}")
    return out


def lookup(name: str) -> FlagSet:
    sets = catalogue()
    if name not in sets:
        named = [n for n in sets if n == NONE or n in _document()["sets"]]
        raise UserError(f"unknown compiler flag set {name!r}: use one of "
                        f"{', '.join(named)}, or one flag of them by name "
                        f"(aoizora.compile.compile_flags.catalogue() lists all {len(sets)})")
    return sets[name]


def published(generation: str) -> FlagSet:
    """MaxDiffusion's published set for a chip generation (UserError for one it has none
    for)."""
    for name, s in _document()["sets"].items():
        if generation in s["generations"]:
            return catalogue()[name]
    raise UserError(f"MaxDiffusion publishes no compiler flag set for {generation}: "
                    "use --flags none")


def search_sets(generation: str) -> list[FlagSet]:
    """What --flags search compiles, in this order (a budget keeps a prefix): none, the
    published set of the generation, each of its flags alone, then the other published
    sets and each of their flags alone (a flag tuned for one generation may still change
    another's program)."""
    pub = published(generation)
    first = [catalogue()[NONE], pub] + [catalogue()[flag_name(f)] for f in pub.flags]
    names = {s.name for s in first}
    return first + [s for s in catalogue().values() if s.name not in names]


def env_value(base: str, flags: tuple[str, ...]) -> str:
    """LIBTPU_INIT_ARGS with `flags` after `base`."""
    return " ".join([base.strip(), *flags]).strip()

"""Byte sizes as `aoizora measure collectives --sizes` takes them.

    parse_size("64MiB") -> 67108864     (B, KiB, MiB, GiB; a bare number is bytes)
    parse_sizes("1KiB..64MiB") -> [1024, 4096, ..., 67108864]   powers of 4 from the first
        to the last (the last included when it is one); "1KiB,16MiB" -> exactly those.
    fmt(67108864) -> "64MiB"

Every size is a positive multiple of 4 (whole f32 elements); UserError (one line) otherwise.
"""

from __future__ import annotations

import re

from aoizora.errors import UserError

_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}
_SIZE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
DEFAULT_TPU = "1KiB..64MiB"
DEFAULT_CPU = "1KiB..4MiB"   # a harness check: the large sizes only cost host memory


def parse_size(text: str, flag: str = "--sizes") -> int:
    m = _SIZE.match(text)
    if not m or m.group(2).lower() not in _UNITS:
        raise UserError(f"{flag} {text!r}: expected a size such as 1024, 4KiB or 64MiB")
    n = int(m.group(1)) * _UNITS[m.group(2).lower()]
    if n <= 0 or n % 4:
        raise UserError(f"{flag} {text!r}: {n} bytes is not a positive whole number of f32 "
                        "elements (a multiple of 4)")
    return n


def parse_sizes(text: str, flag: str = "--sizes") -> list[int]:
    if ".." in text:
        lo_text, _, hi_text = text.partition("..")
        lo, hi = parse_size(lo_text, flag), parse_size(hi_text, flag)
        if hi < lo:
            raise UserError(f"{flag} {text}: the range runs from the smaller size to the larger")
        out = [lo]
        while out[-1] * 4 <= hi:
            out.append(out[-1] * 4)
        return out
    sizes = [parse_size(t, flag) for t in text.split(",") if t.strip()]
    if not sizes:
        raise UserError(f"{flag} {text!r}: give sizes such as 1KiB..64MiB or 1KiB,16MiB")
    return sorted(set(sizes))


def fmt(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"

"""Text that fits the terminal: every command's human output goes through here so that at
the terminal's width no line runs over, no number or name is cut to "...", and no word is
split across lines (a table that cannot hold its words whole says so, and its caller moves
a wide column beneath or abbreviates it).

    width(file=None) -> int      COLUMNS where set (as rich and shutil read it), else the
                                 terminal's width when `file` is one, else 80
    wrap(text, width, indent="", hang=None) -> [str]
                                 `text` broken at spaces only, first line after `indent`,
                                 the next after `hang` (default: `indent` and two spaces);
                                 a word longer than the line stays whole on its own line
    whole(name) -> str           `name` that wrap keeps on one line
    lines(text, width, hang=None) -> [str]
                                 each line of `text` wrapped, its leading spaces its indent
    echo(text, file=None, hang=None)
                                 print(text) wrapped to width(file), keeping its indent
    fit_table(table, console) -> bool
                                 sets each rich column's width so the table fits the
                                 console's width with every word whole; False (widths left
                                 as they were) where even the longest words cannot fit
    fit_columns(build, columns, movable, console) -> (table, moved, fits)
                                 build(columns) -> rich Table, fitted with every column,
                                 then without each of `movable` in turn (the caller lists
                                 the `moved` ones beneath it) until its words fit whole

Pure text: no colour, nothing measured but characters.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap

DEFAULT_WIDTH = 80   # columns where neither COLUMNS nor a terminal says (rich's default too)


def width(file=None) -> int:
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    file = file or sys.stdout
    try:
        if file.isatty():
            return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    except (AttributeError, ValueError):   # a closed or file-less stream
        pass
    return DEFAULT_WIDTH


_GLUE = "\u00a0"   # a space no line breaks at (textwrap breaks at ASCII whitespace only)


def whole(name: str) -> str:
    """`name` kept on one line by wrap, its spaces printed as spaces ("axes x|y")."""
    return name.replace(" ", _GLUE)


def wrap(text: str, width: int, indent: str = "", hang: str | None = None) -> list[str]:
    hang = indent + "  " if hang is None else hang
    out = textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=hang,
                        break_long_words=False, break_on_hyphens=False) or [indent.rstrip()]
    return [line.replace(_GLUE, " ") for line in out]


def lines(text: str, width: int, hang: str | None = None) -> list[str]:
    """Each line of `text` wrapped to `width`, its leading spaces kept as its indent."""
    out = []
    for line in text.split("\n"):
        body = line.lstrip(" ")
        out += wrap(body, width, line[:len(line) - len(body)], hang)
    return out


def echo(text: str, file=None, hang: str | None = None) -> None:
    file = file or sys.stdout
    for line in lines(text, width(file), hang):
        print(line, file=file)


def _plain(console, cell) -> str:
    from rich.text import Text

    if isinstance(cell, Text):
        return cell.plain
    return console.render_str(cell).plain if isinstance(cell, str) else str(cell)


def _bounds(console, column) -> tuple[int, int]:
    """(narrowest, widest) content width of a column: its longest word or header line (its
    longest line where it must not wrap) and its longest line. A header's lines stay whole:
    a heading broken word by word ("90" / "%," / "P") reads worse than a column beneath."""
    from rich.cells import cell_len

    head = _plain(console, column.header).split("\n")
    cells = [line for c in column.cells for line in _plain(console, c).split("\n")]
    widest = max((cell_len(line) for line in head + cells), default=1)
    if column.no_wrap:
        return widest, widest
    words = [w for line in cells for w in line.split()]
    return max((cell_len(w) for w in words + head), default=1), widest


def _overhead(console, table) -> int:
    """Columns the table takes beside its cells' content: padding, separators, edges."""
    from rich.measure import Measurement

    return Measurement.get(console, console.options.update_width(10_000), table).maximum \
        - sum(c.width for c in table.columns)


def fit_table(table, console) -> bool:
    bounds = [_bounds(console, c) for c in table.columns]
    before = [c.width for c in table.columns]
    widths = [hi for _, hi in bounds]
    for c, w in zip(table.columns, widths):
        c.width = w
    room = console.width - _overhead(console, table)
    if sum(lo for lo, _ in bounds) > room:
        for c, w in zip(table.columns, before):
            c.width = w
        return False
    while sum(widths) > room:   # narrow the widest column that can still wrap, by one
        i = max((i for i, (lo, _) in enumerate(bounds) if widths[i] > lo),
                key=lambda i: widths[i])
        widths[i] -= 1
    for c, w in zip(table.columns, widths):
        c.width = w
    return True


def fit_columns(build, columns, movable, console):
    columns, moved = list(columns), []
    table = build(columns)
    fits = fit_table(table, console)
    for col in movable:
        if fits:
            break
        columns.remove(col)
        moved.append(col)
        table = build(columns)
        fits = fit_table(table, console)
    return table, moved, fits

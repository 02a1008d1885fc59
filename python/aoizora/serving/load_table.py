"""The under-load rows (load.py) as text at the terminal's width (terminal.py): a heading
that states the stream and the policy, a table (one line a configuration: capacity,
utilisation, p50 / p90 / p99 ("overloaded" where the rate is over the capacity), cost per
video, whether it meets the p99 bound), the rows without figures and why, and the pick.

    lines(load_rows, load, chosen, bound_s, console) -> [str]   the table rendered, then
        the lines beneath it, each fitted to console.width

Every figure is simulated; the heading says so.
"""

from __future__ import annotations

from aoizora.serving.load import Load, LoadRow

# Columns in order; those in _BENEATH leave the table, first one first, where it is too
# narrow for every word whole (each is then listed beneath, a line a row).
_COLUMNS = ("slice", "split", "B", "capacity\nper hour", "busy", "p50 s", "p90 s", "p99 s",
            "USD /\nvideo", "p99\nbound")
_RIGHT = ("B", "capacity\nper hour", "busy", "p50 s", "p90 s", "p99 s", "USD /\nvideo")
_BENEATH = ("p50 s", "p99\nbound", "p90 s")


def heading(load: Load) -> str:
    source = (f"Poisson, seed {load.seed}" if load.source == "poisson"
              else f"the trace {load.source}")
    return (f"under load: {load.rate_per_hour:,.4g} requests per hour ({source}), "
            f"{load.requests:,} requests measured after {load.warmup:,} warm-up, batch "
            f"wait {load.wait_s:g} s (simulated)")


def _verdict(r: LoadRow, bound_s: float | None) -> str:
    if r.p99_s is None:
        return "-"
    if not r.stable or bound_s is None:
        return "-"
    return "meets" if r.p99_s <= bound_s else "over"


def _seconds(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}" if x >= 1000 else f"{x:.4g}"


def _cells(r: LoadRow, bound_s: float | None) -> dict[str, str]:
    """One row's cells; an overloaded row's percentiles are left out (they grow with the
    number of requests simulated), its p99 cell says so."""
    over = r.p99_s is not None and not r.stable
    return {"slice": r.topology, "split": r.split, "B": str(r.batch),
            "capacity\nper hour": "-" if r.capacity_per_hour is None
            else f"{r.capacity_per_hour:,.1f}",
            "busy": "-" if r.utilisation is None else f"{r.utilisation:.0%}",
            "p50 s": "-" if over else _seconds(r.p50_s),
            "p90 s": "-" if over else _seconds(r.p90_s),
            "p99 s": "overloaded" if over else _seconds(r.p99_s),
            "USD /\nvideo": "-" if r.usd_per_video is None else f"{r.usd_per_video:.3g}",
            "p99\nbound": _verdict(r, bound_s)}


def _table(cells: list[dict[str, str]], columns):
    from rich import box
    from rich.table import Table
    from rich.text import Text

    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for col in columns:
        t.add_column(col, justify="right" if col in _RIGHT else "left")
    for c in cells:
        t.add_row(*(Text(c[col]) for col in columns))
    return t


def lines(rows: list[LoadRow], load: Load, chosen, bound_s: float | None,
          console) -> list[str]:
    """The heading, the table, what did not fit it, the rows without figures and the pick
    (`chosen`: a frontier.Pick, or None without a bound), every line within console.width."""
    from aoizora import terminal

    cells = [_cells(r, bound_s) for r in rows]
    table, beneath, _ = terminal.fit_columns(lambda cols: _table(cells, cols), _COLUMNS,
                                             _BENEATH, console)
    with console.capture() as capture:
        console.print(table)
    rest = []
    for col in beneath:
        rest.append(f"{col.replace(chr(10), ' ')}:")
        rest += [f"  {c['slice']} {c['split']} B={c['B']}: {c[col]}" for c in cells
                 if c[col] != "-"]
    rest += [f"not simulated: {r.split} on {r.topology} at batch {r.batch}: {r.why_not}"
             for r in rows if r.p99_s is None]
    if load.wait_s > 0 and all(r.batch == 1 for r in rows):
        rest.append(f"note: --batch-wait {load.wait_s:g} s changes nothing at batch 1 (a "
                    "call of one request is full at once)")
    if chosen is not None:
        rest.append(f"pick (--p99 {bound_s:g} s): {chosen.why}")
    out = terminal.lines(heading(load), console.width)
    out += capture.get().rstrip("\n").split("\n")
    return out + (terminal.lines("\n".join(rest), console.width) if rest else [])

"""One transformer block of a simulated forward, per device: when each device computes,
communicates, or waits for the members of its group, as JSON-ready data for the report.

The simulator records the timeline of a run (per device: compute, collective wait,
collective communication slices); its Chrome/Perfetto trace is where Python reads it. The
block is one steady-state trip of the block loop (step_split.block_loop): the second trip
the simulator ran for real when it ran three or more, else the first. A trip starts, on
every device, at the first op of the loop body; the window runs from the earliest device's
start of that trip to the earliest device's start of the next. A program without a loop is
shown whole.

    block_timeline(graph, topology, device_of) -> {
        "what": "block 2 of 30", "start_s": s, "end_s": s,   (seconds into the forward)
        "devices": ["chip 0 (0,0,0)", ...],                  (trace row names, in order)
        "slices": [[row, start_s, end_s, kind], ...]}        (times from start_s; kind
                                                              compute | comm | wait)
Consecutive slices of one kind are joined (op names are in the Perfetto trace, --trace);
gaps between a device's slices are idle time. Figures are simulated, never measured.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from aoizora import _core
from aoizora.planning.step_split import block_loop

KINDS = ("compute", "comm", "wait")
_JOIN_S = 1e-12  # slices of one kind closer than this are one slice


def _trace(graph, topology, device_of: list[int]) -> dict[str, Any]:
    sim = _core.simulate(graph, topology, device_of, record_timeline=True)
    with tempfile.TemporaryDirectory(prefix="aoizora-timeline-") as folder:
        path = os.path.join(folder, "trace.json")
        _core.write_sim_trace(sim, topology, path)
        with open(path) as f:
            return json.load(f)


def _rows(trace: dict[str, Any]) -> tuple[dict[int, str], dict[int, list[tuple]]]:
    """({device id: row name}, {device id: [(start_s, end_s, kind, name), ...]})."""
    names: dict[int, str] = {}
    slices: dict[int, list[tuple]] = {}
    for e in trace["traceEvents"]:
        if e.get("pid") != 1:
            continue
        if e["ph"] == "M" and e["name"] == "thread_name":
            names[e["tid"]] = e["args"]["name"]
        elif e["ph"] == "X":
            start = e["ts"] * 1e-6
            slices.setdefault(e["tid"], []).append(
                (start, start + e["dur"] * 1e-6, e["cat"], e["name"]))
    for row in slices.values():
        row.sort(key=lambda s: s[0])
    return names, slices


def _window(graph, slices: dict[int, list[tuple]], step: float) -> tuple[float, float, str]:
    """(start, end, what) of one steady-state block trip; the whole run without a loop."""
    i = block_loop(graph)
    if i is None:
        return 0.0, step, "the whole forward (the program has no block loop)"
    lp = graph.loops[i]
    for op in graph.regions[lp.first_region].ops:
        starts = [[s[0] for s in row if s[3] == op.name and s[2] == "compute"]
                  for row in slices.values()]
        runs = min(len(s) for s in starts)
        if runs >= 2:
            k = 1 if runs >= 3 else 0
            start = min(s[k] for s in starts)
            end = min(s[k + 1] for s in starts)
            return start, end, f"block {k + 1} of {lp.trip_count}"
    raise ValueError(f"no op of loop {lp.name} runs twice on every device in the timeline")


def block_timeline(graph, topology, device_of: list[int]) -> dict[str, Any]:
    """One block of the simulated forward of `graph` under `device_of` (module docstring)."""
    trace = _trace(graph, topology, device_of)
    names, slices = _rows(trace)
    start, end, what = _window(graph, slices, trace["otherData"]["step_seconds"])
    out: list[list] = []
    for row, tid in enumerate(sorted(slices)):
        last = None
        for s0, s1, kind, _ in slices[tid]:
            a, b = max(s0, start) - start, min(s1, end) - start
            if b <= a or kind not in KINDS:
                continue
            if last is not None and last[3] == kind and a - last[2] < _JOIN_S:
                last[2] = b  # one slice per run of the same kind: the picture shows kinds
            else:
                last = [row, a, b, kind]
                out.append(last)
    for s in out:
        s[1], s[2] = round(s[1], 12), round(s[2], 12)
    return {"what": what, "start_s": start, "end_s": end,
            "devices": [names.get(t, f"device {t}") for t in sorted(slices)], "slices": out}

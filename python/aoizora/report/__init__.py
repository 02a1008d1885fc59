"""The HTML report of a plan: one self-contained page that explains it, a pure function of
the plan (plan.json holds every figure it draws).

    render(plan, trace=None) -> str     (page.py: the sections)
    write_report(path, plan, trace=None)

One concept per file: page.py (the page and its sections), slices.py (the slice as SVG,
link loads on a shared colour scale), charts.py (matplotlib pictures: the step split, the
block timeline), tables.py (the tables).
"""

from __future__ import annotations

from aoizora.atomic import write_atomic
from aoizora.plan_format import Plan
from aoizora.report.page import render
from aoizora.report.slices import slice_svg

__all__ = ["render", "slice_svg", "write_report"]


def write_report(path: str, plan: Plan, trace: str | None = None) -> None:
    write_atomic(path, render(plan, trace))

"""The report's uncertainty section: the interval of the ranked figure (seconds per video, or
per forward) of the plan, each runner-up and each baseline, and, for a plan priced under
joint draws of the model (confidence.py), the plan's speedup over each row with its 90 %
interval drawn as a bar beside 1.0 and P(plan faster); a tie's speedup interval contains
1.0. A plan made with the error bands alone (intervals.py) shows those bands and their
ties; a plan made before intervals has no section."""

from __future__ import annotations

import html

from aoizora.planning import intervals
from aoizora.plan_format import Plan


def _row(label: str, iv: dict | None, tie: dict | None) -> str:
    if iv is None:
        return f"<tr><td>{html.escape(label)}</td><td colspan=\"5\">no interval</td></tr>"
    d = intervals.duration
    most = None if tie is None else tie["by_part_s"][tie["most"]]
    why = ("" if tie is None else f"tie; differs most in {tie['most']} "
           f"({'+' if most >= 0 else '-'}{d(abs(most))})")
    return (f"<tr><td>{html.escape(label)}</td><td>{d(iv['point_s'])}</td>"
            f"<td>{d(iv['low_s'])}</td><td>{d(iv['high_s'])}</td>"
            f"<td>{d(iv['high_s'] - iv['low_s'])}</td><td>{html.escape(why)}</td></tr>")


def section(plan: Plan) -> str:
    u = plan.uncertainty
    if not u:
        return ""
    if "draws" in u:
        return _drawn_section(plan, u)
    by = u["ranked_by"]
    tie_of = {(t["candidate"], t["placement"]): t for t in u["ties"]}
    rows = [_row(plan.choice.label("AoiZora plan"),
                 intervals.ranked_interval(plan.choice.extra, by), None)]
    rows += [_row(f"#{i + 2} {c.candidate}", intervals.ranked_interval(c.extra, by),
                  tie_of.get((c.candidate, c.placement))) for i, c in enumerate(plan.runners_up)]
    rows += [_row(c.label(tag), intervals.ranked_interval(c.extra, by),
                  tie_of.get((c.candidate, c.placement)))
             for tag, c in plan.baselines.items() if tag != "existing"]
    return f"""<section id="uncertainty">
<h2>How sure: intervals and ties</h2>
<p>{html.escape(intervals.sentence(plan) or "")}</p>
<p class="note">Each simulated figure's compute and exposed communication are scaled by the
largest out-of-sample error the calibration showed for that part on this generation (its
leave-one-out residuals; a part without one takes the largest band of the generations that
have one). A tie's interval overlaps the plan's: the model cannot tell them apart. Not
covered: {html.escape(u.get("not_covered", ""))}.</p>
<table><tr><th></th><th>{intervals.per(by)}</th><th>low</th><th>high</th><th>width</th>
<th>tie with the plan</th></tr>
{"".join(rows)}
</table>
</section>"""


_BAR_W = 220   # pixels of the speedup bar's axis


def _bar(sp: dict, lo: float, hi: float) -> str:
    """An inline SVG: the speedup's 90 % interval as a bar, its median as a tick, and 1.0 as
    a dashed line, on the axis [lo, hi] (log scale) shared by every row."""
    import math

    x = lambda v: _BAR_W * (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo))
    colour = "#999" if sp["tie"] else "#2a7"
    return (f'<svg width="{_BAR_W}" height="14" role="img" aria-label="speedup interval">'
            f'<line x1="{x(1.0):.1f}" x2="{x(1.0):.1f}" y1="0" y2="14" stroke="#c33" '
            f'stroke-dasharray="2,2"/><rect x="{x(sp["low"]):.1f}" y="4" '
            f'width="{max(1.0, x(sp["high"]) - x(sp["low"])):.1f}" height="6" fill="{colour}"/>'
            f'<line x1="{x(sp["median"]):.1f}" x2="{x(sp["median"]):.1f}" y1="1" y2="13" '
            'stroke="#000"/></svg>')


def _drawn_row(label: str, iv: dict | None, sp: dict | None, axis) -> str:
    d = intervals.duration
    span = "-" if iv is None else f"{d(iv['point_s'])} [{d(iv['low_s'])}, {d(iv['high_s'])}]"
    if sp is None:
        cells = '<td colspan="4">the plan</td>'
    else:
        cells = (f"<td>{sp['median']:.3f}x [{sp['low']:.3f}, {sp['high']:.3f}]</td>"
                 f"<td>{sp['p_faster']:.2f}</td><td>{'tie' if sp['tie'] else ''}</td>"
                 f"<td>{_bar(sp, *axis)}</td>")
    return f"<tr><td>{html.escape(label)}</td><td>{span}</td>{cells}</tr>"


def _drawn_section(plan: Plan, u: dict) -> str:
    by = u["ranked_by"]
    shown = [(f"#{i + 2} {c.candidate}", c) for i, c in enumerate(plan.runners_up)]
    shown += [(c.label(tag), c) for tag, c in plan.baselines.items() if tag != "existing"]
    ends = [v for _, c in shown if c.extra.get("speedup")
            for v in (c.extra["speedup"]["low"], c.extra["speedup"]["high"])]
    axis = (min(ends + [1.0]) / 1.05, max(ends + [1.0]) * 1.05)
    rows = [_drawn_row(plan.choice.label("AoiZora plan"),
                       intervals.ranked_interval(plan.choice.extra, by), None, axis)]
    rows += [_drawn_row(label, intervals.ranked_interval(c.extra, by), c.extra.get("speedup"),
                        axis) for label, c in shown]
    changes = "".join(f"<li>{html.escape(line)}</li>" for line in intervals.change_lines(plan))
    spreads = ", ".join(f"{s['figure']} {s['sigma']:.3f} ({s['basis']})" for s in u["spreads"])
    return f"""<section id="uncertainty">
<h2>How sure: the speedup over each row, across joint draws of the model</h2>
<p>{html.escape(intervals.sentence(plan) or "")}</p>
<ul id="changes">{changes or "<li>the plan changes nothing the user runs</li>"}</ul>
<p class="note">Every row is simulated again under the same {u['draws']} profiles of the
chip, each figure drawn log-normally around its value (spread, standard deviation of log:
{html.escape(spreads)}). The speedup is the row's time {intervals.per(by)} over the plan's in one
draw: figures the rows share cancel, so a ratio is surer than either time. A change to what
the user runs (the placement, the existing deployment, the compiler flags) is made only where
P(faster) &gt;= {u['defend_p']}. Not covered: {html.escape(u.get("not_covered", ""))}.</p>
<table><tr><th></th><th>{intervals.per(by)} [90 %]</th><th>plan's speedup [90 %]</th>
<th>P(plan faster)</th><th></th><th>speedup interval (dashed: 1.0)</th></tr>
{"".join(rows)}
</table>
</section>"""

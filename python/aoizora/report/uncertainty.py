"""The report's uncertainty section: the interval of the ranked figure (seconds per video, or
per forward) of the plan, each runner-up and each baseline, from the generation's error
bands (intervals.py, error_bands.py), which of them tie the plan (their intervals overlap)
and the part that separates each from it. A plan made before intervals has no section."""

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
<table><tr><th></th><th>{html.escape(by)}</th><th>low</th><th>high</th><th>width</th>
<th>tie with the plan</th></tr>
{"".join(rows)}
</table>
</section>"""

"""The report's hardware section: which profile priced the plan and, per field, whether its
figure is fitted to published measurements, derived from fitted generations by a stated rule,
or nominal (field_basis.py), so a reader sees what the simulated figures rest on."""

from __future__ import annotations

import html

from aoizora.plan_format import Plan

# The figures a plan's choice turns on: its shardings and placements differ in the
# communication they expose, which the link bandwidth prices. Where one is nominal the page
# warns in red; every profile has other nominal figures (the vendor's peaks, the attention
# kernel's figures), which the table lists without alarm.
DECISIVE = ("link_bandwidth",)


def _warning(basis: dict) -> str:
    """The red line: the decisive figures that are nominal, by name ("" where every one is
    fitted or derived); a profile that states no basis is nominal throughout."""
    if not basis["stated"]:
        return ('<p class="missing">This plan rests on nominal figures: its profile does not '
                "say which of its figures are fitted.</p>\n")
    named = [f for f in DECISIVE if f in basis["nominal"]]
    if not named:
        return ""
    return (f'<p class="missing" id="nominal-warning">This plan rests on nominal figures: '
            f"{html.escape(', '.join(named))} (below) is no fit to any measurement of this "
            "generation, and the communication that separates one plan from another is "
            "priced by it.</p>\n")


def section(plan: Plan, missing) -> str:
    """`missing(what)`: the report's paragraph for a record an older plan lacks."""
    basis = plan.topology.get("hardware_basis")
    label = html.escape(str(plan.topology.get("hardware", "?")))
    if basis is None:
        return (f'<section id="hardware">\n<h2>Hardware profile</h2>\n<p>{label}</p>\n'
                + missing("which figures of its hardware profile are fitted, derived or "
                          "nominal") + "\n</section>")
    if not basis["stated"]:
        rows = ('<tr><td colspan="3">the profile does not say: treat every figure as '
                "nominal</td></tr>")
    else:
        rows = "\n".join(
            [f"<tr><td>{html.escape(f)}</td><td>fitted</td><td></td></tr>"
             for f in basis["fitted"]]
            + [f"<tr><td>{html.escape(d['field'])}</td><td>derived</td><td>from "
               f"{html.escape(d['from'])}: {html.escape(d['rule'])}</td></tr>"
               for d in basis["derived"]]
            + [f"<tr><td>{html.escape(f)}</td><td>nominal</td><td>vendor or REFERENCE "
               "figure, not fitted</td></tr>" for f in basis["nominal"]])
    warn = _warning(basis)
    return f"""<section id="hardware">
<h2>Hardware profile</h2>
<p>Figures from <code>{label}</code>; each is fitted to published measurements of the
generation, derived from fitted generations by a stated rule, or nominal.</p>
{warn}<table><tr><th>field</th><th>basis</th><th>rule</th></tr>
{rows}
</table>
</section>"""

"""The report's compiler flags section: the libtpu flags the plan runs under (plan.json's
"flags", planning/flag_search.py) and, with --flags search, each flag set's simulated step
and exposed communication beside what it changed in the compiled program."""

from __future__ import annotations

import html

from aoizora.plan_format import Plan
from aoizora.planning import flag_search


def section(plan: Plan, missing) -> str:
    """`missing(what)`: the report's paragraph for a record an older plan lacks."""
    f = plan.flags
    if not f:
        return ('<section id="flags">\n<h2>Compiler flags</h2>\n'
                + missing("which compiler flags the plan was compiled under") + "\n</section>")
    c = f["chosen"]
    said = (f"<p>Mode <code>{html.escape(f['mode'])}</code>: the plan runs under "
            f"<code>{html.escape(c['name'])}</code>"
            + (f" (<code>{html.escape(' '.join(c['flags']))}</code>)" if c["flags"] else "")
            + f". Source: {html.escape(c['source'])}.</p>")
    rows = "\n".join(
        f"<tr><td>{html.escape(r['candidate'])}</td><td>{html.escape(r['flag_set'])}</td>"
        f"<td>{html.escape(r['placement'])}</td><td>{r['simulated_s'] * 1e3:.3f}</td>"
        f"<td>{r['exposed_comm_s'] * 1e3:.3f}</td><td>{html.escape(r['changed'])}</td>"
        f"<td>{'yes' if r['ranked'] else 'no: the same program as none'}</td></tr>"
        for r in flag_search.table(f))
    table = ("" if not rows else
             "<table><tr><th>sharding</th><th>flag set</th><th>placement</th>"
             "<th>simulated step ms</th><th>exposed comm. ms</th><th>what changed</th>"
             f"<th>ranked</th></tr>\n{rows}\n</table>")
    budget = f.get("search", {}).get("budget")
    stated = ("" if not budget else
              f"<p class=\"note\">Budget: at most {budget['max_compiles']} compiles under flags; "
              f"{budget['compiles']} made; left out: "
              f"{html.escape(', '.join(budget['left_out']) or 'none')}.</p>")
    return f"""<section id="flags">
<h2>Compiler flags</h2>
{said}
{stated}{table}
<p class="note">Simulated, not measured. {html.escape(f.get('not_flagged', ''))}.</p>
</section>"""

"""The report page: one self-contained HTML file (inline CSS and SVG, no script, nothing
fetched), a pure function of the plan. Sections, each an element with an id the browser
test looks for:

    summary    what was planned, the choice, its placement in words, the placements that
               tie it and how the tie was broken (placement_ties), what Q1 and Q2 are
    video      seconds per video by part (text encoding, image conditioning, the steps, the
               VAE decode, the reshards), the plan and every baseline (stacked bars), and
               the stages' shardings
    why        the step split into compute and exposed communication per collective kind,
               per block and per forward, for the plan and every baseline (stacked bars)
    placement  the chosen placement beside JAX's default order for the same sharding, link
               loads on one colour scale; where each mesh axis runs; devices sharing a chip
    timeline   one transformer block per device from the simulator; the Perfetto trace
    uncertainty  each compared figure's interval from the error bands and the ties
               (report/uncertainty.py; none for a plan made before intervals)
    baselines, runners-up, placements   the figures as tables
    flags      the compiler flags the plan runs under; with --flags search each flag set's
               simulated step and exposed communication, and what it changed (report/flags.py)

A section whose data the plan does not hold (a plan written before it existed) says so.
"""

from __future__ import annotations

import html
import os
from typing import Any

from aoizora.planning.placement_ties import tie_sentence
from aoizora.plan_format import Choice, Plan
from aoizora.report import charts, flags, hardware, tables, uncertainty
from aoizora.report.slices import scale_svg, slice_svg

STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1400px; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ccc; padding: 4px 8px; text-align: right; vertical-align: top; }
td:nth-child(-n+4), th:nth-child(-n+4) { text-align: left; }
#axes td, #axes th, #shared-chips td { text-align: left; }
.note { color: #666; font-size: 90%; }
.side { display: flex; flex-wrap: wrap; gap: 2em; align-items: flex-start; }
.side figure { margin: 0; max-width: 640px; }
figure { margin: 1em 0; }
/* a chart wider than the window shrinks to it (its axis and legend whole), never scrolls */
figure svg { max-width: 100%; height: auto; }
code.machine { color: #777; font-size: 85%; }
.missing { color: #a33; }
"""


def _missing(what: str) -> str:
    return (f'<p class="missing">This plan does not record {what}: plan again with this '
            "version of aoizora to see it.</p>")


def _summary(plan: Plan) -> str:
    c = plan.choice
    words = c.extra.get("placement_words")
    model = plan.model.get("name", "")
    said = tie_sentence(c)
    tie = f'<p id="tie">{html.escape(said)}</p>\n' if said else ""
    return f"""<section id="summary">
<h1>AoiZora plan</h1>
<p><b>{html.escape(model)}</b>, {html.escape(plan.workload_text())} on
<b>{html.escape(plan.topology['name'])}</b>.
Chosen: <b>{html.escape(c.candidate)}</b>, mesh {tables.mesh_text(c)};
placement: <b>{html.escape(words or c.placement)}</b>
(<code class="machine">{html.escape(c.placement)}</code>):
simulated {tables.ms(c.simulated_s)} ms per forward.</p>
{tie}<p class="note" id="terms">All latencies are predicted (Q1, Q2) or simulated on the model
of {html.escape(plan.topology.get('generation', 'the chip'))}; none is measured on hardware.
<b>Q1</b> is Stage 1's predicted step of a sharding, read from its StableHLO before
anything is compiled and blind to placement (every collective gets the best group shape the
slice offers); it chooses the shardings worth compiling. <b>Q2</b> is Stage 2's predicted
step of a sharding under one placement, read from the compiled HLO: each collective routed
on the slice's links, those that run at once sharing them (contention), communication
hidden under the compute its schedule overlaps; it ranks the placements. <b>Simulated</b>
is the flow-level simulator's step on the same program, which judges the best pairs.
Planning took {plan.planning.get('seconds', 0):.1f} s (measured).</p>
</section>"""


def _compared(plan: Plan) -> list[tuple[str, Choice, str | None]]:
    """(label, choice, baseline tag or None for the plan): the plan, then each baseline
    once ("existing" is the best of the tagged ones: the tags with its sharding and device
    order are marked)."""
    existing = plan.baselines.get("existing")
    rows = [(plan.choice.label("AoiZora plan"), plan.choice, None)]
    for tag, b in plan.baselines.items():
        if tag == "existing":
            continue
        best = existing is not None and (b.candidate, b.device_coords) == (
            existing.candidate, existing.device_coords)
        label = b.label(tag)
        rows.append((f"{label} (existing: the best deployment)" if best else label, b, tag))
    return rows


def _video(plan: Plan) -> str:
    v = plan.video
    if not v:
        return (f'<section id="video"><h2>Seconds per video</h2>'
                f'{_missing("seconds per video")}</section>')
    if "not_priced" in v:
        return (f'<section id="video"><h2>Seconds per video</h2><p class="note">Not priced: '
                f'{html.escape(v["not_priced"])}.</p></section>')
    priced = [(label, v if tag is None else v["baselines"].get(tag, {}))
              for label, _, tag in _compared(plan)]
    priced = [(label, r) for label, r in priced if r.get("parts")]
    rows = [(label, r["parts"]) for label, r in priced]
    keys = [k for k in charts.VIDEO_PARTS if any(k in p for _, p in rows)]
    head = "".join(f"<th>{html.escape(charts.VIDEO_PARTS[k][1])} s</th>" for k in keys)
    body = "\n".join(
        f"<tr><td>{html.escape(label)}</td>"
        + "".join(f"<td>{tables.seconds(r['parts'].get(k))}</td>" for k in keys)
        + f"<td>{tables.seconds(r.get('seconds'))}</td></tr>"
        for label, r in priced)
    stages = "".join(
        f"<li>{html.escape(name.replace('_', ' '))}: <code>{html.escape(s['sharding'])}</code>"
        f" ({html.escape(s['source'])}), {tables.seconds(s['simulated_s'])} s</li>"
        for name, s in v["stages"].items() if s)
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in v.get("notes", []))
    switch = v.get("expert_switch_step")
    return f"""<section id="video">
<h2>Seconds per video</h2>
<p>One video, {v['steps']} denoising steps ({html.escape(v.get('steps_source', ''))}):
simulated <b>{tables.seconds(v.get('seconds'))} s</b> for the plan{
    f"; Wan 2.2's low-noise expert from step {switch}" if switch is not None else ""}.
Every part is simulated on the model; each stage around the loop runs its own best sharding
(of those listed in plan.json's video.options), compiled once for the setting.</p>
<figure class="plot" id="video-split">{charts.video_split_svg(rows)}</figure>
<table><tr><th>row</th>{head}<th>total s</th></tr>
{body}</table>
<ul class="note">{stages}{notes}</ul>
</section>"""


def _why(plan: Plan) -> str:
    rows = [(label, c.extra["step_split"]) for label, c, _ in _compared(plan)
            if c.extra.get("step_split")]
    if not rows:
        return f'<section id="why"><h2>Why this plan</h2>{_missing("the step split")}</section>'
    kinds = charts._kinds(rows)
    head = "".join(f"<th>{html.escape(k)}<br>block</th><th>{html.escape(k)}<br>forward</th>"
                   for k in kinds)
    blocks = rows[0][1].get("blocks")
    per_block = (f"a block is one of the {blocks} trips of the block loop"
                 if blocks else "the program has no block loop, so no per-block figures")
    return f"""<section id="why">
<h2>Why this plan</h2>
<p class="note">Where one simulated forward goes: compute, and the communication no compute
hides (the simulator's critical path through each collective kind), per transformer block
and per forward; {per_block}. Shorter bars are faster.</p>
<figure class="plot" id="step-split">{charts.step_split_svg(rows)}</figure>
<table><tr><th>simulated ms</th>{head}<th>forward</th></tr>
{tables.split_rows(rows, kinds)}</table>
</section>"""


def _placement(plan: Plan) -> str:
    c = plan.choice
    dims = plan.topology["dims"]
    default = c.extra.get("jax_default")
    links = c.extra.get("link_bytes")
    if links is None:
        drawings = _missing("the link loads")
    else:
        other = default.get("link_bytes", []) if default else []
        peak = max((b for *_, b in links + other), default=0.0)
        chosen = (f'<figure><figcaption>AoiZora: {html.escape(c.extra.get("placement_words", c.placement))}'
                  f" (Q2 {tables.ms(c.q2_s)} ms, simulated {tables.ms(c.simulated_s)} ms)"
                  f"</figcaption>{slice_svg(dims, c.device_coords, c.mesh_shape, links, peak)}"
                  "</figure>")
        if default is None:
            beside = _missing("JAX's default order")
        elif "error" in default:
            beside = (f"<p>JAX has no default order for this mesh: "
                      f"{html.escape(default['error'])}</p>")
        else:
            beside = (f"<figure><figcaption>JAX's default order: "
                      f"{html.escape(default.get('placement_words', ''))} (Q2 "
                      f"{tables.ms(default.get('q2_s'))} ms, simulated "
                      f"{tables.ms(default.get('simulated_s'))} ms)</figcaption>"
                      f"{slice_svg(dims, default['device_coords'], c.mesh_shape, other, peak)}"
                      "</figure>")
        drawings = (f'<div class="side" id="slices">{chosen}{beside}</div>'
                    f'<figure>{scale_svg(peak)}</figure>')
    shared = tables.shared_chip_rows(c)
    sharing = (f"<h3>Devices that share a chip</h3><p class=\"note\">On "
               f"{html.escape(plan.topology.get('generation', ''))} a chip has two "
               "TensorCores, each a JAX device; collectives between them use the die-to-die "
               "link, not ICI.</p><table id=\"shared-chips\"><tr><th>chip</th><th>its devices "
               f"(logical coordinates)</th></tr>{shared}</table>" if shared else "")
    return f"""<section id="placement">
<h2>The placement beside JAX's default order</h2>
<p class="note">The same sharding under two device orders. Each chip shows its physical
coordinates and, in bold, its logical mesh coordinates ({', '.join(c.axis_names)}); each
link is coloured by the bytes the forward sends over it (predicted by Q2's routing), on one
scale for both drawings; a chip's square is coloured by the bytes between its two cores
where it has two. Hover for numbers.</p>
{drawings}
<h3>Where each mesh axis runs</h3>
<p class="note">The groups of a mesh axis are the devices whose logical coordinates differ
only along it; their collectives run on the links between them (on TPU7x, a group within one
chip uses the fast link between its two cores).</p>
<table id="axes"><tr><th>mesh axis</th><th>size</th><th>its groups</th>
<th>their shape on the slice</th></tr>{tables.axis_rows(c)}</table>
{sharing}
</section>"""


def _timeline(plan: Plan, trace: str | None) -> str:
    tl = plan.choice.extra.get("block_timeline")
    body = (f'<figure class="plot" id="block-timeline">{charts.timeline_svg(tl)}</figure>'
            if tl else _missing("a block timeline"))
    link = (f'<p>The whole forward, op by op: <a id="trace-link" href="{html.escape(trace)}">'
            f"{html.escape(os.path.basename(trace))}</a> (open it in "
            '<a href="https://ui.perfetto.dev">ui.perfetto.dev</a>).</p>' if trace else
            '<p class="note">Plan with <code>--trace FILE</code> for the Perfetto trace of '
            "the whole forward.</p>")
    what = html.escape(tl["what"]) if tl else "one block"
    return f"""<section id="timeline">
<h2>One transformer block, simulated</h2>
<p class="note">{what} of the chosen plan, per device: computing, communicating in a
collective, waiting for the other members of its group; white is idle.</p>
{body}
{link}
</section>"""


def _tables(plan: Plan) -> str:
    best = plan.choice.simulated_s
    runners = [(f"#{i + 2}", r) for i, r in enumerate(plan.runners_up)]
    return f"""<section id="baselines">
<h2>Against the baselines</h2>
<table>{tables.CHOICE_HEADER}{tables.choice_rows([(label, c) for label, c, _ in _compared(plan)], best)}
{tables.failed_rows(plan.planning.get("baselines_failed", {}))}</table>
</section>
<section id="runners-up">
<h2>Runner-up shardings</h2>
<table>{tables.CHOICE_HEADER}{tables.choice_rows(runners, best)}</table>
</section>
<section id="placements">
<h2>Placements of the chosen sharding</h2>
{_placement_table(plan.choice.extra.get("placements"))}
</section>"""


def _placement_table(placements: list[dict[str, Any]] | None) -> str:
    if placements is None:
        return _missing("the placements of the chosen sharding")
    return ("<table><tr><th>placement</th><th>Q2 ms</th><th>simulated ms</th></tr>"
            f"{tables.placement_rows(placements)}</table>")


def render(plan: Plan, trace: str | None = None) -> str:
    """The report of `plan`; trace: the Perfetto trace's address as the page should link it
    (relative to the page), None when there is none."""
    title = html.escape(plan.model.get("name", ""))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>AoiZora plan: {title}</title>
<style>{STYLE}</style></head><body>
{_summary(plan)}
{_video(plan)}
{_why(plan)}
{uncertainty.section(plan)}
{_placement(plan)}
{_timeline(plan, trace)}
{_tables(plan)}
{flags.section(plan, _missing)}
{hardware.section(plan, _missing)}
</body></html>
"""

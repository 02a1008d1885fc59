"""The plan on the terminal: what `aoizora plan` prints after planning and `aoizora compare`
prints of a plan. A pure function of the plan (plan.json holds every figure), drawn by rich
at the console's width: at 80 columns no two rows' labels read the same (every label is
whole, MaxDiffusion's recipes shortened as the legend beneath says), and each long note (a
baseline JAX cannot lay out, a stand-in, one not compared) is printed once, below the table.
No name or figure is cut or split inside a cell (terminal.fit_table): where the table cannot
hold them whole, the intervals, then the sharding and placement, go beneath it, a line a
row; prose wraps at spaces with a hanging indent.

    comparison_rows(plan) -> [Row]         the plan, then each baseline (compare --json)
    print_choice(plan, console=None)       the chosen sharding and placement, in words too,
                                           any placement that ties it, and its interval and
                                           the candidates tied with it (intervals.py)
    print_comparison(plan, console=None)   the table against the baselines, then its notes
    print_video(plan, console=None)        seconds per video by part (text encoding, the
                                           steps, the VAE decode, the reshards)
"""

from __future__ import annotations

import sys
from typing import NamedTuple

from aoizora.planning import intervals
from aoizora.plan_format import Plan
from aoizora.planning.placement_ties import tie_sentence

# Recipe tags as the table shows them (the legend beneath says so when one is used).
_SHORT_PREFIX = ("maxdiffusion-", "md-", "md-X: MaxDiffusion's recipe maxdiffusion-X")
_EXCLUDED_FROM_EXISTING = ("existing", "alpa-style", "oracle")


class Row(NamedTuple):
    """One row of the comparison: label as plan.json and compare --json name it (the tag,
    its notes in parentheses), figures in seconds, speedup = the row's simulated step over
    the plan's (None where either is missing)."""

    label: str
    sharding: str
    placement: str
    simulated_s: float | None
    speedup: float | None
    tag: str = ""
    notes: tuple[str, ...] = ()
    video_s: float | None = None     # simulated seconds per video (None: not priced)
    interval: dict | None = None     # the ranked figure's interval (intervals.py), or None
    tie: bool = False                # it ties the plan (intervals.py, confidence.py)
    drawn: dict | None = None        # the plan's speedup over it across the joint draws
                                     # (speedups.Speedup.record), or None


def comparison_rows(plan: Plan) -> list[Row]:
    """The plan, each baseline (Choice.label), then each baseline with no figures
    (planning["baselines_failed"]), which says why."""
    best = plan.choice.simulated_s
    c = plan.choice
    by = (plan.uncertainty or {}).get("ranked_by", intervals.PER_FORWARD)
    tied = {(t["candidate"], t["placement"]) for t in intervals.ties(plan)}
    rows = [Row(c.label("AoiZora"), c.candidate, c.placement, best, 1.0 if best else None,
                "AoiZora", tuple(c.notes()), plan.seconds_per_video(),
                intervals.ranked_interval(c.extra, by))]
    for tag, b in plan.baselines.items():
        speed = b.simulated_s / best if best and b.simulated_s else None
        rows.append(Row(b.label(tag), b.candidate, b.placement, b.simulated_s, speed, tag,
                        tuple(b.notes()), plan.seconds_per_video(tag),
                        intervals.ranked_interval(b.extra, by),
                        (b.candidate, b.placement) in tied,
                        None if (b.candidate, b.placement) == (c.candidate, c.placement)
                        else b.extra.get("speedup")))
    for tag, f in plan.planning.get("baselines_failed", {}).items():
        note = f"not compared: {f['why']}"
        rows.append(Row(f"{tag} ({note})", f["candidate"], "-", None, None, tag, (note,)))
    return rows


def existing_is(plan: Plan) -> str | None:
    """The recipe the "existing" row is: the first deployable baseline with its sharding,
    device order and simulated step (the planner's pick of the best deployment)."""
    e = plan.baselines.get("existing")
    if e is None:
        return None
    for tag, b in plan.baselines.items():
        if (tag not in _EXCLUDED_FROM_EXISTING and "no_default_order" not in b.extra
                and (b.candidate, b.device_coords, b.simulated_s)
                == (e.candidate, e.device_coords, e.simulated_s)):
            return tag
    return None


def _short(tag: str) -> str:
    prefix, short, _ = _SHORT_PREFIX
    return short + tag[len(prefix):] if tag.startswith(prefix) else tag


def _console(console):
    if console is not None:
        return console
    from rich.console import Console

    return Console(file=sys.stdout)


def _say(console, text: str, hang: str | None = None) -> None:
    """One line of prose at the console's width, broken at spaces only, its indent kept
    and its next lines indented beneath it."""
    from aoizora.terminal import wrap

    body = text.lstrip(" ")
    for line in wrap(body, console.width, text[:len(text) - len(body)], hang):
        console.print(line, markup=False, highlight=False, crop=False)


def print_choice(plan: Plan, console=None) -> None:
    """The chosen sharding, its mesh, its placement in words (plan.json's machine name
    beside), the device order, and the placements that tie it (placement_ties)."""
    console = _console(console)
    c = plan.choice
    words = c.extra.get("placement_words")
    line = lambda text, **_: _say(console, text, " " * 8)
    line(f"plan: {c.candidate}, mesh {'x'.join(map(str, c.mesh_shape))} "
         f"({', '.join(c.axis_names)})", markup=False, highlight=False)
    line(f"      placement: {words} ({c.placement})" if words else
         f"      placement: {c.placement}", markup=False, highlight=False)
    line(f"      device coords in mesh order: {[tuple(x) for x in c.device_coords]}",
         markup=False, highlight=False)
    tie = tie_sentence(c)
    if tie:
        line(f"      {tie}", markup=False, highlight=False)
    error = intervals.sentence(plan)
    if error:
        line(f"      {error}", markup=False, highlight=False)
    for change in intervals.change_lines(plan):
        line(f"      {change}", markup=False, highlight=False)
    hw = hardware_line(plan)
    if hw:
        line(f"      {hw}", markup=False, highlight=False)


def hardware_line(plan: Plan) -> str:
    """Which figures of the plan's hardware profile are fitted, derived or nominal
    (field_basis.py); "" for a plan that does not record it."""
    basis = plan.topology.get("hardware_basis")
    if basis is None:
        return ""
    from aoizora.hardware.field_basis import sentence

    head = (f"hardware {plan.topology.get('hardware', '?')}: rests on nominal figures"
            if basis["nominal"] or not basis["stated"] else
            f"hardware {plan.topology.get('hardware', '?')}: no nominal figure")
    return f"{head} ({sentence(basis)})"


def _table(plan: Plan, rows: list[Row], labels: list[str], ranged: str = "",
           where: bool = True):
    """The comparison table; `ranged` "interval" adds the ranked figure's interval with its
    tie mark, `where` the sharding and placement columns (where they fit: else
    _interval_lines and _where_lines print them beneath)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    t = Table(title=f"{plan.model['name']}, {plan.workload_text()} on {plan.topology['name']} "
                    f"(simulated on the {plan.topology['generation']} model)",
              box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    t.add_column("", no_wrap=True)  # labels whole; terminal.fit_table keeps names whole
    if where:
        t.add_column("sharding")
        t.add_column("placement")
    t.add_column("ms /\nforward", justify="right", no_wrap=True)
    t.add_column("AoiZora\nspeedup", justify="right", no_wrap=True)
    per_video = any(r.video_s is not None for r in rows)
    if per_video:  # plan.json's video.seconds: per call, one video at batch 1
        videos = plan.workload.get("videos_per_call") or 1
        t.add_column("s /\nvideo" if videos == 1 else f"s / call\nof {videos}",
                     justify="right", no_wrap=True)
    if ranged == "interval":  # the ranked figure's interval, or the speedup's; and ties
        name, scale = _interval_unit(plan, rows)
        t.add_column(_interval_header(plan, name), justify="right", no_wrap=True)
    for label, r in zip(labels, rows):
        cells = [Text(label), *([Text(r.sharding), Text(r.placement)] if where else []),
                 "-" if r.simulated_s is None else f"{r.simulated_s * 1e3:.2f}",
                 "-" if r.speedup is None else f"{r.speedup:.3f}x"]
        if per_video:
            cells.append("-" if r.video_s is None else f"{r.video_s:.4g}")
        if ranged == "interval":
            cells.append(_interval_cell(r, scale, _drawn(plan)) + (" tie" if r.tie else ""))
        t.add_row(*cells)
    return t


def _interval_unit(plan: Plan, rows: list[Row]) -> tuple[str, float]:
    """The intervals' unit, "us / video" and its seconds, from the plan's own figure."""
    unit, scale = intervals.unit(rows[0].interval["point_s"] if rows[0].interval else 1.0)
    per = "video" if plan.uncertainty["ranked_by"] == intervals.PER_VIDEO else "forward"
    return f"{unit} / {per}", scale


def _drawn(plan: Plan) -> bool:
    return "draws" in (plan.uncertainty or {})


def _interval_header(plan: Plan, unit_name: str) -> str:
    return "speedup 90 %,\nP(faster)" if _drawn(plan) else f"interval\n({unit_name})"


def _interval_cell(r: Row, scale: float, drawn: bool = False) -> str:
    """"1.50-1.94 P1.00": the plan's speedup over the row, its 90 % interval across the
    joint draws and P (a plan with draws; "-" on the plan's own row); else "12.3-14.5": the
    row's interval in the table's unit (`scale` seconds), three significant digits (whole
    numbers from 100)."""
    if drawn:
        return "-" if r.drawn is None else (
            f"{r.drawn['low']:.2f}-{r.drawn['high']:.2f} P{r.drawn['p_faster']:.2f}")
    if r.interval is None:
        return "-"
    num = lambda x: f"{x:.0f}" if x >= 100 else f"{x:.3g}"
    return "-".join(num(r.interval[k] / scale) for k in ("low_s", "high_s"))


def _interval_lines(plan: Plan, rows: list[Row], labels: list[str],
                    width: int = 10_000) -> list[str]:
    """The intervals beneath a table too narrow to hold them, one row each."""
    from aoizora.terminal import wrap

    name, scale = _interval_unit(plan, rows)
    w = max(len(label.split("\n")[0]) for label in labels)
    head = ("the plan's speedup, 90 % interval and P(faster); tie: it contains 1"
            if _drawn(plan) else f"interval ({name}; tie: it overlaps the plan's)")
    return wrap(f"{head}:", width, "", "  ") + [
        line for label, r in zip(labels, rows)
        for line in wrap(f"{label.split(chr(10))[0]:{w}}  "
                         f"{_interval_cell(r, scale, _drawn(plan))}{' tie' if r.tie else ''}",
                         width, "  ", " " * (w + 4))]


def _where_lines(rows: list[Row], labels: list[str], width: int) -> list[str]:
    """Each row's sharding and placement beneath a table too narrow to hold them whole."""
    from aoizora.terminal import whole, wrap

    w = max(len(label.split("\n")[0]) for label in labels)
    out = ["sharding @ placement:"]
    for label, r in zip(labels, rows):
        out += wrap(f"{label.split(chr(10))[0]:{w}}  {r.sharding} @ {whole(r.placement)}", width,
                    "  ", " " * (w + 4))
    return out


def _fitted_table(plan: Plan, rows: list[Row], labels: list[str], console):
    """(table, labels, ranged, where): the first layout whose every word fits the console
    whole: every column; the intervals beneath; the sharding and placement beneath (the
    intervals back in); both beneath. "existing = TAG" stays on its row's line where it
    fits, else goes on a line of its own."""
    from aoizora.terminal import fit_table

    existing = existing_is(plan)
    ranged = "interval" if plan.uncertainty else ""
    layouts = list(dict.fromkeys([(ranged, True), ("", True), (ranged, False), ("", False)]))
    tries = [labels]
    if existing:
        i = next(i for i, r in enumerate(rows) if r.tag == "existing")
        tries = [labels[:i] + [f"{labels[i]} = {_short(existing)}"] + labels[i + 1:],
                 labels[:i] + [f"{labels[i]}\n= {_short(existing)}"] + labels[i + 1:]]
    for rng, where in layouts:
        for shown in tries:
            table = _table(plan, rows, shown, rng, where)
            if fit_table(table, console):
                return table, shown, rng, where
    return table, shown, rng, where   # narrower than any label: as narrow as it goes


def print_comparison(plan: Plan, console=None) -> None:
    """The plan against each baseline, simulated: one row each, labelled by its tag (a
    MaxDiffusion recipe's shortened), "existing" with the recipe it is, [n] for a note;
    beneath, each note once whatever the number of rows it applies to, and the legend."""
    console = _console(console)
    rows = comparison_rows(plan)
    notes = list(dict.fromkeys(n for r in rows for n in r.notes))
    labels = [" ".join([_short(r.tag), *(f"[{notes.index(n) + 1}]" for n in r.notes)])
              for r in rows]
    existing = existing_is(plan)
    table, labels, ranged, where = _fitted_table(plan, rows, labels, console)
    console.print(table)
    beneath = []
    if plan.uncertainty and not ranged:   # the intervals and ties, one line each
        beneath += _interval_lines(plan, rows, labels, console.width)
    if not where:
        beneath += _where_lines(rows, labels, console.width)
    for line in beneath:
        console.print(line, markup=False, highlight=False, crop=False)
    below = [f"[{i + 1}] {n}" for i, n in enumerate(notes)]
    if any(_short(r.tag) != r.tag for r in rows):
        below.append(_SHORT_PREFIX[2])
    if existing:
        below.append(f"existing = {existing}: the fastest of the deployments listed that "
                     "JAX's default order can lay out, its row repeated")
    if _drawn(plan):
        u = plan.uncertainty
        below.append(f"speedup 90 %, P(faster): the plan's speedup "
                     f"{intervals.per(u['ranked_by'])} over the row across {u['draws']} joint draws of the model, and the share "
                     "of draws in which the plan is faster; tie: the interval contains 1")
    elif plan.uncertainty:
        below.append("interval: the ranked figure's, from the generation's leave-one-out "
                     "error bands (intervals.py); tie: it overlaps the plan's")
    for n in below:
        _say(console, n)


def _seconds(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s:.3f} s" if s >= 1 else f"{s * 1e3:.3f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} us"


def video_lines(plan: Plan) -> list[str]:
    """Seconds per video of the plan by part, in words (print_video, the report)."""
    v = plan.video
    if not v:
        return []
    if "not_priced" in v:
        return [f"seconds per video: not priced ({v['not_priced']})"]
    parts, stages, steps = v["parts"], v["stages"], v["steps"]
    where = lambda name: (stages.get(name) or {}).get("sharding", "none priced")
    switch = v.get("expert_switch_step")
    videos = v.get("videos_per_call") or 1
    rows = [(f"text encoding ({2 * videos} prompts)", parts["text_encoder_s"],
             where("text_encoder"))]
    if "conditioning_s" in parts:
        rows.append(("image conditioning", parts["conditioning_s"], ", ".join(
            where(k) for k in ("image_encoder", "vae_encode") if k in stages)))
    rows += [(f"{steps} steps", parts["denoising_s"],
             f"{steps} x {_seconds(v['step_s'])}"
             + (f"; low-noise expert from step {switch}" if switch is not None else "")),
            ("VAE decode", parts["vae_decode_s"], where("vae_decode")),
            ("reshards between stages", parts["reshard_s"], ""),
            ("total", v["seconds"], "")]
    if videos > 1:
        per = v.get("seconds_per_video")
        rows.append(("per video", per, f"total over the call's {videos} videos"))
    w = max(len(r[0]) for r in rows)
    what = (f"seconds per call of {videos} videos" if videos > 1 else "seconds per video")
    out = [f"{what} (simulated; {steps} steps: {v.get('steps_source') or '?'}):"]
    out += [f"  {name.ljust(w)}  {_seconds(sec).rjust(10)}  {how}".rstrip()
            for name, sec, how in rows]
    out += _runtime_lines(v)
    c = v.get("changed_choice")
    if c:
        out.append(f"  per video the plan beats {c['by_step']} @ {c['by_step_placement']}, the "
                   f"fastest per forward ({c['why']})")
    out += [f"  note: {n}" for n in v.get("notes", [])]
    return out


def _runtime_lines(v: dict) -> list[str]:
    """For a plan priced as MaxDiffusion runs it: what AoiZora's JAX runtime would save on
    the same pair (advice, priced: plan_video.jax_runtime_gain)."""
    gain = v.get("jax_runtime_gain")
    if v.get("runtime") != "maxdiffusion" or not gain:
        return []
    return [f"  priced as MaxDiffusion runs it; AoiZora's JAX runtime would save "
            f"{_seconds(gain['total_s'])} per video on this pair: the text encoder on the "
            f"slice ({gain['text_encoder_on']}, {_seconds(gain['text_encoder_s'])}), the VAE "
            f"on {gain['vae_decode_on']} ({_seconds(gain['vae_decode_s'])})"]


def print_video(plan: Plan, console=None) -> None:
    console = _console(console)
    for line in video_lines(plan):
        _say(console, line, "  " + " " * (len(line) - len(line.lstrip(" "))))

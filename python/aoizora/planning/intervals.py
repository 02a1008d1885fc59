"""Intervals of simulated latencies and the ties they make (error_bands.py gives the bands).

A simulated forward splits into compute and exposed communication on the simulator's
critical path (step_split.py). Its interval scales each part by its own band and adds:
low = C / (1 + Bc) + E / (1 + Bm), high = C / (1 - Bc) + E / (1 - Bm), with C compute, E
exposed communication, Bc and Bm the generation's compute and communication bands. An
"unattributed" remainder takes the wider band at both ends. Communication that compute
hides stays hidden at both ends: the interval is the critical path's, so a slower collective
that would outgrow the compute hiding it is not covered (every path scaled by the larger
band, max(kc, km) x the step, bounds that case).

A video (pipeline/plan_video.py parts) is its steps x the forward's interval, its reshards
in the communication band, and its stages (text encoder, conditioning, VAE decode: no split
is kept) in the wider band at both ends.

Ties: a candidate (runner-up or baseline) whose interval, in the figure the plan is ranked
by (per video where the plan has seconds per video, else per forward), overlaps the plan's
is a tie; what separates it from the plan is the part whose point figures differ most.

    forward(split, bands) -> dict | None   {"point_s", "low_s", "high_s", "compute_s",
                                           "exposed_comm_s", "other_s"}
    video(parts, steps, fwd, bands) -> dict | None
    overlap(a, b) -> bool
    annotate(plan, bands, rule, video_parts) -> None: each choice's extra["interval"] and
        plan.uncertainty (bands, rule, ranked_by, ties)
    ties(plan) -> [dict]                   plan.uncertainty["ties"], [] for an old plan
    sentence(plan) -> str | None           the intervals and ties in words
    per(by) -> str                         "per video" or "per forward": the label of a
                                           figure shown in its own unit (duration)
    change_lines(plan) -> [str]            the changes the plan considered (confidence.py)

Every figure is simulated or predicted and its interval derived; none is measured.
"""

from __future__ import annotations

from aoizora.hardware.error_bands import Bands

POINT, ROBUST = "point", "robust"
SHOWN = 4   # ties named in the sentence; plan.json and the report list every one
PER_VIDEO, PER_FORWARD = "seconds per video", "seconds per forward"
STAGES = ("text_encoder_s", "conditioning_s", "vae_decode_s")   # a video part outside the loop


def _wide(bands: Bands):
    return max(bands.communication, bands.compute, key=lambda b: b.rel)


def forward(split: dict | None, bands: Bands) -> dict | None:
    """The interval of one simulated forward from its step_split; None without one."""
    if not split or not split.get("forward_s"):
        return None
    parts = split["forward_s"]
    compute = parts.get("compute", 0.0)
    other = parts.get("unattributed", 0.0)
    comm = sum(v for k, v in parts.items() if k not in ("compute", "unattributed"))
    c, m, o = (bands.compute.bounds(compute), bands.communication.bounds(comm),
               _wide(bands).bounds(other))
    return {"point_s": split["step_s"], "low_s": c[0] + m[0] + o[0],
            "high_s": c[1] + m[1] + o[1], "compute_s": compute, "exposed_comm_s": comm,
            "other_s": other}


def video(parts: dict | None, steps: int, fwd: dict | None, bands: Bands) -> dict | None:
    """The interval of seconds per video from its parts; None while a part is missing."""
    if not parts or fwd is None or any(v is None for v in parts.values()):
        return None
    stages = sum(parts.get(k, 0.0) for k in STAGES)
    s, r = _wide(bands).bounds(stages), bands.communication.bounds(parts["reshard_s"])
    return {"point_s": sum(parts.values()),
            "low_s": steps * fwd["low_s"] + r[0] + s[0],
            "high_s": steps * fwd["high_s"] + r[1] + s[1],
            "compute_s": steps * fwd["compute_s"],
            "exposed_comm_s": steps * fwd["exposed_comm_s"] + parts["reshard_s"],
            "other_s": steps * fwd["other_s"] + stages}


def overlap(a: dict, b: dict) -> bool:
    return a["low_s"] <= b["high_s"] and b["low_s"] <= a["high_s"]


def ranked_interval(extra: dict, by: str) -> dict | None:
    """A choice's interval in the figure the plan is ranked by."""
    iv = extra.get("interval") or {}
    return iv.get("video" if by == PER_VIDEO else "forward")


_PARTS = (("compute", "compute_s"), ("communication", "exposed_comm_s"),
          ("stages and rest", "other_s"))


def separation(plan_iv: dict, other_iv: dict) -> dict:
    """How `other` differs from the plan, by part (its point figures minus the plan's,
    seconds), and the part that differs most."""
    by_part = {name: other_iv[key] - plan_iv[key] for name, key in _PARTS}
    most = max(by_part, key=lambda k: abs(by_part[k]))
    return {"by_part_s": by_part, "most": most}


def compared_rows(plan) -> list[tuple[str, str, object]]:
    """(role, name, Choice) of every candidate the plan compares with its choice, once each
    (the "existing" baseline repeats another; a runner-up that is a baseline's pair is named
    by its tag)."""
    seen = {(plan.choice.candidate, plan.choice.placement)}
    out = []
    for role, name, c in ([("baseline", t, c) for t, c in plan.baselines.items()
                           if t != "existing"]
                          + [("runner-up", c.candidate, c) for c in plan.runners_up]):
        key = (c.candidate, c.placement)
        if key in seen:
            continue
        seen.add(key)
        out.append((role, name, c))
    return out


def _ties(plan, by: str) -> list[dict]:
    mine = ranked_interval(plan.choice.extra, by)
    if mine is None:
        return []
    out = []
    for role, name, c in compared_rows(plan):
        iv = ranked_interval(c.extra, by)
        if iv is not None and overlap(mine, iv):
            out.append({"name": name, "role": role, "candidate": c.candidate,
                        "placement": c.placement, "point_s": iv["point_s"],
                        "low_s": iv["low_s"], "high_s": iv["high_s"],
                        **separation(mine, iv)})
    return sorted(out, key=lambda t: t["point_s"])


def annotate(plan, bands: Bands, rule: str, video_parts: dict | None = None) -> None:
    """Sets extra["interval"] ({"forward": ..., "video": ...}) on the plan's choice, its
    runners-up and baselines, and plan.uncertainty. `video_parts`: (candidate, placement)
    -> video parts of pairs the plan's video record does not hold (runners-up); the choice's
    and the baselines' are read from plan.video."""
    video_parts = video_parts or {}
    steps = plan.video.get("steps")
    recorded = {"choice": plan.video.get("parts")} | {
        t: v.get("parts") for t, v in plan.video.get("baselines", {}).items()}
    for key, c in ([("choice", plan.choice)] + [(None, c) for c in plan.runners_up]
                   + list(plan.baselines.items())):
        fwd = forward(c.extra.get("step_split"), bands)
        parts = recorded.get(key) or video_parts.get((c.candidate, c.placement))
        c.extra["interval"] = {"forward": fwd,
                               "video": video(parts, steps, fwd, bands) if steps else None}
    by = PER_VIDEO if ranked_interval(plan.choice.extra, PER_VIDEO) else PER_FORWARD
    plan.uncertainty = {"bands": bands.record(), "rule": rule, "ranked_by": by,
                        "ties": _ties(plan, by),
                        "not_covered": NOT_COVERED}


NOT_COVERED = ("the bands are the calibration's largest out-of-sample errors on a handful of "
               "points per generation, not a confidence level; hidden communication stays "
               "hidden; the kernel model's structural gaps (per-grid-step costs, VPU work) and "
               "wrapped tori, which no calibration point exercises, are not covered; a "
               "--hardware profile is given the bands of its generation's shipped fit")


def ties(plan) -> list[dict]:
    return (getattr(plan, "uncertainty", None) or {}).get("ties", [])


def unit(seconds: float) -> tuple[str, float]:
    """The unit a figure of about `seconds` reads best in: ("ms", 1e-3) and so on."""
    for name, scale in (("us", 1e-6), ("ms", 1e-3)):
        if abs(seconds) < 1000 * scale:
            return name, scale
    return "s", 1.0


def duration(x: float) -> str:
    """Three significant figures in the unit that reads best: "882 ms", "1.43 s"."""
    name, scale = unit(x)
    return f"{x / scale:.3g} {name}"


def span(iv: dict | None) -> str:
    """"[1.23 s, 1.57 s]", or "-" without an interval."""
    return "-" if iv is None else f"[{duration(iv['low_s'])}, {duration(iv['high_s'])}]"


def per(by: str) -> str:
    """The label of a ranked figure printed by duration or span: they choose the unit (us,
    ms, s), so the label names what the figure is per, never a unit."""
    return "per video" if by == PER_VIDEO else "per forward"


def _per_of(plan, by: str) -> str:
    """per(by), naming the call where the plan serves several videos per call (its
    video.seconds is per call)."""
    videos = (getattr(plan, "workload", None) or {}).get("videos_per_call") or 1
    return f"per call of {videos} videos" if by == PER_VIDEO and videos > 1 else per(by)


def sentence(plan) -> str | None:
    """The plan's interval, the rule that chose it, and its ties in words; None for a plan
    without intervals (made before they existed)."""
    u = getattr(plan, "uncertainty", None) or {}
    if not u:
        return None
    if "draws" in u:
        return _drawn_sentence(plan, u)
    by = u["ranked_by"]
    mine = ranked_interval(plan.choice.extra, by)
    b = u["bands"]
    rule = ("--robust: the lowest high end" if u["rule"] == ROBUST
            else "the best point figure")
    text = (f"Interval {_per_of(plan, by)}: {span(mine)} from {b['generation']}'s error "
            "bands, "
            f"communication ±{100 * b['communication']['rel']:.1f} % "
            f"({_basis(b['communication'])}), compute ±{100 * b['compute']['rel']:.1f} % "
            f"({_basis(b['compute'])}); chosen by {rule}.")
    tied = u["ties"]
    if not tied:
        return text + " No candidate's interval overlaps it."
    each = "; ".join(f"{t['name']} {span(t)}, differs most in {t['most']} "
                     f"({'+' if t['by_part_s'][t['most']] >= 0 else '-'}"
                     f"{duration(abs(t['by_part_s'][t['most']]))})" for t in tied[:SHOWN])
    return text + f" Ties (intervals overlap): {each}{_more(tied)}."


def _more(tied: list) -> str:
    """"; and 3 more (...)" for the ties beyond the SHOWN named in a sentence, else ""."""
    return (f"; and {len(tied) - SHOWN} more (plan.json's uncertainty.ties)"
            if len(tied) > SHOWN else "")


def _basis(band: dict) -> str:
    if band["basis"] == "derived":
        return f"derived from {band['from']}"
    return f"leave-one-out, worst {band['worst']}"


def _drawn_sentence(plan, u: dict) -> str:
    """The sentence of a plan priced under joint draws (confidence.py)."""
    by = u["ranked_by"]
    mine = ranked_interval(plan.choice.extra, by)
    text = (f"Interval {_per_of(plan, by)}: {span(mine)}, 90 % of {u['draws']} joint draws of "
            f"{u['generation']}'s figures (seed {u['seed']}); a row ties the plan where the "
            f"90 % interval of the plan's speedup over it contains 1.")
    tied = u["ties"]
    if not tied:
        return text + " No row ties it."
    each = "; ".join(f"{t['name']} {t['speedup']['low']:.3f}-{t['speedup']['high']:.3f}x "
                     f"(P = {t['speedup']['p_faster']:.2f})" for t in tied[:SHOWN])
    return text + f" Ties: {each}{_more(tied)}."


def change_lines(plan) -> list[str]:
    """Each change the plan considered to what the user runs, made or kept, in words."""
    u = getattr(plan, "uncertainty", None) or {}
    return [f"{c['what']}: {c['words']}" for c in u.get("changes", [])]

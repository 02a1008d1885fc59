"""The hardware model against published measurements of real TPUs: every point of
calibration/published.json, its published time, the time simulated before the fit (on the
nominal profile of its generation, calibration/nominal/<gen>.json, where there is one) and
after it (on the shipped profile, or on --hardware files), and both errors.

    PYTHONPATH=python:build/dev/pyroot .venv/bin/python bench/fidelity.py \
        [--data calibration/published.json] [--hardware FILE ...] [--json] [--leave-one-out]

Published figures were measured on real TPUs by their sources; the "simulated" columns are
our flow-level simulator on the model (one collective alone, partition i on chip i), not a
measurement. Nothing is fitted here (`aoizora calibrate` fits; docs/hardware-profiles.md).
A whole video (a "video" program) is also printed by part: its text encoder, steps x its
transformer step, VAE decode and reshards, before and after. Points marked held_out are
shown and left out of the worst error. A generation whose profile in use is not fitted is
marked "nominal" (its provenance note says why), and the worst error is given separately
for fitted and nominal profiles.

--leave-one-out refits each generation from its nominal profile (calibration/nominal/, its
fixed costs and hop latency derived first where it has no collective point, as `aoizora
calibrate` does) without each of its points in turn, with the calibration's own fit (leave_one_out.py), and
prints each point's in-sample error (fitted to every point) beside its leave-one-out error
(predicted by the fit without it), and the share of points within 20 % left out. A
generation with one point cannot be left out; its row says so. Held-out points are shown
after their generation's rows as checks: the fit to every used point never saw them, so its
prediction is their leave-one-out figure too; the share counts the used points only.

--record FILE (with --leave-one-out) also writes the residuals, aoizora.loo-residuals/1,
which error_bands.py turns into each generation's error bands (the shipped file is
python/aoizora/hardware/loo_residuals.json, written by this command on calibration/published.json).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

from aoizora.hardware import measurements  # noqa: E402


def _time(s: float) -> str:
    return f"{s:10.4f} s" if s >= 0.1 else f"{s * 1e6:10.2f}us"


def _size(b: int) -> str:
    if b == 0:
        return "-"
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale and b % (scale // 4) == 0:
            return f"{b / scale:g} {unit}"
    return f"{b} B"


NOMINAL = os.path.join(os.path.dirname(__file__), "..", "calibration", "nominal")


def _nominal(generation: str) -> str | None:
    path = os.path.join(NOMINAL, f"{generation}.json")
    return path if os.path.exists(path) else None


def _fitted(generation: str, hardware: dict[str, str]) -> bool:
    """Whether the profile in use for `generation` says it was fitted."""
    from aoizora.hardware import hardware_file

    if generation in hardware:
        with open(hardware[generation], encoding="utf-8") as f:
            return bool(json.load(f).get("provenance", {}).get("fitted", False))
    return bool(hardware_file.shipped(generation)["provenance"]["fitted"])


def _parts(video, hardware: str | None) -> dict:
    """A video's simulated seconds by part (program_points.VideoParts) and their sum."""
    parts = video.parts(hardware)
    return {**dataclasses.asdict(parts), "total_s": parts.total_s}


def rows(points, hardware: dict[str, str]) -> list[dict]:
    out = []
    for p in points:
        sim = p.simulate(hardware.get(p.generation))
        nominal = _nominal(p.generation)
        before = p.simulate(nominal) if nominal else sim
        if hasattr(p, "parts"):   # a whole video: its parts before and after, for the table
            parts = {"parts_before": _parts(p, nominal), "parts_after": _parts(
                p, hardware.get(p.generation))}
        else:
            parts = {}
        out.append({**parts, "id": p.id, "generation": p.generation, "topology": p.topology,
                    "mesh": list(getattr(p, "mesh", ())),
                    "kind": p.kind, "bytes_per_device": p.bytes_per_device,
                    "published_s": p.seconds, "simulated_before_s": before,
                    "error_before_pct": 100 * (before - p.seconds) / p.seconds,
                    "simulated_s": sim,
                    "error_pct": 100 * (sim - p.seconds) / p.seconds,
                    "approximate": p.approximate, "held_out": bool(p.held_out),
                    "fitted_profile": _fitted(p.generation, hardware),
                    "profile": hardware.get(p.generation, f"shipped:{p.generation}")})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=measurements.PUBLISHED)
    ap.add_argument("--hardware", nargs="*", default=[], metavar="FILE",
                    help="profile files replacing their generation's shipped profile")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--leave-one-out", action="store_true",
                    help="refit without each point in turn and predict it (takes minutes)")
    ap.add_argument("--record", metavar="FILE", default=None,
                    help="with --leave-one-out: write the residuals (aoizora.loo-residuals/1)")
    args = ap.parse_args(argv)
    hardware = {}
    for path in args.hardware:
        with open(path, encoding="utf-8") as f:
            hardware[json.load(f)["generation"]] = path
    m = measurements.read(args.data, "--data")
    if args.leave_one_out:
        return _leave_one_out(m, args.json, args.record, args.data)
    table = rows(m.points + [p for p in m.programs if p.hlo], hardware)
    if args.json:
        print(json.dumps(table, indent=1))
        return 0
    print("published: measured on real TPUs (see each point's source); simulated: AoiZora's "
          "simulator on the model, one collective alone or a whole program's compiled HLO "
          "(calibration/programs/), NOT measured")
    print("before: the nominal profile (calibration/nominal/); after: the profile in use "
          "(shipped, fitted by `aoizora calibrate`, or --hardware)")
    w = max(32, *(len(r["id"]) for r in table))
    print(f"{'point':{w}} {'kind':18} {'bytes/dev':>9} {'published':>12} {'sim before':>11} "
          f"{'error':>7} {'sim after':>11} {'error':>7}  profile")
    for r in table:
        mark = " ~" if r["approximate"] else "  "
        held = "  (held out)" if r["held_out"] else ""
        nominal = "" if r["fitted_profile"] else " (nominal)"
        print(f"{r['id']:{w}} {r['kind']:18} {_size(r['bytes_per_device']):>9} "
              f"{_time(r['published_s'])}{mark}{_time(r['simulated_before_s'])} "
              f"{r['error_before_pct']:+6.1f}% {_time(r['simulated_s'])} "
              f"{r['error_pct']:+6.1f}%  {r['profile']}{nominal}{held}")
    for r in table:
        if "parts_before" in r:
            print(_video_parts(r))
    used = [r for r in table if not r["held_out"]]
    for fitted, label in ((True, "fitted profiles"), (False, "nominal profiles")):
        part = [r for r in used if r["fitted_profile"] == fitted]
        if part:
            print(_worst(part, label))
    print("~ marks a figure published as 'about'; (nominal): the profile in use is not fitted "
          "(its provenance note says why).")
    return 0


def _video_parts(r: dict) -> str:
    """A video's parts, before and after, one line each (simulated seconds)."""
    lines = [f"{r['id']}, simulated by part:"]
    for when in ("before", "after"):
        q = r[f"parts_{when}"]
        lines.append(f"  {when:6} text encoder {q['text_encoder_s']:.4f} s + {q['steps']} x step "
                     f"{q['step_s']:.4f} s + VAE decode {q['vae_decode_s']:.4f} s + reshards "
                     f"{q['reshard_s'] * 1e3:.3f} ms = {q['total_s']:.3f} s")
    return "\n".join(lines)


def _worst(part: list[dict], label: str) -> str:
    worst = max(part, key=lambda r: abs(r["error_pct"]))
    before = max(part, key=lambda r: abs(r["error_before_pct"]))
    within = sum(abs(r["error_pct"]) <= 15 for r in part)
    gens = ", ".join(sorted({r["generation"] for r in part}))
    return (f"worst |error| over the {len(part)} points on {label} ({gens}): before "
            f"{before['error_before_pct']:+.1f}% ({before['id']}), after "
            f"{worst['error_pct']:+.1f}% ({worst['id']}); {within}/{len(part)} within 15 % after")


def _loo_base(generation: str, points) -> dict:
    """The nominal profile the shipped fit starts from, its fixed costs and hop latency
    derived where no point can fit them (the same steps as `aoizora calibrate`)."""
    from aoizora.hardware import derive_fixed_costs

    with open(_nominal(generation), encoding="utf-8") as f:
        base = json.load(f)
    if derive_fixed_costs.needed(points, generation):
        derive_fixed_costs.derive(base, derive_fixed_costs.shipped())
    return base


def _leave_one_out(m, as_json: bool, record: str | None = None, data: str = "") -> int:
    from aoizora.hardware import error_bands, leave_one_out

    points = m.points + [p for p in m.programs if p.hlo]
    gens = list(dict.fromkeys(p.generation for p in points if not p.held_out))
    table = []
    for g in gens:
        for r in leave_one_out.run(m, _loo_base(g, points), g, checks=True):
            table.append({"id": r.id, "generation": g, "kind": r.kind,
                          "published_s": r.measured_s, "in_sample_s": r.in_sample_s,
                          "in_sample_error_pct": 100 * r.in_sample_error,
                          "left_out_s": r.left_out_s,
                          "left_out_error_pct": (None if r.left_out_error is None
                                                 else 100 * r.left_out_error),
                          "why_not": r.why_not, "held_out": r.held_out})
    if record:
        error_bands.write(record, table, os.path.relpath(data, os.path.dirname(record)))
    if as_json:
        print(json.dumps(table, indent=1))
        return 0
    print("leave-one-out: each point predicted by the calibration's fit to the other points of "
          "its generation (simulated, not measured), beside its in-sample error")
    w = max(32, *(len(r["id"]) for r in table))
    print(f"{'point':{w}} {'kind':18} {'published':>12} {'in-sample':>9} {'left out':>9}")
    for r in table:
        loo = ("-" if r["left_out_error_pct"] is None else f"{r['left_out_error_pct']:+.1f}%")
        print(f"{r['id']:{w}} {r['kind']:18} {_time(r['published_s'])} "
              f"{r['in_sample_error_pct']:+8.1f}% {loo:>9}"
              + (f"  ({r['why_not']})" if r["why_not"] else "")
              + ("  (held out: a check, never fitted to)" if r["held_out"] else ""))
    print(_loo_share([r for r in table if not r["held_out"]]))
    return 0


def _loo_share(table: list[dict]) -> str:
    left = [r for r in table if r["left_out_error_pct"] is not None]
    within = sum(abs(r["left_out_error_pct"]) <= 20 for r in left)
    within_in = sum(abs(r["in_sample_error_pct"]) <= 20 for r in table)
    alone = len(table) - len(left)
    return (f"within 20 %: {within}/{len(left)} points left out "
            f"({100 * within / max(len(left), 1):.0f} %), {within_in}/{len(table)} in sample; "
            f"{alone} point(s) could not be left out (their generation's only one)")


if __name__ == "__main__":
    sys.exit(main())

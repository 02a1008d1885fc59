"""`aoizora calibrate MEASUREMENTS.json [--base GEN|FILE] -o profile.json [--harness-check]
[--json]`: fits a hardware profile's few physical parameters to measured collective times
(least squares on log time, the simulator as the model), prints every point's error before
and after, and writes the fitted profile with its provenance. Simulated figures are the
model's, not measurements.

Measurements timed on CPU devices (`aoizora measure --platform cpu`: the file's
provenance.platform is not "tpu") are refused in one line: fitting a TPU profile to them is
a silent wrong answer. --harness-check fits them anyway as a check of the harness, and the
profile's note says so (fitted_profile.HARNESS_CHECK), which every command loading it repeats.

A generation without a collective point cannot fit its fixed per-collective costs nor its hop
latency: they are derived first, on the base, from the closest fitted generation
(derive_fixed_costs.py; the shipped profiles of the other generations, or --derive-from
files), and the fit keeps them.
"""

from __future__ import annotations

import datetime
import json
import os


def register(sub) -> None:
    p = sub.add_parser("calibrate", help="fit a hardware profile to measured collective times")
    p.add_argument("measurements", metavar="MEASUREMENTS.json",
                   help="measured points (aoizora.measurements/1, e.g. "
                        "calibration/published.json)")
    p.add_argument("--base", metavar="GEN|FILE", default=None,
                   help="the profile to start from: a generation's shipped profile (v4, v5e, "
                        "...) or a profile file; its generation's points are fitted "
                        "(default: the generation of the file's points, when there is one)")
    p.add_argument("-o", "--out", required=True, metavar="FILE",
                   help="where to write the fitted profile (aoizora.hardware/1)")
    p.add_argument("--harness-check", action="store_true",
                   help="fit measurements timed on CPU devices (aoizora measure --platform "
                        "cpu) anyway, as a check of the harness; the profile is marked a "
                        "harness check, not a TPU profile")
    p.add_argument("--derive-from", nargs="+", metavar="FILE", default=None,
                   help="fitted profiles to derive the fixed per-collective costs and the hop "
                        "latency from when "
                        "the measurements hold no collective point of the generation "
                        "(default: the shipped profiles of the other generations)")
    p.add_argument("--json", action="store_true", help="print the fit as JSON")
    p.set_defaults(run=run)


def _derive(base: dict, label: str, files, points) -> tuple[list[str], str]:
    """Derives the base's fixed costs when no point can fit them (derive_fixed_costs.py):
    (the fields derived, the base's label saying so)."""
    from aoizora.hardware import derive_fixed_costs, hardware_file

    if not derive_fixed_costs.needed(points, base["generation"]):
        return [], label
    if files:
        docs = []
        for f in files:
            with open(hardware_file.check(f, "--derive-from"), encoding="utf-8") as fh:
                docs.append(json.load(fh))
    else:
        docs = derive_fixed_costs.shipped()
    changed = derive_fixed_costs.derive(base, docs)
    return changed, (f"{label} with {derive_fixed_costs.describe(base)}" if changed else label)


def _harness(m, args) -> bool:
    """Whether the points were timed on CPU devices; refused unless --harness-check."""
    from aoizora.errors import UserError

    platform = m.provenance.get("platform")
    on_cpu = platform is not None and platform != "tpu"
    if on_cpu and not args.harness_check:
        raise UserError(f"{args.measurements}: timed on {platform.upper()} devices (aoizora "
                        f"measure --platform {platform}), not a TPU: a TPU profile fitted to "
                        "them would be wrong; pass --harness-check to fit one anyway, marked "
                        "a harness check")
    if args.harness_check and not on_cpu:
        raise UserError(f"--harness-check: {args.measurements} was not timed on CPU devices "
                        "(its provenance says platform "
                        f"{platform or 'nothing'}): leave --harness-check out")
    return on_cpu


def _base(arg: str | None, points) -> tuple[dict, str]:
    """(base profile dict, label): --base as a file or a generation, else the points'."""
    from aoizora import _core
    from aoizora.hardware import hardware_file
    from aoizora.errors import UserError

    if arg and (arg.endswith(".json") or os.path.exists(arg)):
        path = hardware_file.check(arg, "--base")
        with open(path, encoding="utf-8") as f:
            return json.load(f), arg
    if arg is None:
        gens = sorted({p.generation for p in points if not p.held_out})
        if len(gens) != 1:
            raise UserError(f"the measurements hold points of {', '.join(gens) or 'no'} "
                            "generation(s) not held out: name the one to fit with --base GEN")
        arg = gens[0]
    try:
        return hardware_file.shipped(arg), f"shipped:{arg}"
    except _core.CoreError as e:
        raise UserError(f"--base {arg}: {e}") from None


def _us(s: float) -> str:
    return f"{s:10.4f} s" if s >= 0.1 else f"{s * 1e6:9.2f}us"


def _value(p, x: float) -> str:
    from aoizora.hardware import fit_parameters

    return fit_parameters.describe(p.unit, x)


def _as_json(fit, out: str) -> dict:
    return {
        "generation": fit.generation, "base": fit.base_label, "date": fit.date, "out": out,
        "parameters": [{"name": p.name, "unit": p.unit, "base": p.base, "value": p.value,
                        "fitted": p.fitted, "reason": p.reason} for p in fit.parameters],
        "points": [{"id": q.id, "kind": q.kind, "bytes_per_device": q.bytes_per_device,
                    "measured_s": q.measured_s, "simulated_before_s": q.before_s,
                    "simulated_after_s": q.after_s, "error_before": q.error_before,
                    "error_after": q.error_after, "used": q.used, "held_out": q.held_out,
                    "approximate": q.approximate} for q in fit.points],
        "rms_log_error": {"before": fit.rms_log("before_s"), "after": fit.rms_log("after_s")},
        "not_used": [{"id": i, "why": w} for i, w in fit.unused],
        "notes": fit.notes,
    }


def _point_lines(fit, width: int) -> list[str]:
    """The points' table: one row each where it fits the width, else two (the point and
    its kind, then its figures beneath)."""
    idw = max([len("point")] + [len(q.id) for q in fit.points])
    kw = max([len("kind")] + [len(q.kind) for q in fit.points])
    figures = (f"{'bytes/dev':>10} {'measured':>11} {'before':>11} {'error':>7} "
               f"{'after':>11} {'error':>7}")
    rows = [(f"{q.id:{idw}} {q.kind:{kw}}",
             f"{q.bytes_per_device:>10} {_us(q.measured_s)} {_us(q.before_s)} "
             f"{100 * q.error_before:+6.1f}% {_us(q.after_s)} {100 * q.error_after:+6.1f}%",
             "  (held out: check only)" if not q.used else
             ("  ~ approximate" if q.approximate else "")) for q in fit.points]
    if idw + kw + 2 + len(figures) + len("  (held out: check only)") <= width:
        return [f"{'point':{idw}} {'kind':{kw}} {figures}"] + [
            f"{name} {fig}{mark}" for name, fig, mark in rows]
    return [f"point, kind\n  {figures}"] + [f"{name.rstrip()}{mark}\n  {fig}"
                                              for name, fig, mark in rows]


def _print(fit, out: str) -> None:
    from aoizora.terminal import echo, width

    used = [q for q in fit.points if q.used]
    echo(f"calibrate {fit.generation} from {fit.base_label}: {len(used)} points fitted, "
         f"{len(fit.points) - len(used)} held out (checked only); simulated = AoiZora's "
         "simulator on the profile, measured = the file's figures")
    print(f"{'parameter':32} {'base':>12} {'fitted':>12}")
    for p in fit.parameters:
        state = "fitted" if p.fitted else "kept"
        print(f"{p.name:32} {_value(p, p.base):>12} {_value(p, p.value):>12}  {state}")
    print()
    for line in _point_lines(fit, width()):
        print(line)
    worst = max(used, key=lambda q: abs(q.error_after))
    echo(f"\nRMS error of log time {fit.rms_log('before_s'):.3f} -> "
         f"{fit.rms_log('after_s'):.3f}; worst after: {100 * worst.error_after:+.1f}% "
         f"({worst.id})")
    if fit.unused:
        more = len(fit.unused) - 3
        echo(f"not used: {len(fit.unused)} entries ("
             + "; ".join(f"{i}: {w}" for i, w in fit.unused[:3])
             + (f"; and {more} more" if more > 0 else "") + ")")
    for n in fit.notes:
        echo(f"note: {n}")
    echo(f"wrote {out}")


def run(args) -> int:
    from aoizora.hardware import calibrate, fitted_profile, measurements
    from aoizora.inputs import validate

    from aoizora.errors import UserError

    m = measurements.read(args.measurements, "MEASUREMENTS")
    harness = _harness(m, args)
    validate.output_files({"-o": args.out})
    if os.path.realpath(args.out) == os.path.realpath(args.measurements):
        raise UserError(f"-o {args.out}: that is the measurements file; write the profile to "
                        "another file")
    base, label = _base(args.base, m.points + [p for p in m.programs if p.hlo])
    derived, label = _derive(base, label, args.derive_from,
                             m.points + [p for p in m.programs if p.hlo])
    date = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    fit = calibrate.fit(m, base, base["generation"], label, date)
    # Where the points were timed (aoizora measure): a CPU harness check says so, here and
    # in the profile it produced.
    measured_on = m.provenance.get("measured_on")
    doc = fitted_profile.document(fit, args.measurements, measured_on, harness)
    fitted_profile.write(args.out, doc)
    if args.json:
        print(json.dumps({**_as_json(fit, args.out), "measured_on": measured_on,
                          "harness_check": harness, "derived": derived}, indent=1))
    else:
        from aoizora.terminal import echo

        if harness:
            echo(f"{fitted_profile.HARNESS_CHECK}: the profile's note says so, and every "
                 "command that loads it warns")
        elif measured_on:
            echo(f"measurements measured on {measured_on}")
        if derived:
            sources = base["provenance"]["sources"]
            keys = dict.fromkeys(f.split(".")[0] for f in derived)   # their sources' keys
            echo(f"derived (no collective point of {fit.generation} to fit them): "
                 f"{', '.join(derived)}: " + "; ".join(sources[k] for k in keys))
        _print(fit, args.out)
    return 0

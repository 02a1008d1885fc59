"""Checks of user input, one function per input kind, run before any work starts.

Every check raises UserError with one line that names the input, what is wrong and what to
do; nothing here compiles, plans or writes.

    number(value, flag, lo=None, hi=None, integer=False) -> the value (finite, in [lo, hi])
    int_arg(flag, lo, hi) / float_arg(flag, lo, hi) -> an argparse `type=` converter
    mesh_shape(text, flag, devices=None) -> [sizes], "2x4" -> [2, 4]; product == devices
    input_file(path, flag) -> path of an existing regular file we can read
    hlo_text(path, flag) -> the text of an HLO file (UTF-8, not empty)
    output_files({flag: path or None}) -> each names a file (not a folder) in an existing
        writable folder, and no two name the same file
    output_folder(path, flag) -> path that is, or can be made, a writable folder
    workload(model, video, frames) -> (ModelSpec, Video) with tokens > 0
    did_you_mean(name, choices) -> "did you mean 'a' or 'b'?" (the closest few by difflib),
        or "" when none is close
    suggest_topology(message) -> the message with the C++ core's list of every catalog slice
        after "unknown topology 'X'" replaced by the closest names and `topology --list`
        (cli.py applies it to every one-line error)

Topology files: topology_file.py; plan files: plan_schema.py; hardware profiles:
hardware_file.py; measurement files (`calibrate`): measurements.read.
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import re
import tempfile

from aoizora.errors import UserError


def number(value, flag: str, lo: float | None = None, hi: float | None = None,
           integer: bool = False):
    """`value` if it is a finite number (an int when integer=True) within [lo, hi]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            integer and not isinstance(value, int)):
        raise UserError(f"{flag} {value!r}: expected {'an integer' if integer else 'a number'}")
    if not math.isfinite(value):
        raise UserError(f"{flag} {value!r}: expected a finite number")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        span = (f"between {lo:g} and {hi:g}" if lo is not None and hi is not None
                else f"at least {lo:g}" if lo is not None else f"at most {hi:g}")
        raise UserError(f"{flag} {value!r}: must be {span}")
    return value


def _converter(flag: str, parse, lo, hi, integer: bool):
    def convert(text: str):
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {'an integer' if integer else 'a number'}") from None
        try:
            return number(value, flag, lo, hi, integer=integer)
        except UserError as e:
            raise argparse.ArgumentTypeError(str(e).removeprefix(f"{flag} ")) from None
    convert.__name__ = "integer" if integer else "number"
    return convert


def int_arg(flag: str, lo: int | None = None, hi: int | None = None):
    """An argparse type: an integer in [lo, hi]."""
    return _converter(flag, int, lo, hi, True)


def float_arg(flag: str, lo: float | None = None, hi: float | None = None):
    """An argparse type: a finite number in [lo, hi] (nan and inf refused)."""
    return _converter(flag, float, lo, hi, False)


def mesh_shape(text: str, flag: str = "--mesh", devices: int | None = None) -> list[int]:
    """"2x4" -> [2, 4]: positive sizes whose product is `devices` (when given)."""
    try:
        mesh = [int(x) for x in text.lower().split("x")]
    except ValueError:
        mesh = []
    if not mesh or any(m < 1 for m in mesh):
        raise UserError(f"{flag} {text!r}: expected positive axis sizes like 2x4")
    if devices is not None and math.prod(mesh) != devices:
        raise UserError(f"{flag} {text}: {math.prod(mesh)} devices, but the program has "
                        f"{devices}: give sizes whose product is {devices}")
    return mesh


def input_file(path: str, flag: str) -> str:
    if not os.path.exists(path):
        raise UserError(f"{flag} {path}: no such file")
    if os.path.isdir(path):
        raise UserError(f"{flag} {path}: is a folder, expected a file")
    if not os.access(path, os.R_OK):
        raise UserError(f"{flag} {path}: not readable (permissions)")
    return path


def read_text(path: str, flag: str, what: str) -> str:
    """The UTF-8 text of a file, or UserError naming the first bad byte."""
    input_file(path, flag)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise UserError(f"{flag} {path}: cannot read: {e.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{flag} {path}: not a {what} (not UTF-8 text: byte "
                        f"0x{data[e.start]:02x} at offset {e.start})") from None


def hlo_text(path: str, flag: str = "--hlo") -> str:
    text = read_text(path, flag, "compiled HLO text file")
    if not text.strip():
        raise UserError(f"{flag} {path}: the file is empty, expected compiled HLO text")
    return text


def _writable_folder(folder: str, flag: str, path: str, create: bool) -> None:
    """`folder` takes a file: tried by creating and removing an empty temporary file
    (permission bits do not tell for root or /proc). With `create` the nearest existing
    folder on the way to it is tried instead (it will be made); without, a missing folder
    is refused: a typo in a path is not a folder to make."""
    probe = folder
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        raise UserError(f"{flag} {path}: {probe} is a file, not a folder")
    if probe != folder and not create:
        raise UserError(f"{flag} {path}: no such folder {probe.rstrip(os.sep)}{os.sep}"
                        f"{os.path.relpath(folder, probe).split(os.sep)[0]}: create it "
                        "first, or write elsewhere")
    try:
        fd, tmp = tempfile.mkstemp(dir=probe, prefix=".tmp-aoizora-probe-")
    except OSError as e:
        raise UserError(f"{flag} {path}: cannot write in {probe}: {e.strerror}") from None
    os.close(fd)
    os.unlink(tmp)


def output_files(paths: dict[str, str | None]) -> None:
    """Each given path names a file we can create or replace; no two the same file."""
    seen: dict[str, str] = {}
    for flag, path in paths.items():
        if path is None:
            continue
        if not path or path.endswith(os.sep):
            raise UserError(f"{flag} {path!r}: expected a file name")
        if os.path.isdir(path):
            raise UserError(f"{flag} {path}: is a folder, expected a file name")
        _writable_folder(os.path.dirname(os.path.abspath(path)), flag, path, create=False)
        real = os.path.realpath(path)
        if real in seen:
            raise UserError(f"{seen[real]} and {flag} both name {path}: give each output "
                            "its own file")
        seen[real] = flag


def output_folder(path: str, flag: str) -> str:
    if os.path.exists(path) and not os.path.isdir(path):
        raise UserError(f"{flag} {path}: is a file, expected a folder")
    _writable_folder(os.path.abspath(path), flag, path, create=True)
    return path


def workload(model, video: str, frames: int | None):
    """(ModelSpec, Video) for a model (a preset name, or a ModelSpec from --model FILE:FN)
    and a workload; frames None takes the video's default (21, or the fixed 9 of "tiny").
    Refuses what would plan zero work."""
    from aoizora.models import MODELS, get_model, get_workload
    from aoizora.models.video import TINY_VIDEO

    if isinstance(model, str) and model not in MODELS and (model.endswith(".py")
                                                          or os.path.isfile(model)):
        if not os.path.isfile(model):
            raise UserError(f"--model {model}: no such file (your own model is "
                            "FILE.py:FUNCTION, as examples/flux_dit.py:make_spec)")
        raise UserError(f"--model {model}: a file, not a preset: name the function in it that "
                        f"returns your model, --model {model}:FUNCTION (FILE.py:FUNCTION, as "
                        "examples/flux_dit.py:make_spec)")
    if isinstance(model, str) and model not in MODELS:
        hint = did_you_mean(model, sorted(MODELS)) or f"use one of {', '.join(sorted(MODELS))}"
        raise UserError(f"--model: unknown model {model!r}: {hint} (or MODULE.py:FUNCTION for "
                        "your own)")
    cfg = get_model(model) if isinstance(model, str) else model
    if video in ("tiny", TINY_VIDEO.name):
        if frames not in (None, TINY_VIDEO.frames):
            raise UserError(f"--frames {frames}: the tiny video has a fixed "
                            f"{TINY_VIDEO.frames} frames; leave --frames out")
        return cfg, get_workload(video)
    sizes = dict(cfg.sizes)
    if video not in sizes:
        raise UserError(f"--video {video!r}: {cfg.name} is made for "
                        f"{', '.join(f'{k} ({w}x{h})' for k, (h, w) in sizes.items())}; "
                        "use one of those or tiny")
    frames = 21 if frames is None else frames
    number(frames, "--frames", 1, None, integer=True)
    if (frames - 1) % 4:
        raise UserError(f"--frames {frames}: must be 4k+1 (the VAE's temporal stride), "
                        "e.g. 21, 41 or 81")
    wl = get_workload(video, frames, model=cfg)
    if math.prod(wl.latent_shape()) <= 0:
        raise UserError(f"--frames {frames} at {video}: no latent tokens, nothing to plan")
    return cfg, wl


def no_duplicate_keys(pairs: list) -> dict:
    """json.loads object_pairs_hook: a JSON object with a key twice is a ValueError (Python
    and the C++ reader would silently keep the last one)."""
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def unknown_trip_counts(graph, path: str) -> list[str]:
    """The loops of a user's HLO whose trip count was not found. They are counted once, so
    the figures under-count them: said on stderr (one line) and recorded by the caller."""
    import sys

    loops = list(graph.unknown_trip_count_loops)
    if loops:
        print(f"warning: {path}: loop {', '.join(loops)} has an unknown trip count and is "
              "counted once: its time is under-counted", file=sys.stderr)
    return loops


def did_you_mean(name: str, choices, n: int = 3) -> str:
    """The closest few of `choices` to a mistyped `name`, as a question; "" if none is close."""
    close = difflib.get_close_matches(name, list(choices), n=n, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(name.lower(), list(choices), n=n, cutoff=0.6)
    if not close:
        return ""
    quoted = [repr(c) for c in close]
    return "did you mean " + (" or ".join(quoted) if len(quoted) < 3 else
                              f"{', '.join(quoted[:-1])} or {quoted[-1]}") + "?"


# The C++ catalog's refusal (topo/catalog.cpp make_topology), which lists every slice.
_UNKNOWN_TOPOLOGY = re.compile(r"unknown topology '([^']*)': use a JSON file \(\*\.json\) or "
                               r"one of ([\w.]+:[\dx]+(?:, [\w.]+:[\dx]+)*)")
_CLOUD_NAME = re.compile(r"([a-z0-9]+)-(\d+)")   # Cloud's "v5e-8": chips, or cores on v4/v5p


def _topology_guesses(name: str, names: list) -> list:
    """Cloud's GEN-N names the slice of N chips (or N TensorCores: N/2 chips); else difflib."""
    m = _CLOUD_NAME.fullmatch(name.lower())
    if m:
        n = int(m.group(2))
        chips = {t: math.prod(int(d) for d in t.split(":")[1].split("x")) for t in names
                 if t.split(":")[0] == m.group(1)}
        return sorted((t for t, c in chips.items() if c in (n, n // 2)),
                      key=lambda t: chips[t] != n)
    return []


def suggest_topology(message: str) -> str:
    def shorter(m) -> str:
        name, names = m.group(1), m.group(2).split(", ")
        guesses = _topology_guesses(name, names)
        hint = (f"did you mean {' or '.join(map(repr, guesses))}?" if guesses
                else did_you_mean(name, names))
        if not hint:
            return (f"unknown topology {name!r}: not one of the {len(names)} catalog slices "
                    "(`aoizora topology --list`) nor a topology JSON file (*.json)")
        return (f"unknown topology {name!r}: {hint} (`aoizora topology --list` lists all "
                f"{len(names)}; or a topology JSON file, *.json)")
    return _UNKNOWN_TOPOLOGY.sub(shorter, message)

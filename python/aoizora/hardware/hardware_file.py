"""`--hardware FILE`: a hardware profile (the chip figures of one TPU generation, in the
aoizora.hardware/1 format of cpp/aoizora/topo/profile.h) that replaces the generation's
shipped profile for one command.

    add_argument(parser)  adds --hardware FILE to a command that takes a topology
    check(path, flag="--hardware") -> str: the absolute path of a valid profile; UserError
        (one line) on an unreadable or non-UTF-8 file, malformed JSON, a duplicate key, an
        unknown field, a missing one, a negative or non-finite figure, a wrong schema version.
        A profile fitted to CPU-device timings (`aoizora calibrate --harness-check`,
        fitted_profile.harness_check) is loaded with a one-line warning on stderr, once per
        file and command: every command that takes --hardware goes through here.
    new_command() -> None: forget which profiles were warned about (cli.main, per command).
    shipped(generation) -> dict: the shipped profile of a generation ("v5e", "tpu7x", ...)

The shipped profiles are compiled into the C++ core from profiles/*.json and also installed
as files (aoizora/profiles/) for users to copy and edit.
"""

from __future__ import annotations

import json
import os
import sys

from aoizora.errors import UserError
from aoizora.inputs.validate import no_duplicate_keys, read_text

_warned: set = set()   # profiles whose harness-check warning this command printed


def add_argument(p) -> None:
    p.add_argument("--hardware", metavar="FILE", default=None,
                   help="a hardware profile (JSON, aoizora.hardware/1) replacing the chip "
                        "figures of the topology's generation")


def check(path: str, flag: str = "--hardware") -> str:
    from aoizora import _core

    body = read_text(path, flag, "hardware profile JSON file")
    try:
        doc = json.loads(body, object_pairs_hook=no_duplicate_keys)
    except json.JSONDecodeError as e:
        raise UserError(f"{flag} {path}:{e.lineno}:{e.colno}: not JSON: {e.msg}") from None
    except ValueError as e:
        raise UserError(f"{flag} {path}: {e}") from None
    try:
        _core.check_hardware_profile(path)
    except _core.CoreError as e:
        # The core's message starts with the path already.
        raise UserError(f"{flag} {e}") from None
    _warn_if_harness_check(doc, path, flag)
    return os.path.abspath(path)


def new_command() -> None:
    _warned.clear()


def _warn_if_harness_check(doc: dict, path: str, flag: str) -> None:
    from aoizora.hardware.fitted_profile import HARNESS_CHECK, harness_check

    real = os.path.realpath(path)
    if harness_check(doc) and real not in _warned:
        _warned.add(real)
        print(f"warning: {flag} {path}: {HARNESS_CHECK} (aoizora calibrate --harness-check); "
              "its figures describe no TPU", file=sys.stderr)


def shipped(generation: str) -> dict:
    from aoizora import _core

    return json.loads(_core.hardware_profile(generation))

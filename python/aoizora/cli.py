"""The ``aoizora`` command. Each subcommand lives in ``aoizora.commands.<name>`` and
registers itself with ``register(subparsers)``; only the ones that exist are offered."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

from aoizora import __version__, commands
from aoizora.errors import UserError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aoizora",
        description="Plan the sharding and the physical placement of a diffusion transformer "
        "on a TPU slice.",
    )
    parser.add_argument("--version", action="version", version=f"aoizora {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"aoizora.commands.{info.name}")
        module.register(sub)
    return parser


def _core_error() -> type[Exception]:
    """The C++ core's one-line error (bad HLO, unknown topology, ...), a user error too."""
    try:
        from aoizora._core import CoreError
    except ImportError:  # the core is not built: doctor says so
        return UserError
    return CoreError


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except (UserError, _core_error()) as e:
        print(f"aoizora {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"aoizora {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `aoizora ... | head`: the reader left, which is not an error
        sys.stdout = open(os.devnull, "w")
        return 0


if __name__ == "__main__":
    sys.exit(main())

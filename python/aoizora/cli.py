"""The ``aoizora`` command. Each subcommand lives in ``aoizora.commands.<name>`` and
registers itself with ``register(subparsers)``; only the ones that exist are offered.

Exit status: 0 done; 1 a check failed (doctor); 2 bad input or an impossible request (one
line on stderr, and `{"error": ...}` on stdout under --json; argparse errors alike);
70 an internal error (a bug: the traceback, then one line); 75 the executor was lost under
the command (a Ray node or cluster: one line, what was lost and kept and the same command,
which resumes; sysexits' EX_TEMPFAIL, "try again"); 130 interrupted (SIGINT);
143 terminated (SIGTERM). Worker processes are stopped before exiting.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import shlex
import signal
import sys
import threading
import traceback

from aoizora import __version__, commands
from aoizora.hardware import hardware_file
from aoizora.errors import ExecutorLost, InternalError, UserError

EXIT_USAGE, EXIT_INTERNAL, EXIT_SIGINT, EXIT_SIGTERM = 2, 70, 130, 143


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that `finally` blocks and worker shutdown run."""


def _fail(prog: str, message: str, as_json: bool) -> None:
    line = " ".join(str(message).split())
    print(f"{prog}: error: {line}", file=sys.stderr, flush=True)
    if as_json:
        print(json.dumps({"error": line}), flush=True)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block) and JSON errors under --json."""

    json_errors = False   # set by main() when the command line holds --json

    def error(self, message: str):
        _fail(self.prog, f"{message} (see {self.prog} --help)", Parser.json_errors)
        sys.exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
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


def resume_command(argv: list[str]) -> str:
    """The command line that ran, as a shell would take it again."""
    return shlex.join(["aoizora", *argv])


def _on_sigterm(signum, frame):
    raise Terminated()


def _internal_error(prog: str, e: BaseException, as_json: bool) -> int:
    """A bug: the traceback kept, and one last line that says so."""
    traceback.print_exc()
    _fail(prog, f"internal error (a bug in aoizora, please report it with the traceback "
                f"above): {type(e).__name__}: {e}", as_json)
    return EXIT_INTERNAL


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    Parser.json_errors = "--json" in argv
    args = build_parser().parse_args(argv)
    hardware_file.new_command()   # each command warns once about a harness-check profile
    prog = f"aoizora {args.command}"
    as_json = bool(getattr(args, "json", False))
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if main_thread else None
    try:
        return int(args.run(args) or 0)
    except InternalError as e:  # the core reached a state it never should: a bug, not input
        return _internal_error(prog, e, as_json)
    except (UserError, _core_error()) as e:
        from aoizora.inputs.validate import suggest_topology

        _fail(prog, suggest_topology(str(e)), as_json)
        return EXIT_USAGE
    except ExecutorLost as e:
        _fail(prog, f"{e}; the same command resumes: {resume_command(argv)}", as_json)
        return ExecutorLost.exit_code
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_SIGINT
    except Terminated:
        print(f"{prog}: terminated", file=sys.stderr)
        return EXIT_SIGTERM
    except BrokenPipeError:  # `aoizora ... | head`: the reader left, which is not an error
        sys.stdout = open(os.devnull, "w")
        return 0
    except Exception as e:  # a bug: keep the traceback and say so in one last line
        return _internal_error(prog, e, as_json)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


if __name__ == "__main__":
    sys.exit(main())

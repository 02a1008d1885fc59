"""Errors a user can act on, and the expected failures of one candidate.

The CLI prints a UserError (or the C++ core's CoreError) as one line and exits 2, an
ExecutorLost as one line with the command that resumes and exits 75. Any other exception,
the core's InternalError included, is a bug in aoizora: it is never turned into a skipped
candidate or a silent answer, and the CLI reports it as an internal error (exit 70).
"""


class UserError(Exception):
    """Bad input or an impossible request: the message says what, where, and what to do."""


class NoFitError(UserError):
    """The model and workload fit in no legal sharding on the slice (memory): a result of
    planning, not a fault. Tell it from other failures by this type, never by its text."""


class CoreError(ValueError):
    """An error of the C++ core (aoizora._core.CoreError is this class): str() is one line,
    "file:line:column: message" with the unknown parts left out. The core raises one of the
    subclasses below, by the kind of failure (base/status.h ErrorCode); catch the ones that
    are expected where they are, never ValueError, which also catches bugs in Python."""


class ParseError(CoreError):
    """Text that does not read: HLO, StableHLO, JSON, a sharding or replica-groups string."""


class InvalidArgumentError(CoreError):
    """Well-formed input that breaks a rule: a placement, a mesh, a field of a topology or
    hardware file, an option."""


class NotFoundError(CoreError):
    """A named thing that is not there or cannot be read: a file, a topology, a generation."""


class UnsupportedError(CoreError):
    """Valid input the core cannot model: a loop of unknown trip count, calls nested too
    deep."""


class InternalError(CoreError):
    """A state the core should never reach (a simulated deadlock): a bug in aoizora."""


class ExecutorLost(Exception):
    """Where the jobs run failed under the command, not its input nor aoizora: the Ray on
    this machine died (its raylet), a `ray://` cluster stopped or became unreachable. The
    jobs that finished are in the cache, so the same command resumes from them.

    str() is one line: what was lost (`lost`, set by the executor), then what was kept
    (`kept`, set by batch.run_jobs, which knows the cache)."""

    # The CLI's exit status: sysexits' EX_TEMPFAIL ("try again later"), which a script can
    # tell from bad input (2) and a bug (70) and answer by running the same command again.
    exit_code = 75

    def __init__(self, lost: str):
        super().__init__(lost)
        self.lost = lost
        self.kept: str | None = None

    def __str__(self) -> str:
        return self.lost if self.kept is None else f"{self.lost}; {self.kept}"


class CompileError(Exception):
    """A candidate that does not lower or compile (an XLA error, out of memory at compile
    time); str() is one line. The planner reports the candidate as skipped."""


class CompilerOutOfMemory(CompileError):
    """A compile that ran out of memory: XLA's RESOURCE_EXHAUSTED status, a MemoryError, or
    a worker process killed (the kernel's out-of-memory killer)."""


class TargetOutOfMemory(CompilerOutOfMemory):
    """XLA's RESOURCE_EXHAUSTED verdict on the program: it does not fit the target's memory
    (HBM, or VMEM for a kernel). The same program for the same target gets the same verdict,
    so, unlike this machine running out of memory, it can be cached."""


def one_line(e: BaseException) -> str:
    """An exception as one short line: its type and the first line of its message."""
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:300]

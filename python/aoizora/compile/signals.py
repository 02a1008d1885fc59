"""SIGTERM in a compile process: a quiet exit, and libtpu's crash traces kept.

libtpu installs failure handlers (a stack trace on stderr, "*** SIGTERM received by PID")
for each signal that still has its default action when it loads. A terminal or `timeout`
sends SIGTERM to the whole process group, so every compile worker and analysis child would
print one. Giving SIGTERM a handler of our own before libtpu loads leaves libtpu's hands off
it, while SIGSEGV, SIGABRT and the rest keep libtpu's traces: a crash still says where
(`--install_signal_handlers=false`, used before, silenced those too).

    exit_quietly_on_sigterm() -> None   in this process, where SIGTERM has its default
                                        action: exit at once with status 128 + SIGTERM,
                                        as the default action's status reads in a shell
"""

from __future__ import annotations

import os
import signal


def _exit(signum, frame) -> None:
    os._exit(128 + signum)


def exit_quietly_on_sigterm() -> None:
    """Only where SIGTERM has its default action: a handler someone set (Ray's, a test's)
    is theirs, and libtpu leaves a handled signal alone anyway."""
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _exit)

"""SIGTERM in compile processes (compile/signals.py): a compile worker, an analysis child
and a Ray task exit quietly on SIGTERM, while a crash after libtpu has loaded still prints
libtpu's stack trace (the flag used before, --install_signal_handlers=false, silenced both).
Each case runs in a process of its own with libtpu loaded by a deviceless topology."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

_CHILD = """
import os, signal, sys, time
import aoizora.compile.jaxenv
from aoizora.compile import executor, tpu
{setup}
tpu.compile_only_devices("v5e:2x2")           # libtpu loads here
print("flags:", os.environ.get("LIBTPU_INIT_ARGS", ""), flush=True)
os.kill(os.getpid(), signal.{sig})
time.sleep(5)
"""

_SETUPS = {
    "pool worker": "executor._worker_start()",
    "ray task": "executor._ray_task(lambda job: None, None)",
}


def _run(setup: str, sig: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "LIBTPU_INIT_ARGS"}
    return subprocess.run([sys.executable, "-c", _CHILD.format(setup=setup, sig=sig)],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("where", sorted(_SETUPS))
def test_sigterm_is_a_quiet_exit_and_a_crash_keeps_its_trace(where):
    quiet = _run(_SETUPS[where], "SIGTERM")
    assert quiet.returncode == 128 + signal.SIGTERM, quiet.stderr
    assert "stack trace" not in quiet.stderr and "SIGTERM received" not in quiet.stderr
    assert "install_signal_handlers" not in quiet.stdout
    crash = _run(_SETUPS[where], "SIGSEGV")
    assert crash.returncode == -signal.SIGSEGV
    assert "SIGSEGV" in crash.stderr and "stack trace" in crash.stderr


def test_a_handler_already_set_is_left_alone():
    from aoizora.compile.signals import exit_quietly_on_sigterm

    mine = lambda signum, frame: None
    before = signal.signal(signal.SIGTERM, mine)
    try:
        exit_quietly_on_sigterm()
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, before)

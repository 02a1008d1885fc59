"""pytest set-up: the deviceless-compile environment must be in place before jax loads."""

import aoizora.compile.jaxenv  # noqa: F401

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def ray_executor():
    """A Ray started in this process on 2 CPUs, shared by every test that needs one (Ray
    takes seconds to start); executors made later in the session join it."""
    from aoizora.compile.executor import RayExecutor

    executor = RayExecutor(None, num_cpus=2)
    yield executor
    executor.close()


def _alive(pid: int) -> bool:
    try:
        return "Z" not in Path(f"/proc/{pid}/stat").read_text().split(") ")[1][:1]
    except OSError:
        return False


@pytest.fixture
def alive():
    """alive(pid): is the process running (not gone, not a zombie)? For tests that check
    that compiles and workers die."""
    return _alive

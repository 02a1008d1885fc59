"""pytest set-up: the deviceless-compile environment must be in place before jax loads."""

import aoizora.compile.jaxenv  # noqa: F401

from pathlib import Path

import pytest


# scripts/test.sh runs the suite on two pytest-xdist workers (--dist loadgroup). A module's
# tests stay on one worker, so its module fixtures (compiles of a minute or more) are made
# once; the modules that read the tiny plan share a worker (it is planned once), and so do
# the modules that start Ray (one Ray per machine at a time).
_SHARED_WORKER = {"test_planner": "tiny-plan", "test_report": "tiny-plan",
                  "test_executor": "ray", "test_plan_many": "ray", "test_prefetch": "ray",
                  "test_executor_faults": "ray"}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1]
        item.add_marker(pytest.mark.xdist_group(_SHARED_WORKER.get(module, module)))


# The tiny plan several modules read (test_planner, test_report): wan-tiny on v5e:2x4, Top-2,
# one worker, through the TPU backend. Planned once per session; no test may change it.
TINY = dict(model="wan-tiny", video="tiny", frames=None, topology="v5e:2x4")


@pytest.fixture(scope="session")
def tiny_cache_dir(tmp_path_factory):
    """The compile cache the tiny plan was planned with (a re-plan from it is all hits)."""
    return str(tmp_path_factory.mktemp("tiny-cache"))


@pytest.fixture(scope="session")
def tiny_plan(tiny_cache_dir):
    """planner.plan(**TINY) with top_k=2, one worker and tiny_cache_dir: a PlanResult."""
    from aoizora.compile.cache import Cache
    from aoizora.planning import planner

    settings = planner.Settings(top_k=2, workers=1, cache=Cache(tiny_cache_dir))
    return planner.plan(**TINY, settings=settings)


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


def assert_fits(text: str, width: int, whole=()) -> None:
    """A command's human output at `width` columns (terminal.py): no line over it but a
    single word longer than the line (a web address, which a break would spoil), nothing
    cut to an ellipsis, each of `whole` (names, numbers) whole on one line."""
    lines = text.splitlines()
    over = [line for line in lines if len(line) > width and len(line.split()) > 1]
    assert not over, "\n".join(over)
    assert "..." not in text and "…" not in text, text
    for name in whole:
        assert any(name in line for line in lines), (name, text)

"""pyproject.toml's pins: what the package runs on is what it says it runs on. Every `==`
pin is the installed version, and the packages that track jax's releases and come in
through tokamax (qwix, flax, orbax-checkpoint) are pinned, so a fresh machine resolves the
same set beside jax 0.10.2."""

from __future__ import annotations

import importlib.metadata
import pathlib
import re
import tomllib

PYPROJECT = pathlib.Path(__file__).resolve().parents[2] / "pyproject.toml"
# tokamax -> qwix -> flax -> orbax-checkpoint: each release asks for a recent jax.
JAX_TRACKING = ("tokamax", "qwix", "flax", "orbax-checkpoint")


def _pins() -> dict[str, str]:
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    out = {}
    for d in deps:
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^;\s]+)", d.strip())
        if m:
            out[m.group(1).lower()] = m.group(3)
    return out


def test_jax_tracking_dependencies_are_pinned():
    pins = _pins()
    assert [p for p in JAX_TRACKING if p not in pins] == []


def test_every_pin_is_the_installed_version():
    wrong = {name: (pin, importlib.metadata.version(name)) for name, pin in _pins().items()
             if importlib.metadata.version(name) != pin}
    assert wrong == {}

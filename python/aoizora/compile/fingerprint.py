"""A fingerprint of the code that is running: every .py file of the aoizora package (all
folders of its path: a checkout's python/ and an installed copy alike) and the bytes of the
_core extension. Any edit changes it. The compile cache keys on it, and evaluation results
record it so that no table mixes figures of different code."""

from __future__ import annotations

import functools
import hashlib
import os


def package_files() -> list[str]:
    """Every .py file of the loaded aoizora package and the _core extension, sorted."""
    import aoizora

    # Real paths: one folder reached twice (sys.path holding "python" and "bench/../python")
    # must count once, or the same code would get another fingerprint and miss the cache.
    files = set()
    for root in aoizora.__path__:
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            files.update(os.path.realpath(os.path.join(folder, n)) for n in names if n.endswith(".py"))
    from aoizora import _core

    files.add(os.path.realpath(_core.__file__))
    return sorted(files)


@functools.lru_cache(maxsize=None)
def code_fingerprint() -> str:
    """16 hex digits of sha256 over the package files (name and content of each)."""
    h = hashlib.sha256()
    for path in package_files():
        h.update(os.path.basename(path).encode() + b"\0")
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()[:16]

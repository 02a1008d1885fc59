"""Files are written through a temporary file in the same folder and a rename, so a reader
never sees a half-written plan, report, cache entry or result, even after Ctrl-C.

    write_atomic(path, data)        one file
    with Batch() as batch:          several files: all of them or none
        batch.write(path, data)
        batch.produce(path, fn)     fn(temporary path) writes the file (e.g. the C++ trace)
    # renamed into place only when the block ends without an exception

Files get the permissions a plain open() would give (0666 less the umask), not mkstemp's
0600, so a plan is readable by whoever could read the folder.
"""

from __future__ import annotations

import os
import tempfile
from typing import Callable


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _temporary(path: str) -> str:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())
    return tmp


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _write(tmp: str, data: str | bytes) -> None:
    with open(tmp, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def write_atomic(path: str, data: str | bytes) -> None:
    with Batch() as batch:
        batch.write(path, data)


class Batch:
    """Stages files next to their destinations; renames them all at a clean exit, removes
    them all otherwise (an error, Ctrl-C)."""

    def __init__(self) -> None:
        self._staged: list[tuple[str, str]] = []   # (temporary, destination)

    def produce(self, path: str, fn: Callable[[str], None]) -> None:
        tmp = _temporary(path)
        self._staged.append((tmp, path))
        fn(tmp)

    def write(self, path: str, data: str | bytes) -> None:
        self.produce(path, lambda tmp: _write(tmp, data))

    def __enter__(self) -> "Batch":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                for tmp, path in self._staged:
                    os.replace(tmp, path)
        finally:
            for tmp, _ in self._staged:
                _remove(tmp)

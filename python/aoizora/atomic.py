"""Files are written through a temporary file in the same folder and a rename, so a reader
never sees a half-written plan, report, cache entry or result, even after Ctrl-C."""

from __future__ import annotations

import os
import tempfile


def write_atomic(path: str, data: str | bytes) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise

"""On-disk cache of compiler output, keyed by everything that changes it.

    cache = Cache()                 # root: $AOIZORA_CACHE or ~/.cache/aoizora
    k = cache_key({...})            # sha256 of the canonical JSON of a dict
    cache.get(k) -> str | None      # None on a miss or an unreadable entry
    cache.put(k, text, meta)        # atomic (temporary file + rename): never half-written

Entries are gzip files `<root>/<k[:2]>/<k>.gz` with a JSON sidecar `<k>.json` holding the key
dict (for humans). An interrupted write leaves at most a `.tmp-*` file that is never read.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from typing import Any

from aoizora.atomic import write_atomic


def default_root() -> str:
    return os.environ.get("AOIZORA_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "aoizora")


def cache_key(fields: dict[str, Any]) -> str:
    blob = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class Cache:
    def __init__(self, root: str | None = None):
        self.root = root or default_root()

    def _path(self, key: str, ext: str) -> str:
        return os.path.join(self.root, key[:2], f"{key}{ext}")

    def get(self, key: str) -> str | None:
        try:
            with gzip.open(self._path(key, ".gz"), "rt") as f:
                return f.read()
        except (OSError, EOFError):
            return None

    def put(self, key: str, text: str, meta: dict[str, Any] | None = None) -> None:
        if meta is not None:
            write_atomic(self._path(key, ".json"),
                          json.dumps(meta, sort_keys=True, indent=1, default=str).encode())
        write_atomic(self._path(key, ".gz"), gzip.compress(text.encode(), compresslevel=3))

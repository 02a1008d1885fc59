"""On-disk cache of compiler output, keyed by everything that changes it.

    cache = Cache()                 # root: $AOIZORA_CACHE or ~/.cache/aoizora; UserError if
                                    # the root is a file or cannot be written
    k = cache_key({...})            # sha256 of the canonical JSON of a dict
    cache.get(k) -> str | None      # None on a miss or a damaged entry (reported and removed)
    cache.put(k, text, meta)        # atomic (temporary file + rename): never half-written
    cache.put_failure(k, error, meta)  # a compile the compiler refused (the program does not
    cache.get_failure(k) -> str | None #   fit the target): its error, so it is not run again

Entries are gzip files `<root>/<k[:2]>/<k>.gz` with a JSON sidecar `<k>.json` holding the key
dict (for humans) and "sha256", the checksum of the uncompressed text. The sidecar is written
first, so an interrupted write leaves at most a sidecar without entry (a miss) or a `.tmp-*`
file, never read. On read the text must decompress, decode and match the checksum; an entry
that does not (empty, truncated, junk, edited) is reported through `warn`, removed, and
counted a miss, so the caller recomputes it. `damaged` lists the keys so removed.

`stored` counts the entries this object wrote (what an interrupted command leaves for its
rerun). A write that fails (a full disk, permissions) leaves no entry; the result is still
good, so the command goes on, and the failures are said once, in one line with their count
and what to do, when the process exits (not one line per entry).
"""

from __future__ import annotations

import atexit
import errno
import gzip
import hashlib
import json
import os
import sys
import zlib
from typing import Any, Callable

from aoizora.atomic import write_atomic
from aoizora.errors import UserError


def default_root() -> str:
    return os.environ.get("AOIZORA_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "aoizora")


def cache_key(fields: dict[str, Any]) -> str:
    blob = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def checksum(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _warn_stderr(message: str) -> None:
    print(f"aoizora: warning: {message}", file=sys.stderr, flush=True)


def check_root(root: str) -> None:
    """Raises UserError unless `root` is (or can be made) a writable folder."""
    where = "AOIZORA_CACHE" if os.environ.get("AOIZORA_CACHE") == root else "the cache folder"
    probe = root
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        raise UserError(f"{where} {root!r}: {probe!r} is not a folder: point AOIZORA_CACHE "
                        "at a folder (or remove the file)")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UserError(f"{where} {root!r}: {probe!r} is not writable: point AOIZORA_CACHE "
                        "at a folder you can write")


class Cache:
    def __init__(self, root: str | None = None,
                 warn: Callable[[str], None] | None = None):
        self.root = root or default_root()
        check_root(self.root)
        self.warn = warn or _warn_stderr
        self.damaged: list[str] = []
        self.stored = 0                     # entries written by this object
        self.unwritten = 0                  # entries whose write failed
        self._first_failure: OSError | None = None

    def _path(self, key: str, ext: str) -> str:
        return os.path.join(self.root, key[:2], f"{key}{ext}")

    def _read(self, key: str) -> str:
        """The verified text; FileNotFoundError on a miss, ValueError on a damaged entry."""
        path = self._path(key, ".gz")
        try:
            with gzip.open(path, "rb") as f:
                data = f.read()
        except (EOFError, gzip.BadGzipFile, zlib.error) as e:
            raise ValueError(f"not a complete gzip file ({e})") from e
        try:
            with open(self._path(key, ".json")) as f:
                want = json.load(f).get("sha256")
        except FileNotFoundError:
            raise ValueError("its metadata (checksum) is missing") from None
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as e:
            raise ValueError(f"its metadata is unreadable ({e})") from e
        if not isinstance(want, str) or hashlib.sha256(data).hexdigest() != want:
            raise ValueError("its checksum does not match")
        return data.decode()

    def get(self, key: str) -> str | None:
        try:
            return self._read(key)
        except FileNotFoundError:
            return None
        except (ValueError, OSError) as e:  # damaged or unreadable: never a hit
            return self._discard(key, self._path(key, ".gz"), e)

    def get_failure(self, key: str) -> str | None:
        """The error of a job the compiler refused, stored by put_failure; None if none (a
        damaged record is reported, removed and a miss)."""
        path = self._path(key, ".failed.json")
        try:
            with open(path) as f:
                error = json.load(f)["error"]
            if not isinstance(error, str) or not error:
                raise ValueError("no error text")
            return error
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, OSError, UnicodeDecodeError) as e:
            return self._discard(key, path, e)

    def _discard(self, key: str, path: str, e: Exception) -> None:
        """A damaged entry (text or failure record): reported, removed, a miss."""
        self.damaged.append(key)
        self.warn(f"cache entry {path} is damaged: {e}; removed, recomputing")
        self._remove(key)

    def put_failure(self, key: str, error: str, meta: dict[str, Any] | None = None) -> None:
        """Stores a compile's failure that the same job would meet again (the compiler's
        verdict that the program does not fit the target), so a later plan does not redo
        the compile to learn it; a failure to write is reported and leaves no record."""
        try:
            write_atomic(self._path(key, ".failed.json"), json.dumps(
                {**(meta or {}), "error": error}, sort_keys=True, indent=1, default=str).encode())
        except OSError as e:
            self._unwritten(e)
            return
        self.stored += 1

    def _remove(self, key: str) -> None:
        for ext in (".gz", ".json", ".failed.json"):
            try:
                os.unlink(self._path(key, ext))
            except FileNotFoundError:
                pass
            except OSError as e:
                self.warn(f"cannot remove {self._path(key, ext)}: {e.strerror}")

    def put(self, key: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Stores text under key; a failure to write (disk full, permissions) is reported
        and leaves no entry, as the result is still good."""
        meta = {**(meta or {}), "sha256": checksum(text)}
        try:
            write_atomic(self._path(key, ".json"),
                         json.dumps(meta, sort_keys=True, indent=1, default=str).encode())
            write_atomic(self._path(key, ".gz"), gzip.compress(text.encode(), compresslevel=3))
        except OSError as e:
            self._remove(key)
            self._unwritten(e)
            return
        self.stored += 1

    def _unwritten(self, e: OSError) -> None:
        """Counts an entry that could not be written; the first registers the one line said
        at exit (report_unwritten)."""
        self.unwritten += 1
        if self._first_failure is None:
            self._first_failure = e
            atexit.register(self.report_unwritten)

    def report_unwritten(self) -> None:
        """Says, once, how many entries could not be written, why and what to do."""
        if not self.unwritten:
            return
        e, n = self._first_failure, self.unwritten
        todo = ("free space there or point AOIZORA_CACHE at a folder with room"
                if e.errno in (errno.ENOSPC, errno.EDQUOT) else
                "point AOIZORA_CACHE at a folder you can write")
        self.warn(f"{n} cache entr{'y' if n == 1 else 'ies'} could not be written to "
                  f"{self.root} ({e.strerror}): the results are good but a rerun computes "
                  f"them again; {todo}")
        self.unwritten = 0

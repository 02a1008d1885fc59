"""What a result was made with: the code version (a digest of the loaded package, and for
people the git commit and whether it had local changes) and the settings, so that no table
mixes figures from different code."""

from __future__ import annotations

import os
import subprocess
from typing import Any

from aoizora.errors import UserError
from aoizora.compile.fingerprint import code_fingerprint


def _git_commit() -> dict[str, Any]:
    """The commit of the checkout the aoizora package was loaded from (for people; the
    fingerprint decides), or "unknown" for an installed copy: the checkout a command runs in
    need not hold the code that runs."""
    import aoizora

    where = os.path.dirname(os.path.abspath(aoizora.__file__))

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", where, *args], capture_output=True, text=True,
                                 timeout=20, check=True)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip()

    commit = git("rev-parse", "HEAD")
    if not commit:
        return {"commit": "unknown", "dirty": None, "source": "installed copy"}
    status = git("status", "--porcelain", "--untracked-files=no", "--", ":/cpp", ":/python")
    return {"commit": commit, "dirty": bool(status), "source": "checkout"}


def code_version() -> dict[str, Any]:
    """{"code": fingerprint.code_fingerprint(), "commit": the checkout's commit or "unknown",
    "dirty": whether its cpp/ or python/ had uncommitted changes}. Results compare by
    "code"."""
    return {"code": code_fingerprint(), **_git_commit()}


def provenance(settings: dict[str, Any]) -> dict[str, Any]:
    import jax

    from aoizora import __version__

    return {**code_version(), "aoizora": __version__, "jax": jax.__version__,
            "settings": settings}


def version_label(v: dict[str, Any]) -> str:
    """The code version of a code_version() or provenance dict."""
    return v.get("code", "unknown")


def version_of(result: dict[str, Any]) -> str:
    return version_label(result.get("provenance") or {})


def check_one_version(results: list[dict[str, Any]]) -> str:
    """The one code version every result was made with; raises UserError naming the versions
    and their settings when they differ (rerun them with --force, or --only the rest)."""
    by: dict[str, list[str]] = {}
    for r in results:
        by.setdefault(version_of(r), []).append(r["key"])
    if len(by) > 1:
        parts = "; ".join(f"{v}: {len(keys)} ({', '.join(keys[:3])}"
                          f"{', ...' if len(keys) > 3 else ''})" for v, keys in sorted(by.items()))
        raise UserError(f"the results come from {len(by)} code versions ({parts}): rerun the "
                        "older ones with --force so that no table mixes them")
    return next(iter(by), "unknown")

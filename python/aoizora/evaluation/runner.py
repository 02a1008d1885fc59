"""The grid: each setting evaluated once, its JSON written as soon as it is done, so that an
interrupted grid resumes where it stopped. A result made by other code (another commit, or
local changes) is never kept silently: it is rerun, or the tables refuse to mix it."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Callable

from aoizora.atomic import write_atomic
from aoizora.evaluation.grid import SCHEMA, Setting, cost_order
from aoizora.evaluation.provenance import code_version, version_label, version_of
from aoizora.evaluation.setting import evaluate_setting


def write_json_atomic(path: str, data: Any) -> None:
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def setting_path(out_dir: str, setting: Setting) -> str:
    return os.path.join(out_dir, "settings", f"{setting.key}.json")


def _reusable(old: dict[str, Any] | None, oracle: bool, version: str) -> bool:
    """A result is kept when it was made by this code version and at least the asked mode."""
    if old is None or version_of(old) != version:
        return False
    return old.get("status") != "ok" or old.get("oracle_mode", False) >= oracle


def run_grid(settings: list[Setting], out_dir: str, *, oracle: bool = False,
             workers: int | None = 1, force: bool = False, cache=None,
             top_k: int | None = None, exhaustive: bool = True,
             log: Callable[[str], None] = lambda s: None,
             executor=None) -> list[dict[str, Any]]:
    """Evaluates each setting not done yet by this code version, writing each one's JSON as
    soon as it is done. Returns every setting's result. executor (executor.py): where the
    jobs run (default local processes); settings run one at a time, as each one's planning
    time is measured."""
    version = version_label(code_version())
    out = []
    for s in settings:
        path = setting_path(out_dir, s)
        old = load_result(path)
        if not force and _reusable(old, oracle, version):
            log(f"{s.key}: done before by this code, kept ({path})")
            out.append(old)
            continue
        t0 = time.perf_counter()
        r = evaluate_setting(s, oracle=oracle, workers=workers, cache=cache, top_k=top_k,
                             exhaustive=exhaustive, log=log, executor=executor)
        r["oracle_mode"] = oracle
        r["eval_s"] = round(time.perf_counter() - t0, 3)
        write_json_atomic(path, r)
        log(f"{s.key}: {r['status']} in {r['eval_s']:.1f} s -> {path}")
        out.append(r)
    return out


def load_result(path: str) -> dict[str, Any] | None:
    """A setting's result, or None when absent, unreadable or of another schema."""
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return d if isinstance(d, dict) and d.get("schema") == SCHEMA else None


def load_results(out_dir: str) -> list[dict[str, Any]]:
    folder = os.path.join(out_dir, "settings")
    if not os.path.isdir(folder):
        return []
    rows = [load_result(os.path.join(folder, f)) for f in sorted(os.listdir(folder))
            if f.endswith(".json")]
    rows = [r for r in rows if r is not None]
    return sorted(rows, key=lambda r: cost_order(Setting(**r["setting"])))


def write_outputs(out_dir: str, results: list[dict[str, Any]] | None = None) -> list[str]:
    """results.md, results.csv, summary.json and the PNG plots from the results (default:
    every result under out_dir). Raises UserError when there is none, or when they come from
    more than one code version."""
    from aoizora.errors import UserError
    from aoizora.evaluation.plots import write_plots
    from aoizora.evaluation.tables import write_tables

    results = load_results(out_dir) if results is None else results
    if not results:
        raise UserError(f"no evaluation results under {out_dir}/settings: run aoizora eval "
                        "without --report-only first")
    os.makedirs(out_dir, exist_ok=True)
    return write_tables(out_dir, results) + write_plots(out_dir, results)

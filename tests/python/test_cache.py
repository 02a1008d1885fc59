"""The compiler cache never takes a damaged entry as a hit: each entry carries the sha256 of
its text in its metadata, and an empty, truncated, junk-but-valid-gzip, edited or
unaccompanied entry is reported, removed and recomputed. AOIZORA_CACHE must name a folder.
The compile cache key fingerprints the whole package."""

from __future__ import annotations

import gzip
import json
import os

import pytest

from aoizora import cli
from aoizora.compile import fingerprint
from aoizora.planning import strategies as S
from aoizora.compile.batch import run_jobs
from aoizora.compile.cache import Cache, cache_key, checksum
from aoizora.errors import UserError
from aoizora.compile.jobs import Job
from aoizora.models import get_model, get_workload

KEY = cache_key({"test": 1})
TEXT = "HloModule m\nENTRY e { ROOT p = f32[] parameter(0) }\n"


def _cache(tmp_path, warnings):
    return Cache(str(tmp_path / "cache"), warn=warnings.append)


def _gz(cache, key=KEY):
    return cache._path(key, ".gz")


def test_entry_round_trips_with_its_checksum_in_the_metadata(tmp_path):
    warnings: list[str] = []
    cache = _cache(tmp_path, warnings)
    cache.put(KEY, TEXT, {"job": "x"})
    assert cache.get(KEY) == TEXT and not warnings
    with open(cache._path(KEY, ".json")) as f:
        meta = json.load(f)
    assert meta["sha256"] == checksum(TEXT) and meta["job"] == "x"
    assert cache.get(cache_key({"other": 1})) is None and not warnings  # a plain miss


def _empty(path):
    open(path, "wb").close()


def _truncated(path):
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])


def _junk_gzip(path):
    open(path, "wb").write(gzip.compress(b"not the compiled HLO at all"))


def _empty_gzip(path):
    open(path, "wb").write(gzip.compress(b""))


def _not_gzip(path):
    open(path, "wb").write(b"\x00\x01garbage")


@pytest.mark.parametrize("damage", [_empty, _truncated, _junk_gzip, _empty_gzip, _not_gzip])
def test_damaged_entry_is_reported_removed_and_a_miss(tmp_path, damage):
    warnings: list[str] = []
    cache = _cache(tmp_path, warnings)
    cache.put(KEY, TEXT, {})
    damage(_gz(cache))
    assert cache.get(KEY) is None
    assert len(warnings) == 1 and "damaged" in warnings[0] and "\n" not in warnings[0]
    assert cache.damaged == [KEY]
    assert not os.path.exists(_gz(cache)) and not os.path.exists(cache._path(KEY, ".json"))
    cache.put(KEY, TEXT, {})                     # recomputed and stored again
    assert cache.get(KEY) == TEXT


def test_entry_whose_checksum_does_not_match_is_a_miss(tmp_path):
    warnings: list[str] = []
    cache = _cache(tmp_path, warnings)
    cache.put(KEY, TEXT, {})
    meta_path = cache._path(KEY, ".json")
    meta = json.load(open(meta_path))
    meta["sha256"] = checksum("something else")
    json.dump(meta, open(meta_path, "w"))
    assert cache.get(KEY) is None and "checksum" in warnings[0]


def test_entry_without_metadata_is_a_miss(tmp_path):
    warnings: list[str] = []
    cache = _cache(tmp_path, warnings)
    cache.put(KEY, TEXT, {})
    os.unlink(cache._path(KEY, ".json"))
    assert cache.get(KEY) is None and "metadata" in warnings[0]


def test_damaged_compile_entry_is_recomputed_by_run_jobs(tmp_path):
    cfg, w = get_model("wan-tiny"), get_workload("tiny")
    good = next(c for c in S.enumerate_candidates(cfg, w, 4) if c.name == "dp2-ring2")
    warnings: list[str] = []
    cache = _cache(tmp_path, warnings)
    jobs = [Job("lower", good, cfg, w, "cpu:4")]
    first = run_jobs(jobs, workers=0, cache=cache)[0]
    _junk_gzip(_gz(cache, first.key))
    again = run_jobs(jobs, workers=0, cache=cache)[0]
    assert again.ok and not again.cached and again.text == first.text
    assert len(warnings) == 1
    assert run_jobs(jobs, workers=0, cache=cache)[0].cached   # stored again, verified


def test_cache_root_that_is_a_file_is_one_line_error(tmp_path, monkeypatch, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(UserError, match="not a folder"):
        Cache(str(f))
    monkeypatch.setenv("AOIZORA_CACHE", str(f))
    assert cli.main(["plan", "--model", "wan-tiny", "--video", "tiny", "--quiet",
                     "--out", str(tmp_path / "plan.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "AOIZORA_CACHE" in err
    assert not (tmp_path / "plan.json").exists()


def test_compile_key_fingerprints_every_package_file_and_the_core():
    import aoizora
    from aoizora import _core

    files = fingerprint.package_files()
    names = {os.path.relpath(p, os.path.dirname(aoizora.__file__)) for p in files}
    for rel in ("cli.py", os.path.join("planning", "planner.py"),
                os.path.join("planning", "stage1.py"), os.path.join("planning", "stage2.py"),
                os.path.join("compile", "cache.py"), os.path.join("inputs", "validate.py"),
                os.path.join("commands", "plan.py"), os.path.join("models", "wan.py")):
        assert rel in names, rel
    assert os.path.realpath(_core.__file__) in files


def test_a_package_folder_reached_twice_counts_once(monkeypatch):
    """sys.path holding python/ and bench/../python must not change the fingerprint (it
    did: a bench run missed every cache entry of the plan it reads)."""
    import aoizora

    fingerprint.code_fingerprint.cache_clear()
    try:
        before = fingerprint.code_fingerprint()
        root = aoizora.__path__[0]
        twice = os.path.join(root, "..", os.path.basename(root))
        monkeypatch.setattr(aoizora, "__path__", [*aoizora.__path__, twice])
        fingerprint.code_fingerprint.cache_clear()
        assert len(fingerprint.package_files()) == len(set(fingerprint.package_files()))
        assert fingerprint.code_fingerprint() == before
    finally:
        fingerprint.code_fingerprint.cache_clear()


def test_compile_key_changes_when_any_package_file_changes(tmp_path, monkeypatch):
    files = [tmp_path / "a.py", tmp_path / "_core.so"]
    for f in files:
        f.write_text("one")
    monkeypatch.setattr(fingerprint, "package_files", lambda: [str(f) for f in files])
    fingerprint.code_fingerprint.cache_clear()
    try:
        before = fingerprint.code_fingerprint()
        files[1].write_text("two")        # a rebuilt extension, not a listed source file
        fingerprint.code_fingerprint.cache_clear()
        assert fingerprint.code_fingerprint() != before
    finally:
        fingerprint.code_fingerprint.cache_clear()


def test_a_program_the_compiler_refuses_is_cached_as_that_failure(tmp_path, monkeypatch):
    """XLA's verdict that a program does not fit the target (RESOURCE_EXHAUSTED) is met again
    by the same job, so it is cached and a later plan does not redo the compile to learn it;
    this machine running out of memory (MemoryError) is not cached; a damaged record is
    reported, removed and recomputed."""
    from jax.errors import JaxRuntimeError

    from aoizora.compile import compiler

    cfg, w = get_model("wan-tiny"), get_workload("tiny")
    cand = next(c for c in S.enumerate_candidates(cfg, w, 4) if c.name == "dp2-ring2")
    jobs = [Job("lower", cand, cfg, w, "cpu:4")]
    warnings: list[str] = []
    cache = _cache(tmp_path, warnings)
    calls = []

    def refuse(*a, **k):
        calls.append(1)
        raise JaxRuntimeError("RESOURCE_EXHAUSTED: E1001: CompileTimeScopedVmemOom")

    monkeypatch.setattr(compiler, "build", refuse)
    first = run_jobs(jobs, workers=0, cache=cache)[0]
    assert not first.ok and first.verdict and first.out_of_memory and not first.cached
    again = run_jobs(jobs, workers=0, cache=cache)[0]
    assert len(calls) == 1                                   # not compiled again
    assert not again.ok and again.cached and again.verdict and again.out_of_memory
    assert again.error == first.error and "CompileTimeScopedVmemOom" in again.error

    with open(cache._path(first.key, ".failed.json"), "w") as f:
        f.write("{not json")
    assert not run_jobs(jobs, workers=0, cache=cache)[0].cached and len(calls) == 2
    assert len(warnings) == 1 and "damaged" in warnings[0]

    def host_out_of_memory(*a, **k):
        calls.append(1)
        raise MemoryError()

    other = Cache(str(tmp_path / "other"))
    monkeypatch.setattr(compiler, "build", host_out_of_memory)
    for _ in range(2):
        out = run_jobs(jobs, workers=0, cache=other)[0]
        assert out.out_of_memory and not out.verdict and not out.cached
    assert len(calls) == 4                                   # this machine's: tried each time


def test_entries_a_full_disk_refuses_are_one_line_with_their_count(tmp_path, monkeypatch):
    """Every write fails after the first entry: nothing half-written is left, and the
    failures are said once, counted, with what to do (not one line per entry)."""
    import errno

    from aoizora.compile import cache as cache_module

    warnings = []
    cache = _cache(tmp_path, warnings)
    cache.put(cache_key({"n": 0}), TEXT)
    real = cache_module.write_atomic

    def full(path, data):
        real(path, data)   # the sidecar goes in; the text then meets a full disk
        if path.endswith(".gz"):
            os.unlink(path)
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache_module, "write_atomic", full)
    for n in range(1, 4):
        cache.put(cache_key({"n": n}), TEXT)
    cache.put_failure(cache_key({"n": 4}), "RESOURCE_EXHAUSTED")   # fits
    assert warnings == [] and (cache.stored, cache.unwritten) == (2, 3)
    cache.report_unwritten()
    cache.report_unwritten()   # said once
    assert warnings == [f"3 cache entries could not be written to {cache.root} (No space left "
                        "on device): the results are good but a rerun computes them again; "
                        "free space there or point AOIZORA_CACHE at a folder with room"]
    left = [f for d in os.listdir(cache.root) for f in os.listdir(os.path.join(cache.root, d))]
    assert sorted(f.split(".", 1)[1] for f in left) == ["failed.json", "gz", "json"]
    assert all(cache.get(cache_key({"n": n})) is None for n in range(1, 4))

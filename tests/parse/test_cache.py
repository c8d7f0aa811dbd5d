"""The parse cache: beside the raw data (never in data/), reused while the raw files are
unchanged, invalidated when one changes, written atomically."""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from msprof_py.parse import build, cache
from msprof_py.parse.session import TABLES, load


def test_second_load_comes_from_the_cache_and_equals_the_parse(small_prof: Path, monkeypatch) -> None:
    first = load(small_prof)
    cache_file = cache.cache_dir(small_prof) / cache.CACHE_FILE
    assert cache_file.is_file()
    assert not any("msprof_py_cache" in str(p) for p in (small_prof / "host" / "data").rglob("*"))

    def no_parse(*a, **k):
        raise AssertionError("parsed again although the raw data did not change")

    monkeypatch.setattr(build, "build_prof", no_parse)
    second = load(small_prof)
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(first, name), getattr(second, name))
    assert second.warnings.messages == first.warnings.messages  # warnings survive the cache


def test_changed_raw_file_invalidates_the_cache(small_prof: Path) -> None:
    load(small_prof)
    f = small_prof / "device_0" / "data" / "stars_soc.data.0.slice_3"
    data = f.read_bytes()
    f.write_bytes(data[:-128])  # the last two logs (one task) gone
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    s = load(small_prof)
    assert len(s.tasks[s.tasks["match"] != "host_only"]) == 30


def test_cache_from_another_parser_version_is_ignored(small_prof: Path, monkeypatch) -> None:
    load(small_prof)
    monkeypatch.setattr(cache, "PARSER_VERSION", "parse-other")
    calls = []
    real = build.build_prof
    monkeypatch.setattr(build, "build_prof", lambda *a: calls.append(1) or real(*a))
    load(small_prof)
    assert calls == [1]


def test_cache_write_is_atomic_and_leaves_no_temp_files(small_prof: Path, monkeypatch) -> None:
    import pickle

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pickle, "dump", boom)
    s = load(small_prof)
    assert any("cannot write the parse cache" in m for m in s.warnings)
    folder = cache.cache_dir(small_prof)
    assert not list(folder.glob("*"))  # neither a partial session.pkl nor a temp file


def test_corrupt_cache_file_is_reparsed(small_prof: Path) -> None:
    load(small_prof)
    (cache.cache_dir(small_prof) / cache.CACHE_FILE).write_bytes(b"not a pickle")
    s = load(small_prof)
    assert len(s.tasks) == 33


@pytest.mark.parametrize("use_cache", [False])
def test_use_cache_false_writes_nothing(small_prof: Path, use_cache: bool) -> None:
    load(small_prof, use_cache=use_cache)
    assert not (small_prof / cache.CACHE_DIR).exists()


def test_cache_is_where_msprof_does_not_look(small_prof: Path) -> None:
    """msprof's Python analysis takes every PROF sub-dir outside its FILTER_DIRS for a result dir:
    the cache lives in mindstudio_profiler_log (filtered), and an old in-tree cache is removed."""
    legacy = cache.legacy_cache_dir(small_prof)
    legacy.mkdir()
    (legacy / cache.CACHE_FILE).write_bytes(b"old")
    load(small_prof)
    subdirs = {p.name for p in small_prof.iterdir() if p.is_dir()}
    assert subdirs <= {"host", "device_0", "device_1", "mindstudio_profiler_log"}, subdirs
    assert (cache.cache_dir(small_prof) / cache.CACHE_FILE).is_file()

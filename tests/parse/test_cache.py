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
    real = cache._dump

    def boom(f, obj, *a):  # a full disk after part of the file
        real(f, obj, *a)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache, "_dump", boom)
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


def test_part_round_trip_over_a_mapped_file(tmp_path: Path, monkeypatch) -> None:
    """A part's tables come back equal (values, dtypes, categories) with their arrays over the
    mapped file (copy-on-write: a column written in place changes neither the file nor the next
    load); where the file cannot be mapped it is read and gives the same tables."""
    import mmap

    import numpy as np
    import pandas as pd
    from msprof_py.errors import WarningLog

    prof = tmp_path / "PROF_1"
    prof.mkdir()
    n = 1000
    part = {"tasks": pd.DataFrame({"start_ns": np.arange(n, dtype=np.int64) * 7,
                                   "ratio": np.linspace(0, 1, n), "flag": np.arange(n) % 2 == 0,
                                   "op": pd.Categorical(["a", "b"] * (n // 2)), "name": ["x"] * n,
                                   "small": np.arange(n, dtype=np.int8)}),
            "empty": pd.DataFrame({"a": np.zeros(0, np.int64)}), "note": [1, "two"]}
    assert cache.store(prof, "k", part, WarningLog(), part="device_0")
    path = cache.cache_dir(prof) / "device_0.pkl"
    assert path.read_bytes().startswith(cache.MAGIC)
    before = path.read_bytes()
    got = cache.load(prof, "k", "device_0")
    assert got is not None and got["note"] == [1, "two"]
    for k in ("tasks", "empty"):
        pd.testing.assert_frame_equal(got[k], part[k])
    col = got["tasks"]._mgr.blocks[0].values
    assert col.flags.writeable
    got["tasks"].loc[3, "start_ns"] = -1  # written in place: the file and the next load unchanged
    assert path.read_bytes() == before
    again = cache.load(prof, "k", "device_0")
    pd.testing.assert_frame_equal(again["tasks"], part["tasks"])
    assert cache.load(prof, "other key", "device_0") is None
    del got, again, col

    def no_map(*a, **k):
        raise OSError(19, "No such device")

    monkeypatch.setattr(mmap, "mmap", no_map)
    read = cache.load(prof, "k", "device_0")
    pd.testing.assert_frame_equal(read["tasks"], part["tasks"])


def test_cut_short_or_foreign_cache_files_are_parsed_again(tmp_path: Path) -> None:
    import pickle

    import numpy as np
    import pandas as pd
    from msprof_py.errors import WarningLog

    prof = tmp_path / "PROF_1"
    prof.mkdir()
    part = {"tasks": pd.DataFrame({"a": np.arange(5000, dtype=np.int64)})}
    assert cache.store(prof, "k", part, WarningLog(), part="device_0")
    path = cache.cache_dir(prof) / "device_0.pkl"
    whole = path.read_bytes()
    for cut in (0, 5, cache._HEAD.size, len(whole) // 2, len(whole) - 1):
        path.write_bytes(whole[:cut])
        assert cache.load(prof, "k", "device_0") is None, cut
    path.write_bytes(pickle.dumps({"key": "k", "data": part}, protocol=5))  # an older version's file
    assert cache.load(prof, "k", "device_0") is None
    path.write_bytes(whole[:8] + b"\xff" * 16 + whole[24:])  # absurd sizes in the header
    assert cache.load(prof, "k", "device_0") is None
    path.write_bytes(whole)
    assert cache.load(prof, "k", "device_0")["tasks"]["a"].sum() == sum(range(5000))


def test_each_array_of_a_part_has_a_map_of_its_own(tmp_path: Path) -> None:
    """An array read back keeps only its own bytes mapped: with one map of the whole file, the one
    column the DB thread still held kept every page the writers had read resident (issue 12 phase
    11).  Old files (arrays 64-byte aligned, not page aligned) read back the same."""
    import mmap

    import numpy as np
    import pandas as pd
    from msprof_py.errors import WarningLog

    prof = tmp_path / "PROF_1"
    prof.mkdir()
    part = {"t": pd.DataFrame({"a": np.arange(5000, dtype=np.int64), "b": np.linspace(0, 1, 5000)})}
    assert cache.store(prof, "k", part, WarningLog(), part="device_0")
    got = cache.load(prof, "k", "device_0")

    def mapped(arr: np.ndarray) -> mmap.mmap:
        while isinstance(arr, np.ndarray) and arr.base is not None:
            arr = arr.base
        assert isinstance(arr, memoryview)
        return arr.obj

    maps = [mapped(got["t"][c].to_numpy()) for c in ("a", "b")]
    assert all(isinstance(m, mmap.mmap) for m in maps) and maps[0] is not maps[1]
    assert all(len(m) < 2 * 5000 * 8 + 2 * mmap.ALLOCATIONGRANULARITY for m in maps)  # not the whole file
    pd.testing.assert_frame_equal(got["t"], part["t"])
    old_align = cache.ALIGN
    try:
        cache.ALIGN = 64
        assert cache.store(prof, "k2", part, WarningLog(), part="device_0")
    finally:
        cache.ALIGN = old_align
    pd.testing.assert_frame_equal(cache.load(prof, "k2", "device_0")["t"], part["t"])


@pytest.mark.parametrize("stage", [4096, 64 << 10])
def test_a_part_written_past_the_page_cache_has_the_same_bytes(tmp_path: Path, monkeypatch, stage: int) -> None:
    """``store(direct=True)`` (the parts an export holds in memory, issue 12 phase 14) writes the
    file a buffered store writes, byte for byte, and it loads back the same."""
    import numpy as np
    import pandas as pd
    from msprof_py import direct_io
    from msprof_py.errors import WarningLog

    monkeypatch.setattr(direct_io, "STAGE_BYTES", stage)
    monkeypatch.setenv(direct_io.DIRECT_ENV, "1")
    n = 50_000
    part = {"tasks": pd.DataFrame({"start_ns": np.arange(n, dtype=np.int64) * 7, "ratio": np.linspace(0, 1, n),
                                   "op": pd.Categorical(["a", "b"] * (n // 2)), "small": np.arange(n, dtype=np.int8)}),
            "note": [1, "two"]}
    files = []
    for direct, name in ((False, "PROF_1"), (True, "PROF_2")):
        prof = tmp_path / name
        prof.mkdir()
        assert cache.store(prof, "k", part, WarningLog(), part="device_0", direct=direct)
        files.append((cache.cache_dir(prof) / "device_0.pkl").read_bytes())
        got = cache.load(prof, "k", "device_0")
        pd.testing.assert_frame_equal(got["tasks"], part["tasks"])
    assert files[0] == files[1] and len(files[0]) > 4 * stage


def test_a_full_disk_while_a_part_is_written_past_the_page_cache(tmp_path: Path, monkeypatch) -> None:
    """The direct writes' ENOSPC is the usual warning; nothing is left in the cache folder."""
    import errno

    import numpy as np
    import pandas as pd
    from msprof_py import direct_io
    from msprof_py.errors import WarningLog

    monkeypatch.setattr(direct_io, "STAGE_BYTES", 4096)
    monkeypatch.setenv(direct_io.DIRECT_ENV, "1")

    def full(self, view, direct):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(direct_io._Sink, "_write", full)
    prof = tmp_path / "PROF_1"
    prof.mkdir()
    warnings = WarningLog()
    part = {"tasks": pd.DataFrame({"start_ns": np.arange(10_000, dtype=np.int64)})}
    assert not cache.store(prof, "k", part, warnings, part="device_0", direct=True)
    assert any("cannot write the parse cache" in m for m in warnings.messages)
    assert not list(cache.cache_dir(prof).glob("*"))

"""The host kinds decoded on a thread while the API calls are (``KindReader.prefetch``): the same
tables, the same warnings in the same order, an error raised where the kind is taken, and no
thread left once the host side is built."""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from msprof_py.errors import CorruptRecordError
from msprof_py.parse import registry
from msprof_py.parse.session import load


def _no_prefetch(monkeypatch) -> None:
    monkeypatch.setattr(registry.KindReader, "prefetch", lambda self, tags: None)


def _kinds_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "msprof-py-kinds"]


def _cut(prof: Path) -> None:
    """Ragged tails in four host kinds (the last slice of a stream): each gives a warning naming its file."""
    data = prof / "host" / "data"
    for name in ("unaging.compact.task_track.slice_0", "unaging.compact.node_basic_info.slice_0",
                 "unaging.additional.tensor_info.slice_0", "unaging.additional.context_id_info.slice_0"):
        f = data / name
        f.write_bytes(f.read_bytes()[:-10])
    # and an unaging API stream with a ragged tail: its warning is given on the main thread, before
    # the prefetched kinds' (taken after the API calls are built)
    whole = b"".join((data / f"aging.api_event.data.slice_{i}").read_bytes() for i in range(3))
    (data / "unaging.api_event.data.slice_0").write_bytes(whole[-3 * 40:-10])  # the last 3 records, cut


def test_same_tables_and_warnings_in_order(small_prof: Path, tmp_path: Path, monkeypatch) -> None:
    import shutil

    other = tmp_path / "other" / small_prof.name
    shutil.copytree(small_prof, other)
    _cut(small_prof)
    _cut(other)
    s = load(small_prof, use_cache=False)
    assert not _kinds_threads()
    _no_prefetch(monkeypatch)
    t = load(other, use_cache=False)
    assert [m.replace(str(other), "P") for m in t.warnings] == [m.replace(str(small_prof), "P") for m in s.warnings]
    assert sum("truncated record" in m for m in s.warnings) == 5
    for name in ("tasks", "api"):
        a, b = getattr(s, name), getattr(t, name)
        assert list(a.columns) == list(b.columns) and len(a) == len(b)
        for c in a.columns:
            assert a[c].dtype == b[c].dtype, c
            assert a[c].astype(str).tolist() == b[c].astype(str).tolist(), c


def test_error_of_a_prefetched_kind(small_prof: Path) -> None:
    from msprof_py.raw import node_basic_info

    f = small_prof / "host" / "data" / "unaging.compact.node_basic_info.slice_0"
    buf = bytearray(f.read_bytes())
    rec = np.frombuffer(buf, node_basic_info.DTYPE)
    rec["magic"][1] = 0x1234
    f.write_bytes(bytes(buf))
    with pytest.raises(CorruptRecordError) as info:
        load(small_prof, use_cache=False)
    assert info.value.path == str(f) and info.value.offset == node_basic_info.DTYPE.itemsize
    for t in _kinds_threads():
        t.join(5)
    assert not _kinds_threads()


def test_prefetch_then_release_waits(small_prof: Path) -> None:
    from msprof_py.parse.records.parts import DecodeContext
    from msprof_py.raw import task_track

    kinds = registry.KindReader(registry.HOST, small_prof / "host" / "data", DecodeContext())
    kinds.load_text()
    kinds.prefetch([task_track.FILE_TAG, "no.such.kind"])
    kinds.release()  # never taken: the thread is waited for, its result dropped
    assert not _kinds_threads() and not kinds._ahead
    assert len(kinds.get(task_track.FILE_TAG)["tasks"]["timestamp"])  # decoded again, in line

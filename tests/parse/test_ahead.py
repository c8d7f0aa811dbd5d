"""The first device dir's raw decode on a thread while the host side is decoded
(parse.ahead, ``build_host(ahead=True)``): the same tables and the same warnings, in the same
order, as the decode in line; the thread's error is raised where the decode would have run."""
from __future__ import annotations

import threading
from pathlib import Path

import pandas as pd
import pytest

from msprof_py.errors import CorruptRecordError, WarningLog
from msprof_py.parse import build
from msprof_py.parse.ahead import Ahead
from msprof_py.parse.source import ProfSource


def _build(prof: Path, ahead: bool) -> tuple[list[dict[str, pd.DataFrame]], list[str]]:
    s = ProfSource(prof, use_cache=False, ahead=ahead)
    parts = []
    for d in s.devices:
        session, info = s.build(d)
        s.add(info)
        parts.append({name: getattr(session, name) for name in build.DEVICE_TABLES})
    s.finish()
    return parts, list(s.warnings.messages)


def _corrupt_first_log(prof: Path) -> None:
    f = sorted((prof / "device_0" / "data").glob("stars_soc.data.*.slice_0"))[0]
    data = bytearray(f.read_bytes())
    data[2:4] = b"\0\0"  # the STARS magic of the first log: a device warning
    f.write_bytes(bytes(data))


def test_first_device_decoded_on_a_thread_gives_the_same_tables_and_warnings(small_prof: Path, monkeypatch) -> None:
    _corrupt_first_log(small_prof)
    threads = []
    real = build.load_device

    def logged(*a, **k):
        threads.append(threading.current_thread() is threading.main_thread())
        return real(*a, **k)

    monkeypatch.setattr(build, "load_device", logged)
    inline, w_inline = _build(small_prof, False)
    assert threads and all(threads)
    threads.clear()
    ahead, w_ahead = _build(small_prof, True)
    assert threads[0] is False and all(threads[1:])  # the first device's dir on the thread, no other
    assert any("without the magic number" in w for w in w_inline)
    assert w_ahead == w_inline
    for a, b in zip(ahead, inline, strict=True):
        for name in a:
            pd.testing.assert_frame_equal(a[name], b[name])


def test_thread_error_is_raised_where_the_decode_would_run(small_prof: Path, monkeypatch) -> None:
    def broken(*a, **k):
        raise CorruptRecordError("device_0/data/stars_soc.data.0.slice_0", 0, "cut short")

    monkeypatch.setattr(build, "load_device", broken)
    s = ProfSource(small_prof, use_cache=False, ahead=True)  # the host side is built: no error yet
    with pytest.raises(CorruptRecordError, match="cut short"):
        s.build(s.devices[0])


def test_ahead_replays_the_log_and_takes_once() -> None:
    a = Ahead()
    a.start("k", lambda log: (log.warn("second"), log.tally("bad", 2, "f:1"), 42)[2])
    w = WarningLog()
    w.warn("first")
    w.tally("bad", 1, "f:0")
    assert a.take("k", w) == 42
    assert w.messages == ["first", "bad: 3 found, the first at f:0", "second"]
    assert a.take("k", w) is None

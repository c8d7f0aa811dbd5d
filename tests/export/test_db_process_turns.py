"""When a streamed export lets a device's DB process go (export.stream, db_process): a device
before the last has its process told once its files are written, before the advice of that
device runs (it hands over and ends meanwhile), and ended before that device's tables are let go
of and the next device is read (from the parse cache, or decoded again when the cache could not
be written) and its process forked.  The outputs are the same as the DB written after the text."""
from __future__ import annotations

from pathlib import Path

import pytest

from msprof_py.export import ExportOptions, db_process, export
from msprof_py.parse import cache
from msprof_py.parse.source import ProfSource

from .test_db_thread import _copy, two_devices  # noqa: F401  (fixture)
from .test_streamed_export import _outputs


def _record(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    events: list[str] = []
    real_go, real_reap, real_put = db_process.DbProcesses._go, db_process.DbProcesses._reap, db_process.DbProcesses.put
    real_device = ProfSource.device

    def go(p):  # type: ignore[no-untyped-def]
        if p.go_fd >= 0:
            events.append("told")
        real_go(p)

    def reap(p):  # type: ignore[no-untyped-def]
        if p.code is None:
            events.append("ended")
        real_reap(p)

    def put(self, session):  # type: ignore[no-untyped-def]
        events.append("fork")
        real_put(self, session)

    def device(self, device_id, categories=None):  # type: ignore[no-untyped-def]
        events.append(f"read {device_id}")
        return real_device(self, device_id, categories)

    monkeypatch.setattr(db_process.DbProcesses, "_go", staticmethod(go))
    monkeypatch.setattr(db_process.DbProcesses, "_reap", staticmethod(reap))
    monkeypatch.setattr(db_process.DbProcesses, "put", put)
    monkeypatch.setattr(ProfSource, "device", device)
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "1")
    return events


def test_process_told_before_the_advice_and_ended_before_the_next_device(two_devices: Path, tmp_path: Path,  # noqa: F811
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    events = _record(monkeypatch)
    prof = _copy(two_devices, tmp_path / "p")
    export(prof, ExportOptions(), per_device=lambda p, d, s: events.append(f"advice {d}"))
    # device 0: read, forked, told after its files, its advice, ended; device 1: read, forked, advice;
    # its process ends with the DB
    assert events == ["read 0", "fork", "told", "advice 0", "ended", "read 1", "fork", "advice 1", "ended", "told"]  # (told last: stop)
    monkeypatch.undo()
    monkeypatch.setenv("MSPROF_PY_DB_THREAD", "0")
    after = _copy(two_devices, tmp_path / "a")
    export(after, ExportOptions())
    assert _outputs(prof) == _outputs(after) and list(prof.glob("*.db"))


def test_without_the_cache_the_previous_process_ends_before_a_device_is_decoded(
        two_devices: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    events = _record(monkeypatch)

    def store(prof, key, data, warnings, part="host", direct=False):  # type: ignore[no-untyped-def]
        warnings.warn(f"{prof}: cannot write the parse cache (test); parsing again next time")
        return False

    monkeypatch.setattr(cache, "store", store)
    prof = _copy(two_devices, tmp_path / "p")
    result = export(prof, ExportOptions())
    assert any("cannot write the parse cache" in m for m in result.warnings.messages)
    assert events[:6] == ["read 0", "fork", "told", "ended", "read 1", "fork"]  # (no advice given here)
    monkeypatch.undo()
    monkeypatch.setenv("MSPROF_PY_DB_THREAD", "0")
    after = _copy(two_devices, tmp_path / "a")
    export(after, ExportOptions())
    log = "mindstudio_profiler_log/msprof_py_export.log"  # (it has the cache's warning)
    assert {k: v for k, v in _outputs(prof).items() if k != log} == {k: v for k, v in _outputs(after).items() if k != log}


def test_last_device_kept_until_its_db_process_has_ended(two_devices: Path, tmp_path: Path,  # noqa: F811
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The last device's session is let go of only once the DB's processes have ended (its pages
    never become the last process's alone while both live); a device before the last goes at its
    end, after its process ended."""
    import gc
    import weakref

    refs: dict[int, weakref.ref] = {}
    alive_at_result: list[bool] = []
    real_result = db_process.DbProcesses.result

    def result(self):  # type: ignore[no-untyped-def]
        gc.collect()
        alive_at_result.extend([refs[0]() is not None, refs[1]() is not None])
        return real_result(self)

    monkeypatch.setattr(db_process.DbProcesses, "result", result)
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "1")
    prof = _copy(two_devices, tmp_path / "p")
    export(prof, ExportOptions(), per_device=lambda p, d, s: refs.setdefault(d, weakref.ref(s)))
    gc.collect()
    assert alive_at_result == [False, True]
    assert refs[1]() is None

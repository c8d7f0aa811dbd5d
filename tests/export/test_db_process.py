"""The DB's forked processes (export.db_process): what they inherit at the fork.  A Ctrl-C that
reaches a new process before it ignores SIGINT stays out of it (it would otherwise return into
the export's own code there); a process keeps only what the DB reads of its device and writes
the same DB; each forks with no other thread of the export running (what a thread holds at the
fork stays held for ever in the new process: the module doc's list); they are the default on
Linux up to a collection size, the thread past it, and either when forced."""
from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from msprof_py.export import ExportOptions, db_process, export
from msprof_py.export.unified_db_tasks import UNREAD_TASK_COLUMNS
from msprof_py.parse import schema

from .test_db_thread import _children, _copy, _leftovers, two_devices  # noqa: F401  (fixture)
from .test_streamed_export import _outputs, db_text


def test_ctrl_c_at_the_fork_stays_out_of_the_db_process(two_devices: Path, tmp_path: Path,  # noqa: F811
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    before = _children()
    real_fork = os.fork

    def fork() -> int:  # a Ctrl-C of the terminal reaching each new process at once
        pid = real_fork()
        if pid == 0:
            try:
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(10_000):  # Python runs a signal's handler between two bytecodes
                    pass
            except KeyboardInterrupt:
                os._exit(99)  # (it would have gone on in the export's code here)
        return pid

    monkeypatch.setattr(db_process.os, "fork", fork)
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "1")
    prof = _copy(two_devices, tmp_path / "p")
    export(prof, ExportOptions())  # the processes ignored it and wrote the DB
    monkeypatch.setattr(db_process.os, "fork", real_fork)
    monkeypatch.setenv("MSPROF_PY_DB_THREAD", "0")
    after = _copy(two_devices, tmp_path / "a")
    export(after, ExportOptions())
    assert _outputs(prof) == _outputs(after) and list(prof.glob("*.db"))
    assert _leftovers(prof) == [] and not _children() - before


def test_a_db_process_keeps_only_what_the_db_reads(two_devices: Path, tmp_path: Path,  # noqa: F811
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The process's view lacks the task columns no DB table reads (and the DB is the same: the
    test above); the export's session in the process is emptied, the export's own is whole."""
    seen: list[tuple[list[str], bool]] = []
    real_own, real_add = db_process.DbProcesses._own, db_process.DbProcesses._add

    def own(self, session):  # type: ignore[no-untyped-def]
        self.given = session
        return real_own(self, session)

    def add(self, d, view, *go):  # type: ignore[no-untyped-def]
        emptied = all(getattr(self.given, n) is None for n in ("tasks", "pmu", "api"))
        seen.append((list(view.tasks.columns), emptied))
        with open(self.dir / f"seen_{d}", "w") as f:  # (this runs in the DB process)
            f.write(repr(seen[-1]))
        return real_add(self, d, view, *go)

    monkeypatch.setattr(db_process.DbProcesses, "_own", own)
    monkeypatch.setattr(db_process.DbProcesses, "_add", add)
    real_result = db_process.DbProcesses.result
    got: list[str] = []

    def result(self):  # type: ignore[no-untyped-def]
        for d in range(self.count):
            self._reap(self.procs[d])
            got.append((self.dir / f"seen_{d}").read_text())
        return real_result(self)

    monkeypatch.setattr(db_process.DbProcesses, "result", result)
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "1")
    export(_copy(two_devices, tmp_path), ExportOptions())
    want = [c for c in schema.columns("tasks") if c not in UNREAD_TASK_COLUMNS]
    assert got == [repr((want, True))] * 2  # (``seen`` is the DB processes': empty here)


def test_db_processes_fork_with_no_other_thread_running(two_devices: Path, tmp_path: Path,  # noqa: F811
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    alive: list[list[str]] = []
    real_fork = os.fork
    others = set(threading.enumerate())  # (threads other tests left behind)

    def fork() -> int:  # the export's threads alive at the fork
        alive.append(sorted(t.name for t in set(threading.enumerate()) - others))
        return real_fork()

    monkeypatch.setattr(db_process.os, "fork", fork)
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "1")
    export(_copy(two_devices, tmp_path), ExportOptions())
    assert alive == [[], []], alive


def test_processes_are_the_default_up_to_the_size_limit(two_devices: Path,  # noqa: F811
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MSPROF_PY_DB_PROCESS", raising=False)
    monkeypatch.setattr(db_process.sys, "platform", "linux")
    raw = [sum(p.stat().st_size for p in (two_devices / d / "data").iterdir())
           for d in ("host", "device_0", "device_1")]
    size = raw[0] + max(raw[1:])
    monkeypatch.setattr(db_process, "PROCESS_RAW_LIMIT", size)
    assert db_process.use_processes(two_devices, [0, 1])
    assert db_process.use_processes(two_devices / "no such dir", [0])  # nothing to read: 0 bytes
    monkeypatch.setattr(db_process, "PROCESS_RAW_LIMIT", size - 1)
    assert not db_process.use_processes(two_devices, [0, 1])  # one byte more: the thread
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "1")
    assert db_process.use_processes(two_devices, [0, 1])  # forced
    monkeypatch.setattr(db_process, "PROCESS_RAW_LIMIT", size)
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "0")
    assert not db_process.use_processes(two_devices, [0, 1])
    monkeypatch.delenv("MSPROF_PY_DB_PROCESS")
    monkeypatch.setattr(db_process.sys, "platform", "darwin")
    assert not db_process.use_processes(two_devices, [0, 1])  # measured on Linux only


@pytest.mark.parametrize("miss", [False, True])
def test_rows_made_early_by_the_processes(two_devices: Path, tmp_path: Path, miss: bool,  # noqa: F811
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Device 0's process inserts its COMPUTE_TASK_INFO and TASK_PMU_INFO rows into the DB at once
    (``Fill.early``), with the string ids predicted for their tables' turn: the DB is the one
    written after the text files (its dump), also when the ids predicted for device 0's rows are
    not those the tables' turn gives (``miss``: every id one too high, mapped in place then)."""
    from msprof_py.export import pmu_db
    from msprof_py.export.unified_db_strings import StringIds

    log = tmp_path / "log"
    parent, real_build, real_remap = os.getpid(), pmu_db.insert_direct, pmu_db.remap_direct

    def build(*a, **k):  # type: ignore[no-untyped-def]
        with open(log, "a") as f:
            f.write(f"build {os.getpid() != parent}\n")
        return real_build(*a, **k)

    def remap(*a, **k):  # type: ignore[no-untyped-def]
        same = real_remap(*a, **k)
        with open(log, "a") as f:
            f.write(f"same ids {same}\n")
        return same

    monkeypatch.setattr(pmu_db, "insert_direct", build)
    monkeypatch.setattr(pmu_db, "remap_direct", remap)
    if miss:
        real_copy = StringIds.copy

        def off(self: StringIds) -> StringIds:
            other = real_copy(self)
            other.one("a string of no session")
            return other

        monkeypatch.setattr(StringIds, "copy", off)
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "1")
    prof = _copy(two_devices, tmp_path / "p")
    export(prof, ExportOptions())
    # device 0's process (the last one inserts its own); ids mapped in place when missed
    assert log.read_text().splitlines() == ["build True", f"same ids {not miss}"]
    monkeypatch.setenv("MSPROF_PY_DB_THREAD", "0")
    after = _copy(two_devices, tmp_path / "s")
    export(after, ExportOptions())
    assert _outputs(prof) == _outputs(after) and _leftovers(prof) == []


@pytest.mark.parametrize(("devices", "early"), [(2, 0), (2, 3), (3, 3)])
def test_rows_not_made_early_are_handed_over(two_devices: Path, tmp_path: Path, devices: int,  # noqa: F811
                                             early: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the export reaches the next device before a device's process (each but the last's)
    has made all its rows early (``early`` chunks of tasks made, then told to stop), that process
    hands the tasks left over in a file (``pmu_db._hand_over``) and the last process inserts them
    at TASK_PMU_INFO's turn: the same DB as the one written after the text files, no file left
    behind."""
    from msprof_py.collect import collect
    from msprof_py.export import pmu_db

    src = two_devices if devices == 2 else collect("resnet50", output=tmp_path / "c", devices=devices,
                                                   iterations=1, seed=5, fixed_clock=True).prof_dir

    log = tmp_path / "log"
    real_hand = pmu_db._hand_over

    def hand(path, cols, pos, gids):  # type: ignore[no-untyped-def]
        with open(log, "a") as f:
            f.write(f"{len(pos)}\n")
        return real_hand(path, cols, pos, gids)

    def waiting(go_r: int):  # type: ignore[no-untyped-def]
        asked = iter(range(early + 1))
        return lambda: next(asked, early) < early  # (COMPUTE_TASK_INFO asks first when early is 0)

    monkeypatch.setattr(pmu_db, "_hand_over", hand)
    monkeypatch.setattr(pmu_db, "DB_CHUNK_ROWS", 7)
    monkeypatch.setattr(db_process, "_waiting", waiting)
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "1")
    prof = _copy(src, tmp_path / "p")
    export(prof, ExportOptions())
    left = [int(n) for n in log.read_text().split()]
    assert len(left) == devices - 1 and min(left) > 0  # each process but the last handed tasks over
    monkeypatch.setenv("MSPROF_PY_DB_THREAD", "0")
    after = _copy(src, tmp_path / "s")
    export(after, ExportOptions())
    assert _outputs(prof) == _outputs(after) and _leftovers(prof) == []


@pytest.mark.parametrize("page_size", [4096, 1024])
def test_db_bytes_do_not_depend_on_when_a_process_is_told(two_devices: Path, tmp_path: Path,  # noqa: F811
                                                          monkeypatch: pytest.MonkeyPatch, page_size: int) -> None:
    """Device 0's process inserts its rows into the DB file until the export reaches the next
    device (a moment that differs run to run); the next process inserts the rest first, with the
    same statements: the DB file has the same bytes wherever the cut fell (none, before its
    COMPUTE_TASK_INFO rows, after a few chunks of TASK_PMU_INFO tasks), TASK, COMPUTE_TASK_INFO and
    TASK_PMU_INFO written as table pages (export.db_pages: ``page_size`` 1 KiB gives them interior
    pages over leaves made by both processes), the file valid (``PRAGMA integrity_check``), its
    dump the one written after the text files."""
    import hashlib
    import sqlite3

    from msprof_py.export import db_pages, pmu_db, unified_db

    real_connect, real_finish = unified_db.connect, db_pages.TablePages.finish
    log = tmp_path / "finished"

    def connect(path):  # type: ignore[no-untyped-def]
        con = real_connect(path)
        con.execute(f"PRAGMA page_size={page_size}")  # (the file's when it has no table yet)
        return con

    def finish(self, con):  # type: ignore[no-untyped-def]
        with open(log, "a") as f:  # (in a DB process)
            f.write(f"{self.table} {self.state} {self.rows}\n")
        return real_finish(self, con)

    monkeypatch.setattr(db_process, "connect", connect)
    monkeypatch.setattr(db_pages.TablePages, "finish", finish)
    monkeypatch.setattr(pmu_db, "DB_CHUNK_ROWS", 7)
    monkeypatch.setattr(pmu_db, "PAGE_TASKS", 3)
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "1")
    md5 = set()
    for k, early in enumerate([None, 0, 1, 4]):
        if early is not None:
            def waiting(go_r: int, early: int = early):  # type: ignore[no-untyped-def]
                asked = iter(range(early + 1))
                return lambda: next(asked, early) < early

            monkeypatch.setattr(db_process, "_waiting", waiting)
        prof = _copy(two_devices, tmp_path / str(k))
        export(prof, ExportOptions())
        (db,) = prof.glob("*.db")
        md5.add(hashlib.md5(db.read_bytes()).hexdigest())
        assert _leftovers(prof) == []
        con = sqlite3.connect(db)
        assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert con.execute("PRAGMA page_size").fetchone() == (page_size,)
        con.close()
        # every TASK, COMPUTE_TASK_INFO and TASK_PMU_INFO row written as pages, each table completed once
        con = sqlite3.connect(db)
        rows = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("TASK", "COMPUTE_TASK_INFO", "TASK_PMU_INFO")}
        con.close()
        assert sorted(log.read_text().splitlines()) == sorted(f"{t} on {n}" for t, n in rows.items())
        assert min(rows.values()) > 100
        log.unlink()
    assert len(md5) == 1
    monkeypatch.setenv("MSPROF_PY_DB_THREAD", "0")
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "0")
    after = _copy(two_devices, tmp_path / "s")
    export(after, ExportOptions())
    (a,), (b,) = prof.glob("*.db"), after.glob("*.db")
    assert db_text(a).split(b"\n")[1:] == db_text(b).split(b"\n")[1:]  # (the page size aside)


@pytest.mark.parametrize("without", ["first", "every"])
def test_pmu_rows_of_a_device_without_compute_task_info(two_devices: Path, tmp_path: Path,  # noqa: F811
                                                        without: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Device 0's process creates TASK_PMU_INFO when it inserts its rows, and COMPUTE_TASK_INFO
    before it even when device 0 has no row for it (msprof's order of the tables); dropped at the
    end when no device had one (a table has rows): the DB is the one written after the text
    files (``without``: device 0 has no COMPUTE_TASK_INFO row, or no device has)."""
    import sqlite3

    from msprof_py.export import unified_db_fill, unified_db_tasks

    real = unified_db_tasks.info_columns

    def cols(session, t, offset):  # type: ignore[no-untyped-def]
        return None if offset == 0 or without == "every" else real(session, t, offset)

    monkeypatch.setattr(unified_db_fill, "info_columns", cols)
    monkeypatch.setattr(unified_db_tasks, "info_columns", cols)
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "1")
    prof = _copy(two_devices, tmp_path / "p")
    export(prof, ExportOptions())
    monkeypatch.setenv("MSPROF_PY_DB_THREAD", "0")
    after = _copy(two_devices, tmp_path / "s")
    export(after, ExportOptions())
    log = "mindstudio_profiler_log/msprof_py_export.log"  # (it gives the DB file's size: not the same)
    assert {k: v for k, v in _outputs(prof).items() if k != log} == \
        {k: v for k, v in _outputs(after).items() if k != log} and _leftovers(prof) == []
    (db,) = prof.glob("*.db")
    con = sqlite3.connect(db)
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master")]
    con.close()
    assert ("COMPUTE_TASK_INFO" in tables) == (without == "first") and "TASK_PMU_INFO" in tables


def test_a_one_device_dirs_cache_is_written_after_the_fork(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A one-device dir's parse cache (its part and the index, pickled on a thread) is held until
    its DB process is forked and then written beside the text files: the export does not wait for
    it before its first file, no thread runs at the fork, the new process does not keep (or write)
    the held store, and the cache is complete afterwards (the next export reads it: same files)."""
    from msprof_py.collect import collect
    from msprof_py.parse import cache, source

    src = collect("resnet50", output=tmp_path / "c", devices=1, iterations=1, seed=5, fixed_clock=True).prof_dir
    prof = _copy(src, tmp_path / "p")
    seen: list[tuple[list[str], list[str]]] = []
    held = tmp_path / "held"
    real_fork = os.fork
    others = set(threading.enumerate())

    def fork() -> int:
        alive = sorted(t.name for t in set(threading.enumerate()) - others)
        pid = real_fork()
        if pid == 0:  # the DB process: the export's held store forgotten
            held.write_text(repr([w._held is not None for w in source._WRITERS]))
        else:
            seen.append((alive, sorted(p.name for p in cache.cache_dir(prof).glob("*.pkl"))))
        return pid

    monkeypatch.setattr(db_process.os, "fork", fork)
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "1")
    export(prof, ExportOptions())
    assert seen == [([], [])]  # nothing stored yet, no thread at the fork
    assert held.read_text() == "[False]"
    assert sorted(p.name for p in cache.cache_dir(prof).glob("*.pkl")) == ["device_0.pkl", "session.pkl"]
    assert _leftovers(prof) == []
    again = source.ProfSource(prof)
    assert again.cached and again.devices == [0]
    monkeypatch.setattr(db_process.os, "fork", real_fork)
    export(prof, ExportOptions())  # from the cache
    fresh = _copy(src, tmp_path / "f")
    monkeypatch.setenv("MSPROF_PY_DB_THREAD", "0")
    export(fresh, ExportOptions())
    assert _outputs(prof) == _outputs(fresh)

"""The unified DB written beside the text writers, by forked processes (export.db_process, the
default) or on a thread (export.db_thread): the same bytes as the DB written after them, its
errors are the same one-line errors, a killed DB process is one clear error, an interrupted
export stops it and leaves no temporary file or process; string ids made a chunk at a time equal
the whole column's."""
from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from msprof_py import atomic
from msprof_py.cli import cli
from msprof_py.export import ExportOptions, db_process, db_thread, export, unified_db_fill
from msprof_py.export.unified_db_insert import Const, Lookup
from msprof_py.export.unified_db_strings import StringIds, factor

from .test_streamed_export import _outputs


@pytest.fixture(scope="module")
def two_devices(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from msprof_py.collect import collect

    res = collect("resnet50", output=tmp_path_factory.mktemp("c2"), devices=2, iterations=1, seed=5,
                  fixed_clock=True)
    return res.prof_dir


def _copy(src: Path, where: Path) -> Path:
    return Path(shutil.copytree(src, where / src.name))


def _leftovers(root: Path) -> list[str]:
    return [p.name for p in root.rglob("*") if atomic.TMP_RE.match(p.name) or atomic.SCRATCH_RE.match(p.name)]


def _db_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name in ("msprof-py-db", "msprof-py-db-side")]


def _children() -> set[int]:
    """Our child processes still running or not yet reaped (the DB processes must all be gone;
    compare with the set before: other tests of the session may leave helpers of their own)."""
    me = str(os.getpid())
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            out.add(int(stat.parent.name))
    return out


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_db_beside_equals_the_db_after_the_text(two_devices: Path, tmp_path: Path, mode: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    before = _children()
    started: list[tuple[str, int]] = []
    real_thread, real_put = db_thread.DbThread.__init__, db_process.DbProcesses.put

    def spy(self, write, count):  # type: ignore[no-untyped-def]
        started.append(("thread", count))
        real_thread(self, write, count)

    def put(self, session):  # type: ignore[no-untyped-def]
        real_put(self, session)
        started.append(("process", self.procs[-1].pid))

    monkeypatch.setattr(db_thread.DbThread, "__init__", spy)
    monkeypatch.setattr(db_process.DbProcesses, "put", put)
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "1" if mode == "process" else "0")
    prof = _copy(two_devices, tmp_path / "t")
    export(prof, ExportOptions())
    if mode == "thread":
        assert started == [("thread", 2)]  # the thread ran, fed both devices
    else:  # one forked process per device
        assert [k for k, _ in started] == ["process"] * 2 and len({p for _, p in started} - {os.getpid()}) == 2
    monkeypatch.setenv("MSPROF_PY_DB_THREAD", "0")
    after = _copy(two_devices, tmp_path / "s")
    n = len(started)
    export(after, ExportOptions())
    assert len(started) == n
    assert _outputs(prof) == _outputs(after) and any(k.endswith(".db") for k in _outputs(prof))
    assert not _db_threads() and not _children() - before


@pytest.mark.parametrize("rounds", [None, 1])
def test_rows_built_while_the_db_waits(two_devices: Path, tmp_path: Path, rounds: int | None,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """While the DB thread waits for device 1 it builds device 0's COMPUTE_TASK_INFO and
    TASK_PMU_INFO rows (here: as if it always waited; ``rounds``: only one round of PMU rows,
    the rest at the table's turn) with the string ids their tables' turn gives (copied as they
    are); when those are not the ids predicted (a later device interned new strings first), the
    DB is still the same, and the same as the DB written after the text files (nothing built)."""
    from msprof_py.export import pmu_db_staged

    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "0")
    monkeypatch.setattr(pmu_db_staged, "BUILD_CHUNK", 16)
    calls = iter(range(10**9 if rounds is None else 2 + rounds))  # between's check, build's, one after each round
    monkeypatch.setattr(db_thread.DbFeed, "idle", lambda self: next(calls, None) is not None)
    seen: list[tuple[str, Any]] = []
    real_unfold, real_info = pmu_db_staged.unfold_pmu, unified_db_fill.copy_info
    monkeypatch.setattr(pmu_db_staged, "unfold_pmu", lambda con, st, *a: seen.append(
        ("pmu", (st.done == st.n, st.done > 0, real_unfold(con, st, *a)))))
    monkeypatch.setattr(unified_db_fill, "copy_info", lambda *a: seen.append(("info", real_info(*a))))
    hit = _copy(two_devices, tmp_path / "hit")
    export(hit, ExportOptions())
    assert seen == [("info", True), ("pmu", (rounds is None, True, True))]
    real_copy = StringIds.copy

    def off(self: StringIds) -> StringIds:  # every id predicted one too high
        other = real_copy(self)
        other.one("a string of no session")
        return other

    monkeypatch.setattr(StringIds, "copy", off)
    calls = iter(range(10**9 if rounds is None else 2 + rounds))
    miss = _copy(two_devices, tmp_path / "miss")
    export(miss, ExportOptions())
    assert seen[2:] == [("info", False), ("pmu", (rounds is None, True, False))]
    monkeypatch.setenv("MSPROF_PY_DB_THREAD", "0")
    after = _copy(two_devices, tmp_path / "after")
    export(after, ExportOptions())
    assert seen[4:] == [("pmu", (False, False, True))]  # nothing built
    assert _outputs(hit) == _outputs(miss) == _outputs(after)


@pytest.mark.parametrize("mode", ["process", "thread", "after"])
def test_db_error_beside_is_the_same_one_line_error(two_devices: Path, tmp_path: Path, mode: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    before = _children()
    def full(*a, **k):  # type: ignore[no-untyped-def]
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(unified_db_fill.Fill, "add", full)  # (a forked DB process has it too)
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "1" if mode == "process" else "0")
    monkeypatch.setenv("MSPROF_PY_DB_THREAD", "0" if mode == "after" else "1")
    prof = _copy(two_devices, tmp_path)
    res = CliRunner().invoke(cli, ["export", "--output", str(prof)])
    errors = [ln for ln in res.output.splitlines() if ln.startswith("msprof-py: error:")]
    assert res.exit_code != 0 and len(errors) == 1, res.output
    assert "no space left on device" in errors[0] and ".db" in errors[0]
    assert _leftovers(prof) == [] and not list(prof.glob("*.db"))
    assert (prof / "mindstudio_profiler_output" / "op_summary_1.csv").exists()  # the text files came first
    assert not _db_threads() and not _children() - before


@pytest.mark.parametrize("device", [0, 1])
def test_a_killed_db_process_is_one_clear_error(two_devices: Path, tmp_path: Path, device: int,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    before = _children()
    parent, real = os.getpid(), unified_db_fill.Fill.add

    def killed(self, con, s):  # type: ignore[no-untyped-def]
        if os.getpid() != parent and self.i == device:
            os.kill(os.getpid(), signal.SIGKILL)
        real(self, con, s)

    monkeypatch.setattr(unified_db_fill.Fill, "add", killed)
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "1")
    prof = _copy(two_devices, tmp_path)
    res = CliRunner().invoke(cli, ["export", "--output", str(prof)])
    errors = [ln for ln in res.output.splitlines() if ln.startswith("msprof-py: error:")]
    assert res.exit_code != 0 and len(errors) == 1, res.output
    assert f"device {device} of 2" in errors[0] and "died" in errors[0] and ".db" in errors[0]
    assert _leftovers(prof) == [] and not list(prof.glob("*.db"))
    assert not _children() - before


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_interrupted_export_stops_the_db(two_devices: Path, tmp_path: Path, mode: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    before = _children()
    from msprof_py.export import rows

    real = rows.RowBuilder.chunks
    calls = []

    def dying(self, chunk_rows=rows.CHUNK_ROWS, **kw):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) > 12:  # well into the export: the DB has device 0 (or more)
            raise KeyboardInterrupt
        yield from real(self, chunk_rows, **kw)

    monkeypatch.setattr(rows.RowBuilder, "chunks", dying)
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "1" if mode == "process" else "0")
    prof = _copy(two_devices, tmp_path)
    r = CliRunner().invoke(cli, ["export", "--output", str(prof)])
    assert r.exit_code == 130, r.output
    assert _leftovers(prof) == [] and not list(prof.glob("*.db"))
    assert not _db_threads() and not _children() - before


def _side_thread() -> bool:
    return threading.current_thread().name == "msprof-py-db-side"


@pytest.mark.parametrize("failure", ["full", "interrupted"])
def test_the_last_devices_pmu_rows_on_their_thread(two_devices: Path, tmp_path: Path, failure: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The last device's TASK_PMU_INFO rows are made on a thread of their own (unified_db_side):
    the same DB as without it (test_db_beside_equals_the_db_after_the_text); a full disk there is
    the DB's one-line error; Ctrl-C while it runs stops it; no scratch file is left."""
    from msprof_py.export import pmu_db_staged, unified_db_side

    started: list[int] = []
    real_start = unified_db_side.Side.start
    monkeypatch.setattr(unified_db_side.Side, "start", lambda self, rows, ids: (started.append(len(ids)),
                                                                               real_start(self, rows, ids)))
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "0")
    ok = _copy(two_devices, tmp_path / "ok")
    export(ok, ExportOptions())
    assert len(started) == 1 and started[0] > 0 and _leftovers(ok) == []

    real_build = pmu_db_staged.build_now
    running = threading.Event()

    def build(con, rows, ids, key, schema="temp"):  # type: ignore[no-untyped-def]
        if not _side_thread():
            return real_build(con, rows, ids, key, schema)
        if failure == "full":
            raise sqlite3.OperationalError("database or disk is full")
        running.set()  # a statement that runs until interrupted
        con.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c")

    monkeypatch.setattr(pmu_db_staged, "build_now", build)
    if failure == "interrupted":  # Ctrl-C when the main thread waits for the DB, the side thread running

        def result(self):  # type: ignore[no-untyped-def]
            assert running.wait(30)
            raise KeyboardInterrupt

        monkeypatch.setattr(db_thread.DbThread, "result", result)
    prof = _copy(two_devices, tmp_path / "bad")
    t0 = time.monotonic()
    res = CliRunner().invoke(cli, ["export", "--output", str(prof)])
    if failure == "full":
        errors = [ln for ln in res.output.splitlines() if ln.startswith("msprof-py: error:")]
        assert res.exit_code != 0 and len(errors) == 1, res.output
        assert "no space left on device" in errors[0] and ".db" in errors[0]
    else:
        assert res.exit_code == 130, res.output
        assert time.monotonic() - t0 < 30
    assert _leftovers(prof) == [] and not list(prof.glob("*.db"))
    assert not _db_threads()


def test_stop_interrupts_a_running_statement_and_a_waiting_feed(tmp_path: Path) -> None:
    def long_statement(feed: db_thread.DbFeed) -> None:
        con = sqlite3.connect(tmp_path / "x.db")
        feed.attach(con)
        try:
            con.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c")
        finally:
            feed.detach()
            con.close()

    t0 = time.monotonic()
    th = db_thread.DbThread(long_statement, 1)
    time.sleep(0.2)
    th.stop()
    assert time.monotonic() - t0 < 10 and isinstance(th.error, sqlite3.OperationalError)

    waiting = db_thread.DbThread(lambda feed: list(feed.sessions()), 2)
    waiting.stop()
    assert isinstance(waiting.error, db_thread.Cancelled)


@pytest.mark.parametrize("n", [1, 127, 128, 129, 300])
def test_factored_ids_made_a_chunk_at_a_time_equal_the_column(n: int) -> None:
    rng = np.random.default_rng(n)
    texts = [f"s{i:04d}" for i in range(n)]
    values = pd.Series(rng.choice(texts + [None], size=1000), dtype=object)  # missing -> N/A
    for col in (values, pd.Categorical(values), pd.Categorical(values.dropna(), categories=texts[::-1])):
        a, b = StringIds(), StringIds()
        for s in ("x", "s0003"):
            a.one(s)
            b.one(s)
        whole = a.column(col)
        look = b.lookup(*factor(col))
        chunks = np.concatenate([look[lo:lo + 77] for lo in range(0, len(look), 77)])
        assert np.array_equal(whole, chunks) and a.ids == b.ids


def test_const_column_slices() -> None:
    c = Const(7, 10)
    assert len(c) == 10 and c[8:20].tolist() == [7, 7] and c[0:3].dtype == np.int64
    lk = Lookup(np.array([5, 6, 9]), np.array([0, -1, 1], np.int8))
    assert lk[0:3].tolist() == [5, 9, 6]

"""The last device's TASK_PMU_INFO rows, made on a thread of their own beside the DB's thread.

Why: with PMU data on several devices the DB is the export's critical path after the last device
is read: COMPUTE_TASK_INFO, the earlier devices' TASK_PMU_INFO rows and the last device's (most
of it) go in one after the other on one core, and the core the text writers used is idle once
they are done (benchmarks/RESULTS.md, issue 12 phase 7).  The last device's rows are the only
big piece that needs nothing before it but the string ids (known once the last device is read):
:class:`Side` inserts them in their final form (``pmu_db_staged.build_now``) on a second SQLite
connection to a scratch file, SQLite's work running without the GIL beside the DB thread's
COMPUTE_TASK_INFO and earlier devices' rows; at the table's turn the DB copies them in with the
transfer optimisation (:func:`msprof_py.export.pmu_db_staged.copy_built`: the same records, the same
file).  The copy costs ~1/2 of the insert on top, so one device (nothing to overlap) does not use
this.

The scratch file is attached to the DB's connection before its first insert (SQLite refuses
ATTACH inside a transaction); the DB's connection reads it only once the thread has committed
and closed it.  Errors of the thread are raised by the DB thread when it waits for the rows
(:meth:`Side.rows`), as the same errors the DB's own statements give; :meth:`Side.stop`
interrupts and waits for the thread (an error of the DB, Ctrl-C), :meth:`Side.remove` removes the
scratch dir (``atomic.scratch_dir``: a leftover of a killed process is cleaned by a later run).
"""
from __future__ import annotations

import shutil
import sqlite3
import threading
from pathlib import Path
from typing import Any

from msprof_py.atomic import scratch_dir
from msprof_py.export import pmu_db, pmu_db_staged


class Side:
    """The thread that makes the last device's TASK_PMU_INFO rows in a scratch file in ``parent``.
    ``stopped()``: whether the DB is being stopped (then :meth:`rows` gives up waiting)."""

    def __init__(self, parent: Path, stopped: Any) -> None:
        self.dir = scratch_dir(parent)
        self.path = self.dir / "side.db"
        self.stopped = stopped
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.con: sqlite3.Connection | None = None
        self.cancelled = False
        self.error: BaseException | None = None
        self.table: str | None = None  # the built rows, as the DB's connection names them

    def attach(self, con: sqlite3.Connection) -> None:
        """Attach the scratch file to the DB's connection (before its first insert)."""
        con.execute("ATTACH DATABASE ? AS side", (str(self.path),))

    def start(self, rows: pmu_db.PmuRows, ids: list[int]) -> None:
        """Make ``rows`` (:func:`pmu_db.pmu_rows`) with the metric name ids ``ids`` on the thread."""
        self.thread = threading.Thread(target=self._run, args=(rows, ids), name="msprof-py-db-side", daemon=True)
        self.thread.start()

    def _run(self, rows: pmu_db.PmuRows, ids: list[int]) -> None:
        con = None
        try:
            con = sqlite3.connect(self.path)
            con.execute("PRAGMA journal_mode=OFF")
            con.execute("PRAGMA synchronous=OFF")
            with self.lock:
                if self.cancelled:
                    return
                self.con = con
            staged = pmu_db_staged.build_now(con, rows, ids, 0, "main")
            con.commit()
            assert staged.built is not None
            self.table = "side." + staged.built.split(".", 1)[1]
        except BaseException as err:  # noqa: BLE001  (raised by the DB thread: rows)
            self.error = err
        finally:
            with self.lock:
                self.con = None
            if con is not None:
                con.close()

    def rows(self) -> str:
        """Wait for the thread; the table of the built rows (schema ``side``), or its error."""
        from msprof_py.export.db_thread import Cancelled

        assert self.thread is not None
        while self.thread.is_alive():
            self.thread.join(0.05)
            if self.stopped():
                raise Cancelled
        if self.error is not None:
            raise self.error
        assert self.table is not None
        return self.table

    def stop(self) -> None:
        """Interrupt the thread (if still running) and wait for it."""
        with self.lock:
            self.cancelled = True
        while self.thread is not None and self.thread.is_alive():
            with self.lock:
                if self.con is not None:
                    self.con.interrupt()
            self.thread.join(0.02)

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


__all__ = ["Side"]

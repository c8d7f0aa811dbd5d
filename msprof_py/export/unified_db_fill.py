"""The unified DB's insert flow as a resumable object (:class:`Fill`), fed one device session at a time.

Which table when, in msprof's order, device after device; what a device before the last gives the
later tables (:class:`Held`) and the rows put in early (:class:`DirectInfo`).  The state pickles
between devices, so the next device's DB process (:mod:`msprof_py.export.db_process`) goes on from
it.  The writing of the file around it (its connection, its temporary name, a full disk) is
:mod:`msprof_py.export.unified_db`'s.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.export import pmu_db, pmu_db_staged
from msprof_py.export.db_pages import TablePages
from msprof_py.export.unified_db_enums import ENUM_TABLES, META_DATA
from msprof_py.export.unified_db_host import api_rows, communication_rows, session_tables
from msprof_py.export.unified_db_insert import create_table, insert_cols, insert_rows
from msprof_py.export.unified_db_side import Side
from msprof_py.export.unified_db_strings import StringIds
from msprof_py.export.unified_db_tasks import (build_info, copy_info, db_tasks, info_columns, info_ids, info_rows,
                                                insert_info, memcpy_ids, memcpy_rows, remap_info, signature,
                                                task_rows)
from msprof_py.memory import TRIM_AT_ONCE_BYTES, trim
from msprof_py.parse.build import join_parts
from msprof_py.parse.pmu import metrics as pmu_metrics
from msprof_py.parse.session import Session

# msprof's NpuOpMemProcessor interns these two in its constructor, which every export runs, so
# they are the first STRING_IDS rows of every msprof db (npu_op_mem_processor.cpp)
ALWAYS_INTERNED = ("release", "allocate")


@dataclass
class Held:
    """What a device before the last gives the tables after TASK, kept until their turn."""

    cols: list[Any] | None  # COMPUTE_TASK_INFO's columns (info_columns; None: no row)
    info: Any  # those rows in their final form (build_info: table, ids) once built; DirectInfo: in the DB
    pmu: pmu_db_staged.Staged | pmu_db.Direct | None  # its TASK_PMU_INFO rows (pmu_db_staged.stage_pmu; some built by
    # pmu_db_staged.build_pmu; pmu_db.Direct: in the DB, early)
    freq: pd.DataFrame  # its AICORE_FREQ rows


@dataclass
class DirectInfo:
    """A device's COMPUTE_TASK_INFO rows inserted into the DB before the table's turn (``Fill.early``):
    rowids ``lo < rowid <= hi``, their strings' ids predicted (``signature``: ``_signature``)."""

    lo: int
    hi: int
    signature: list[Any]


class Fill:
    """The DB's insert flow, fed one device session at a time: :meth:`add` for each of the
    ``count`` devices in order (on the DB thread :meth:`between` after each but the last, once
    the device is let go of), then :meth:`end`.  Every table goes in msprof's order; TASK,
    COMPUTE_TASK_INFO, MEMCPY_INFO, TASK_PMU_INFO and AICORE_FREQ device after device (a table's
    rows stay together in the file, and string ids are given in the order of the whole
    session's).

    Each device is read once: its TASK rows go in at once; what a device before the last gives
    the later tables waits for their turn (:class:`Held`): its COMPUTE_TASK_INFO columns, its
    TASK_PMU_INFO rows (staged by :meth:`add` in tables of schema ``stage``, ``temp``: SQLite's
    temporary file; a DB written by one process per device attaches a file of its own,
    :mod:`msprof_py.export.db_process`), its AICORE_FREQ and communication rows.  While the DB
    thread would wait for the next device, :meth:`between` makes what it can of those rows in
    their final form there (with ``early``, a DB process per device: :meth:`add` makes them
    at once), copied in as they are at their table's turn; the last device's
    session itself serves the later tables.  Between two devices the state (everything but
    ``host`` and the last device) pickles: the next device's process goes on from it."""

    def __init__(self, host: Session, count: int, stage: str = "temp", whole: bool = False,
                 side: Side | None = None, early: bool = False) -> None:
        self.host, self.count, self.stage, self.whole = host, count, stage, whole  # whole: host is the session
        # early: a device before the last has its COMPUTE_TASK_INFO and TASK_PMU_INFO rows made in their
        # final form by add (a DB process per device: that process has its session, the DB is not waited for)
        self.early = early
        # early: TASK, COMPUTE_TASK_INFO and TASK_PMU_INFO written as table pages (db_pages), not by
        # SQLite's inserts, where they can be (each completed before anything reads or updates it)
        self.pages = TablePages("TASK_PMU_INFO", trim_after=TRIM_AT_ONCE_BYTES) if early else None
        self.task_pages = TablePages("TASK", trim_after=TRIM_AT_ONCE_BYTES) if early else None
        self.info_pages = TablePages("COMPUTE_TASK_INFO", trim_after=TRIM_AT_ONCE_BYTES) if early else None
        # with early: whether to go on making a device's rows early (the export has not yet reached the
        # next device), and the dir of the files the rows not made are handed over in (pmu_db_staged.build_now)
        self.more: Callable[[], bool] | None = None
        self.rest_dir: Path | None = None
        self.side = side
        self.side_ids: tuple[list[str], list[int]] | None = None  # the metrics side makes, their ids
        self.last_cols: list[Any] | None = None  # the last device's COMPUTE_TASK_INFO columns (with side)
        self.sid = StringIds()
        for s in ALWAYS_INTERNED:
            self.sid.one(s)
        self.created: set[str] = set()
        self.precreated: set[str] = set()  # tables created before their turn that may stay empty (early)
        self.comm: list[pd.DataFrame] = []
        self.memcpy_gids = np.full(len(host.memcpy), np.nan)
        self.held: list[Held] = []  # per device before the last
        self.last: tuple[Session, pd.DataFrame, int] | None = None
        self.offset = 0
        self.i = 0  # devices added

    def __getstate__(self) -> dict[str, Any]:
        assert self.last is None and self.side is None  # only between devices, in one process
        return {k: v for k, v in self.__dict__.items() if k not in ("host", "more")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, more=None)

    def add(self, con: sqlite3.Connection, s: Session) -> None:
        """Device ``self.i``'s session (all of the tables of a whole-session DB)."""
        session, i = self.host, self.i
        if self.early and self.held:
            self._finish(con)  # the previous device's rows its process did not make, before this device's
        t = db_tasks(s)
        if len(t):
            task_rows(con, session, t, self.sid, self.offset, self.created, self.task_pages)
        if len(self.memcpy_gids):
            memcpy_ids(session.memcpy, t, self.offset, self.memcpy_gids)
        self.comm.append(s.communication)
        if i < self.count - 1:
            rows = pmu_db.pmu_rows(s, t if len(t) else None,
                                       np.arange(self.offset, self.offset + len(t), dtype=np.int64))
            held = Held(info_columns(session, t, self.offset) if len(t) else None, None, None, s.aicore_freq)
            self.held.append(held)
            if self.early:
                self._direct(con, rows)
            elif rows is not None:
                held.pmu = pmu_db_staged.stage_pmu(con, rows, i, self.stage)
            del rows, held  # views of the device's pmu table: they would keep all of it
        else:
            self.last = (s, t, self.offset)
            if self.side is not None and len(t):
                self._start_side(session, s, t)
        self.offset += len(t)
        self.i += 1
        del s, t  # before the next device is read
        if i < self.count - 1:
            trim()  # this device's temporaries, before the text writers read the next device

    def between(self, con: sqlite3.Connection, idle: Callable[[], bool]) -> None:
        """Work on the device :meth:`add` was last given (not the last device) that needs no more
        of its session, done while ``idle()`` (the DB would otherwise wait for the next device):
        its COMPUTE_TASK_INFO rows, then its TASK_PMU_INFO rows a chunk at a time, made in their
        final form, copied in as they are at their table's turn.  Their strings' ids are those
        the tables' turn will give if the devices after this one add no string to STRING_IDS (a
        copy of the string ids given the strings interned before them); :func:`copy_info` and
        :func:`pmu_db_staged.unfold_pmu` see whether that held."""
        held = self.held[-1]
        if not idle():
            return
        self._build_info(con)
        if held.pmu is not None and held.pmu.done < held.pmu.n:
            ids = self._predict([h.cols for h in self.held], [h.pmu for h in self.held[:-1]], held.pmu.names)
            pmu_db_staged.build_pmu(con, held.pmu, ids, idle)

    def _direct(self, con: sqlite3.Connection, rows: pmu_db.PmuRows | None) -> None:
        """``early``: the COMPUTE_TASK_INFO and TASK_PMU_INFO rows of the device :meth:`add` was
        last given (not the last device) inserted into the DB now, their strings' ids those the
        tables' turn is predicted to give (:meth:`between`), while ``self.more()`` says so (its
        process has the device, the export has not reached the next one); the TASK_PMU_INFO tasks
        not made then are handed over in a file (``pmu_db.insert_direct``).  The next device's
        process makes what is left (:meth:`_finish`) before that device's rows: the DB file is
        given the same statements in the same order whenever the export reached the next device,
        so it has the same bytes (they differ from the DB written in one go: these tables' pages
        come before the next device's TASK pages; the same rows and rowids)."""
        held, i = self.held[-1], len(self.held) - 1
        more = self.more or (lambda: True)
        if held.cols is not None and more():
            self._direct_info(con)
        if rows is None:
            return
        names = rows[0]
        if held.cols is not None and held.info is None:  # (told before the rows were made: all handed over)
            held.pmu = pmu_db.Direct(names, None, len(rows[2]), 0, 0, None)
        else:
            self._create_pmu(con)
            held.pmu = pmu_db.Direct(names, self._predict([h.cols for h in self.held],
                                                          [h.pmu for h in self.held[:-1]], names),
                                     len(rows[2]), 0, 0, None)
            held.pmu.lo = held.pmu.hi = self._pmu_rows(con)
            more = self.more or (lambda: True)
            done = pmu_db.insert_direct(con, rows, held.pmu.ids, more if self.rest_dir is not None else None,
                                        self.pages)
            held.pmu.hi += done * len(names)
            rows = (names, rows[1], rows[2][done:], rows[3][done:])
        if len(rows[2]):
            assert self.rest_dir is not None
            held.pmu.rest = str(self.rest_dir / f"pmu_rest_{i}")
            pmu_db.hand_over(Path(held.pmu.rest), rows)

    def _finish(self, con: sqlite3.Connection) -> None:
        """``early``: the rows of the previous device (``self.held[-1]``) its process did not make
        (:meth:`_direct`), made now, in the order and with the ids that process would have."""
        held = self.held[-1]
        if held.cols is not None and held.info is None:
            self._direct_info(con)
        p = held.pmu
        if isinstance(p, pmu_db.Direct) and p.rest is not None:
            if p.ids is None:
                self._create_pmu(con)
                p.ids = self._predict([h.cols for h in self.held], [h.pmu for h in self.held[:-1]], p.names)
                p.lo = p.hi = self._pmu_rows(con)
            p.hi += pmu_db.insert_rest(con, p.rest, p.ids, self.pages) * len(p.names)
            Path(p.rest).unlink(missing_ok=True)
            p.rest = None

    def _direct_info(self, con: sqlite3.Connection) -> None:
        """The COMPUTE_TASK_INFO rows of ``self.held[-1]`` appended to the table with the ids
        predicted for its turn (:meth:`_build_info`'s)."""
        held = self.held[-1]
        assert held.cols is not None
        sid = self.sid.copy()
        for h in self.held[:-1]:
            if h.cols is not None:
                info_ids(h.cols, sid)
        ids = info_ids(held.cols, sid)
        lo = self._info_rows(con) if "COMPUTE_TASK_INFO" in self.created else 0
        insert_cols(con, "COMPUTE_TASK_INFO", *ids, created=self.created, pages=self.info_pages)
        held.info = DirectInfo(lo, lo + len(held.cols[1]), signature(ids))

    def _create_pmu(self, con: sqlite3.Connection) -> None:
        """TASK_PMU_INFO created before its turn (``early``), and first the tables msprof's order
        puts before it: COMPUTE_TASK_INFO (when no row is in it yet; dropped at the end if none
        comes, :meth:`end`) and MEMCPY_INFO (when there are memcpy rows, inserted at its turn)."""
        if "TASK_PMU_INFO" in self.created:
            return
        if "COMPUTE_TASK_INFO" not in self.created:
            create_table(con, "COMPUTE_TASK_INFO", self.created)
            self.precreated.add("COMPUTE_TASK_INFO")
        if len(self.host.memcpy):
            create_table(con, "MEMCPY_INFO", self.created)
        create_table(con, "TASK_PMU_INFO", self.created)

    def _build_info(self, con: sqlite3.Connection) -> None:
        """The COMPUTE_TASK_INFO rows of the device :meth:`add` was last given (not the last
        device) in their final form (:func:`build_info`), their strings' ids those predicted for
        the table's turn (:meth:`between`)."""
        held, k = self.held[-1], len(self.held) - 1
        if held.cols is not None and held.info is None:
            sid = self.sid.copy()
            for h in self.held[:-1]:
                if h.cols is not None:
                    info_ids(h.cols, sid)
            held.info = build_info(con, held.cols, sid, f"{self.stage}.msprof_py_info_{k}")

    def _start_side(self, session: Session, s: Session, t: pd.DataFrame) -> None:
        """The last device's TASK_PMU_INFO rows made by ``self.side`` from now on, with their
        final name ids (every string before them is known once the last device is read: its
        COMPUTE_TASK_INFO columns are made now, not at the table's turn)."""
        assert self.side is not None
        self.last_cols = info_columns(session, t, self.offset)
        rows = pmu_db.pmu_rows(s, t, np.arange(self.offset, self.offset + len(t), dtype=np.int64))
        if rows is not None:
            ids = self._predict([h.cols for h in self.held] + [self.last_cols], [h.pmu for h in self.held], rows[0])
            self.side.start(rows, ids)
            self.side_ids = (rows[0], ids)

    def _predict(self, cols: list[Any], before: list[pmu_db_staged.Staged | None], names: list[str]) -> list[int]:
        """The ids :meth:`end` gives the metric ``names`` of a device if no device after it
        interns a new string: a copy of the string ids given the COMPUTE_TASK_INFO strings of
        ``cols`` (the devices' up to it, in order), then the metric names of the devices
        ``before`` it."""
        sid = self.sid.copy()
        for c in cols:
            if c is not None:
                info_ids(c, sid)
        for p in before:
            for n in p.names if p is not None else []:
                sid.one(pmu_metrics.db_name(n))
        return [sid.one(pmu_metrics.db_name(n)) for n in names]

    def end(self, con: sqlite3.Connection) -> None:
        """The tables after the devices' (every device added)."""
        session, held, sid, created = self.host, self.held, self.sid, self.created
        if self.task_pages is not None:
            self.task_pages.finish(con)  # every device's TASK rows are in
        for h in held:
            if isinstance(h.info, DirectInfo):
                assert h.cols is not None
                ids = info_ids(h.cols, sid)
                if signature(ids) != h.info.signature and self.info_pages is not None:
                    self.info_pages.finish(con)  # the table complete for SQLite's UPDATE (and its inserts after)
                remap_info(con, ids, h.info.signature, (h.info.lo, h.info.hi))
            elif h.cols is not None and h.info is not None:
                copy_info(con, h.cols, h.info, sid, created)
            else:
                insert_info(con, h.cols, sid, created)
            h.cols = h.info = None  # its columns freed as soon as they are in
        if self.last is not None and len(self.last[1]) and self.side is not None:
            insert_info(con, self.last_cols, sid, created)
            self.last_cols = None
        elif self.last is not None and len(self.last[1]):
            info_rows(con, session, self.last[1], sid, self.last[2], created, self.info_pages)
        if self.info_pages is not None:
            self.info_pages.finish(con)
        if "COMPUTE_TASK_INFO" in self.precreated and not _rows_in(con, "COMPUTE_TASK_INFO"):
            con.execute("DROP TABLE COMPUTE_TASK_INFO")  # created before its turn, no row came (a table has rows)
        memcpy_rows(con, session, self.memcpy_gids, self.offset, created)
        # device counters: TASK_PMU_INFO, AICORE_FREQ (msprof_py.export.pmu_db)
        for h in held:
            if isinstance(h.pmu, pmu_db.Direct):
                final = [sid.one(pmu_metrics.db_name(n)) for n in h.pmu.names]
                if final != h.pmu.ids and self.pages is not None:
                    self.pages.finish(con)  # the table complete for SQLite's UPDATE (and its inserts after)
                pmu_db.remap_direct(con, h.pmu, final)
            elif h.pmu is not None:
                pmu_db_staged.unfold_pmu(con, h.pmu, sid.one, created)
        if self.side_ids is not None:
            assert self.side is not None
            table = self.side.rows()
            names, ids = self.side_ids
            create_table(con, "TASK_PMU_INFO", created)
            pmu_db_staged.copy_built(con, table, ids, [sid.one(pmu_metrics.db_name(n)) for n in names])
        elif self.last is not None:
            s, t, first = self.last
            pmu_db.db_tables(con, s, t if len(t) else None, np.arange(first, first + len(t), dtype=np.int64),
                                 sid.one, freq=False, created=created, pages=self.pages)
        if self.pages is not None:
            self.pages.finish(con)  # its interior pages and root: the table complete
        for h in held:
            pmu_db.freq_rows(con, h.freq, created)
        if self.last is not None:
            pmu_db.freq_rows(con, self.last[0].aicore_freq, created)
        self.held, self.last = [], None
        api_rows(con, session, sid)
        communication_rows(con, session.communication if self.whole else join_parts("communication", self.comm), sid)
        for name, rows in ENUM_TABLES.items():
            insert_rows(con, name, rows)
        session_tables(con, session)
        insert_rows(con, "META_DATA", META_DATA)
        insert_rows(con, "STRING_IDS", [(i, s) for s, i in sid.ids.items()])


    def _info_rows(self, con: sqlite3.Connection) -> int:
        """COMPUTE_TASK_INFO's rows so far (:meth:`_pmu_rows`)."""
        if self.info_pages is not None and self.info_pages.state == "on":
            return self.info_pages.rows
        return _rows_in(con, "COMPUTE_TASK_INFO")

    def _pmu_rows(self, con: sqlite3.Connection) -> int:
        """TASK_PMU_INFO's rows so far (those written as pages: the table reads empty to SQL until
        they are finished)."""
        if self.pages is not None and self.pages.state == "on":
            return self.pages.rows
        return _rows_in(con, "TASK_PMU_INFO")


def _rows_in(con: sqlite3.Connection, table: str) -> int:
    """The largest rowid of ``table`` (0 when empty): its rows, inserted in order from rowid 1."""
    return int(con.execute(f"SELECT coalesce(max(rowid), 0) FROM {table}").fetchone()[0])

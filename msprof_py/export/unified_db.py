"""``msprof_{YYYYMMDDhhmmss}.db``: msprof's unified SQLite database (reference §6).

Written at the PROF directory's root like msprof (``PROF_*/msprof_*.db``), covering every
device of the session.  Conventions (msprof ``profile_data_file_references_db.md``): times are
local epoch ns; strings are interned in ``STRING_IDS(id, value)`` and other tables hold the ids;
``globalTid = pid << 32 | tid``; ``globalTaskId`` numbers the rows of TASK.

Tables and their exact column lists (as msprof's system test checks them): STRING_IDS, TASK,
CANN_API, COMPUTE_TASK_INFO, META_DATA, the ENUM_* tables, SESSION_TIME_INFO, NPU_INFO,
RANK_DEVICE_MAP, HOST_INFO, COMMUNICATION_OP, TASK_PMU_INFO, AICORE_FREQ.  As msprof
(``analysis/csrc/application/database/db_assembler.cpp``), a table is created only when it has
rows.

This module writes the file (a temporary name, the connection, a full disk); its insert flow (which table
when, device after device) is ``unified_db_fill``; the tables' rows come
from ``unified_db_tasks`` (TASK, COMPUTE_TASK_INFO, MEMCPY_INFO), ``pmu_db`` (TASK_PMU_INFO,
AICORE_FREQ), ``unified_db_host`` (CANN_API, COMMUNICATION_OP, the session tables) and
``unified_db_enums`` (fixed rows); ``unified_db_insert`` holds the column lists,
``unified_db_strings`` the STRING_IDS interning; ``unified_db_side`` makes the last device's
TASK_PMU_INFO rows on a thread of their own when the DB is written on a thread.
"""
from __future__ import annotations

import errno
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from msprof_py.atomic import temp_path
from msprof_py.export.base import ExportContext, Naming, register
from msprof_py.export.session_access import device_ids
from msprof_py.export.unified_db_fill import Fill
from msprof_py.export.unified_db_side import Side
from msprof_py.parse.session import Session

Parts = Callable[[], Iterable[Session]]
"""The device tables one device at a time: each call iterates sessions of the host tables and
one device's (in device order, categoricals over the whole session's categories)."""


def write_db(session: Session, path: Path, parts: Parts | None = None, count: int = 1, feed: Any = None) -> Path:
    """Write the unified DB to ``path`` atomically (temporary file in the same dir, then rename).

    With ``parts``, ``session`` gives the host tables and ``parts`` the device tables, read one
    device at a time (a table's rows are inserted device after device, so the file has the bytes
    of the whole session's DB while only one device's tables are in memory).  ``feed``: the
    :class:`msprof_py.export.db_thread.DbFeed` of a DB written on a thread (it interrupts the
    connection when the export stops)."""
    with temp_path(path) as tmp:
        con = connect(tmp)
        # the last device's TASK_PMU_INFO rows on a thread of their own (unified_db_side): on the DB thread,
        # when there are devices before it
        side = Side(path.parent, lambda: feed.cancelled) if feed is not None and parts is not None and count > 1 \
            else None
        try:
            if feed is not None:
                feed.attach(con)
            if side is not None:
                side.attach(con)
            _fill(con, session, parts, count, feed, side)
            con.commit()
        except sqlite3.OperationalError as err:
            if is_full(err):
                raise OSError(errno.ENOSPC, "No space left on device", str(tmp)) from None  # temp_path words it
            raise
        finally:
            if side is not None:
                side.stop()
            if feed is not None:
                feed.detach()
            con.close()
            if side is not None:
                side.remove()
    return path


def connect(path: Path) -> sqlite3.Connection:
    """A connection to the DB file being written (no journal, no syncs: it is renamed into
    place only once complete)."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    return con


def is_full(err: sqlite3.OperationalError) -> bool:
    """Whether SQLite stopped because the disk is full."""
    return getattr(err, "sqlite_errorcode", None) == getattr(sqlite3, "SQLITE_FULL", 13) or "is full" in str(err)


def _fill(con: sqlite3.Connection, session: Session, parts: Parts | None = None, count: int = 1,
          feed: Any = None, side: Side | None = None) -> None:
    """Every table, in msprof's order (:class:`Fill`), from ``session`` alone or the host tables
    of ``session`` and ``count`` device sessions of ``parts`` (``feed``: theirs, let go of as
    soon as :meth:`Fill.add` is done with a device, before :meth:`Fill.between`; ``side``: makes
    the last device's TASK_PMU_INFO rows)."""
    fill = Fill(session, count, whole=parts is None, side=side)
    for s in [session] if parts is None else parts():
        fill.add(con, s)
        del s
        if fill.i < count and feed is not None:
            feed.release()
            fill.between(con, feed.idle)  # what it can do while waiting for the next device
    fill.end(con)


class UnifiedDb:
    name = "msprof_db"
    kind = "db"
    per_device = False
    describe = "unified SQLite database (STRING_IDS, TASK, CANN_API, COMPUTE_TASK_INFO, META_DATA, ...)"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        """``out_dir`` is the PROF directory (msprof keeps the DB at its root)."""
        if not device_ids(session) and len(session.api) == 0:
            return []
        return [write_db(session, out_dir / f"msprof_{naming.timestamp or '0'}.db")]

    def write_parts(self, host: Session, parts: Parts, count: int, out_dir: Path, naming: Naming,
                    feed: Any = None) -> list[Path]:
        """The same file from the host tables and the device tables one device at a time."""
        path = self.path_for(host, out_dir, naming)
        return [] if path is None else [write_db(host, path, parts, count, feed)]

    def path_for(self, host: Session, out_dir: Path, naming: Naming) -> Path | None:
        """The DB file of a session of these host tables (None: no DB, nothing to put in it)."""
        if not device_ids(host) and len(host.api) == 0:
            return None
        return out_dir / f"msprof_{naming.timestamp or '0'}.db"


register(UnifiedDb())

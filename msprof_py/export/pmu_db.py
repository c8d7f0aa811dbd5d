"""Device counters in the unified DB: TASK_PMU_INFO (one row per task and metric, as msprof's C++
analysis writes it) and AICORE_FREQ.  Reads the session's ``pmu`` and ``aicore_freq`` tables
(:mod:`msprof_py.parse.pmu`) through :mod:`msprof_py.export.pmu_export`'s joins; only formats.
Columns: :data:`msprof_py.export.unified_db_insert.TABLES`.
"""
from __future__ import annotations

import pickle
import sqlite3
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.export.db_btree import Serial, serial
from msprof_py.export.db_pages import TablePages
from msprof_py.export.pmu_export import JOIN, match_rows, metric_columns
from msprof_py.export.unified_db_insert import MAX_PARAMS, create_table, values
from msprof_py.parse.pmu import metrics as M
from msprof_py.parse.pmu.table import KEY_COLS
from msprof_py.parse.session import Session

DB_CHUNK_ROWS = 4_096  # task rows made Python values at a time (insert_pmu, stage_pmu)


def db_tables(con: sqlite3.Connection, session: Session, tasks: pd.DataFrame | None, gid: np.ndarray | None,
              string_id: Any, pmu: bool = True, freq: bool = True, created: set[str] | None = None,
              pages: TablePages | None = None) -> None:
    """Create and fill TASK_PMU_INFO (one row per TASK row with PMU data and metric, value as
    msprof stores it: unrounded, the metric_summary name without ``_extra``) and AICORE_FREQ.

    A DB written one device at a time calls this per device (``pmu`` / ``freq``: which of the two
    tables; ``created``: the tables already created, updated here, so each is created once;
    ``pages``: TASK_PMU_INFO's page writer, :func:`insert_pmu`)."""
    created = set() if created is None else created
    rows = pmu_rows(session, tasks, gid) if pmu else None
    if rows is not None:
        names, cols, pos, gids = rows
        create_table(con, "TASK_PMU_INFO", created)
        ids = [string_id(M.db_name(n)) for n in names]
        insert_pmu(con, cols, ids, pos, gids, pages=pages)
    if freq:
        freq_rows(con, session.aicore_freq, created)


def freq_rows(con: sqlite3.Connection, f: pd.DataFrame, created: set[str]) -> None:
    """AICORE_FREQ: the rows of a session's ``aicore_freq`` table (created with the first)."""
    if len(f):
        create_table(con, "AICORE_FREQ", created)
        con.executemany("INSERT INTO AICORE_FREQ VALUES (?,?,?)",
                        zip(f["device_id"].to_numpy(np.int64).tolist(), f["timestamp_ns"].to_numpy(np.int64).tolist(),
                            f["freq_mhz"].to_numpy(np.int64).tolist()))


PmuRows = tuple[list[str], list[np.ndarray], np.ndarray, np.ndarray]
"""TASK_PMU_INFO's input: metric names, their value columns (``pmu`` table rows), the row of
each task with PMU data and its globalTaskId (:func:`pmu_rows`)."""


def pmu_rows(session: Session, tasks: pd.DataFrame | None, gid: np.ndarray | None) -> PmuRows | None:
    """The PMU rows of ``tasks`` (globalTaskIds ``gid``), None when no task has any.  The
    metrics are :func:`_pmu`'s (columns with a value), read from the table itself: no copy of
    it (the DB thread works beside the text writers; the table is ~260 B per task)."""
    p = session.pmu
    if not len(p) or len(p.columns) <= len(KEY_COLS) or tasks is None or not len(tasks):
        return None
    names = [n for n in metric_columns(p) if p[n].notna().any()]
    if not names:
        return None
    pos = _pmu_positions(p, tasks)
    hit = np.flatnonzero(pos >= 0)
    if not len(hit):
        return None
    return names, [p[n].to_numpy() for n in names], pos[hit], np.asarray(gid, np.int64)[hit]


def _pmu_positions(p: pd.DataFrame, tasks: pd.DataFrame) -> np.ndarray:
    """Row position in ``p`` of each of ``tasks`` (same device, stream, task, context, start), else -1."""
    out = np.full(len(tasks), -1, np.int64)
    dev_t, dev_p = tasks["device_id"].to_numpy(np.int64), p["device_id"].to_numpy(np.int64)
    for d in np.unique(dev_t):
        sel = dev_t == d
        on = np.flatnonzero(dev_p == d)
        if not len(on):
            continue  # no PMU rows on this device (its ffts_profile is missing or empty)
        # the tables themselves when every row is on this device (no copy of either)
        got = match_rows(p if len(on) == len(p) else p[JOIN].iloc[on],
                         tasks if sel.all() else tasks.loc[sel, JOIN])
        out[sel] = np.where(got >= 0, on[np.maximum(got, 0)], -1)
    return out


def insert_pmu(con: sqlite3.Connection, cols: list[np.ndarray], ids: list[int], rows: np.ndarray,
                gids: np.ndarray, into: str = "TASK_PMU_INFO", more: Callable[[], bool] | None = None,
                pages: TablePages | None = None) -> int:
    """TASK_PMU_INFO rows ``(gids[i], ids[j], cols[j][rows[i]])``, i-major then j, as msprof orders
    them, inserted into table ``into`` (TASK_PMU_INFO's columns).

    One Python value bound per task and metric (and one globalTaskId per task), without a staging
    table: each statement inserts whole tasks, ``INSERT ... VALUES (?1,id0,?2),(?1,id1,?3),...``
    (numbered parameters: a task's globalTaskId bound once for its m rows; the name ids are
    literals of the statement).  Before (phase 8) the tasks were staged in a TEMP table, one row
    per task, and SQLite unfolded each into its m rows (``INSERT ... SELECT`` with a ``CASE`` of
    the metric): the same binds plus a second write and read of every value and the CASE; this
    is ~40 % less CPU (benchmarks/RESULTS.md, issue 12 phase 9).  Each value goes into the
    table's NUMERIC column as it is bound, so the file is the same: integers as INTEGER, an
    integral float as INTEGER, other floats as REAL, NaN as NULL.

    ``more``: asked before each :data:`DB_CHUNK_ROWS` tasks after the first; the insert stops
    when it says no.  Returns the number of tasks inserted (their rows: the first ones).

    ``pages``: the table's :class:`msprof_py.export.db_pages.TablePages`: the rows are written as
    its pages (:func:`_page_pmu`) when it can take them, else (then for good) inserted here."""
    m = len(cols)
    if not m or not len(rows):
        return len(rows)
    if pages is not None:
        done = _page_pmu(con, pages, cols, ids, rows, gids, more)
        if done is not None and (done == len(rows) or pages.state == "on"):
            return done  # (all, or until more() said no)
        if done:  # pages up to a chunk with a value they do not take, SQLite's inserts from there
            return done + insert_pmu(con, cols, ids, rows[done:], gids[done:], into, more)
    per = max(1, MAX_PARAMS // (m + 1))  # tasks per statement
    width = m + 1

    def sql(k: int) -> str:
        return f"INSERT INTO {into} VALUES " + ",".join(
            f"(?{t * width + 1},{int(ids[j])},?{t * width + j + 2})" for t in range(k) for j in range(m))

    many, one = sql(per), sql(1)
    for lo in range(0, len(rows), DB_CHUNK_ROWS):
        if lo and more is not None and not more():
            return lo
        r = rows[lo:lo + DB_CHUNK_ROWS]
        k = len(r)
        flat: list[Any] = [None] * (k * width)
        flat[0::width] = gids[lo:lo + DB_CHUNK_ROWS].tolist()
        for j, c in enumerate(cols):
            flat[j + 1::width] = _listed(c[r])
        full = k // per * per
        if full:
            con.executemany(many, zip(*[iter(flat[:full * width] if full < k else flat)] * (per * width)))
        if full < k:
            con.executemany(one, zip(*[iter(flat[full * width:])] * width))
    return len(rows)


PAGE_TASKS = 2_048  # tasks made pages at a time (_page_pmu: ~50k rows of B', ~5 MB of temporaries)


def _page_pmu(con: sqlite3.Connection, pages: TablePages, cols: list[np.ndarray], ids: list[int], rows: np.ndarray,
              gids: np.ndarray, more: Callable[[], bool] | None) -> int | None:
    """:func:`insert_pmu`'s rows written as table pages by ``pages`` (:data:`PAGE_TASKS` tasks
    at a time); returns the tasks written: all, those before ``more()`` said no (asked as by
    :func:`insert_pmu`), or those before a chunk with a value it does not handle (``pages``
    finished then: SQLite's inserts from there on); None: its table cannot take them at all."""
    if not pages.usable(con) or not all(c.dtype.kind in "iubf" for c in cols):
        pages.finish(con)
        return None
    with pages.heap_kept():
        return _page_chunks(con, pages, cols, ids, rows, gids, more)


def _page_chunks(con: sqlite3.Connection, pages: TablePages, cols: list[np.ndarray], ids: list[int],
                 rows: np.ndarray, gids: np.ndarray, more: Callable[[], bool] | None) -> int | None:
    m = len(cols)
    name = serial(np.asarray(ids, np.int64))
    assert name is not None
    for lo in range(0, len(rows), DB_CHUNK_ROWS):
        if lo and more is not None and not more():
            return lo
        for a in range(lo, min(len(rows), lo + DB_CHUNK_ROWS), PAGE_TASKS):
            b = min(len(rows), lo + DB_CHUNK_ROWS, a + PAGE_TASKS)
            r = rows[a:b]
            value = _value_serial(cols, r)
            g = serial(gids[a:b])
            if value is None or g is None:  # (the rows before stay pages, the rest are SQLite's)
                pages.finish(con)
                return a
            k = len(r)
            pages.append(con, [(np.repeat(g[0], m), np.repeat(g[1], m)), (np.tile(name[0], k), np.tile(name[1], k)),
                               value])
    return len(rows)


def _value_serial(cols: list[np.ndarray], r: np.ndarray) -> Serial | None:
    """The TASK_PMU_INFO values of tasks ``r`` (task-major, then metric) as :func:`serial` stores
    them; one float matrix when every integer column's values are exact as floats (below 2**53:
    the same stored values), else column by column."""
    k, m = len(r), len(cols)
    if all(c.dtype.kind == "f" or (c.dtype.kind in "iub" and (not len(c) or np.abs(c[r].astype(np.float64)).max() < 2.0**53))
           for c in cols):
        x = np.empty((k, m), np.float64)
        for j, c in enumerate(cols):
            x[:, j] = c[r]
        return serial(x.reshape(-1))
    got = [serial(c[r]) for c in cols]
    if any(v is None for v in got):
        return None
    return (np.stack([v[0] for v in got], axis=1).reshape(-1),  # type: ignore[index]
            np.stack([v[1] for v in got], axis=1).reshape(-1))  # type: ignore[index]


@dataclass
class Direct:
    """A device's TASK_PMU_INFO rows inserted into the DB before the table's turn (a DB process
    per device, ``unified_db.Fill.early``): ``n`` tasks of metrics ``names``, their rows (rowids
    ``lo < rowid <= hi``) given the name ids ``ids`` (predicted for the table's turn; None: none
    made yet); ``rest``: the file of the tasks not made yet (:func:`hand_over`)."""

    names: list[str]
    ids: list[int] | None
    n: int
    lo: int
    hi: int
    rest: str | None


def insert_direct(con: sqlite3.Connection, rows: PmuRows, ids: list[int], more: Callable[[], bool] | None,
                  pages: TablePages | None = None) -> int:
    """:func:`pmu_rows`' ``rows`` appended to TASK_PMU_INFO with the name ids ``ids`` while
    ``more()`` says so (asked every :data:`DB_CHUNK_ROWS` tasks); returns the tasks made."""
    names, cols, pos, gids = rows
    return insert_pmu(con, cols, ids, pos, gids, more=more, pages=pages)


def hand_over(path: Path, rows: PmuRows) -> None:
    """:func:`_hand_over` of all of ``rows``' tasks."""
    _hand_over(path, rows[1], rows[2], rows[3])


def insert_rest(con: sqlite3.Connection, path: str, ids: list[int], pages: TablePages | None = None) -> int:
    """:func:`_insert_rest`; returns the tasks inserted."""
    return _insert_rest(con, path, ids, pages)


def remap_direct(con: sqlite3.Connection, d: Direct, final: list[int]) -> bool:
    """The rows of ``d`` given the name ids ``final`` (those of the table's turn) in place of
    those they were made with: nothing to do when they are the same (returns True)."""
    assert d.rest is None and d.ids is not None
    if final == d.ids:
        return True
    pick = "CASE name " + " ".join(f"WHEN {int(a)} THEN {int(b)}" for a, b in zip(d.ids, final)) + " END"
    con.execute(f"UPDATE TASK_PMU_INFO SET name = {pick} WHERE rowid > {int(d.lo)} AND rowid <= {int(d.hi)}")
    return False


def _hand_over(path: Path, cols: list[np.ndarray], pos: np.ndarray, gids: np.ndarray) -> None:
    """The TASK_PMU_INFO input of tasks ``pos`` (globalTaskIds ``gids``) in the file ``path``: one
    pickle per :data:`DB_CHUNK_ROWS` tasks, ``[gids, value column per metric]`` (read back a
    chunk at a time by :func:`_insert_rest`: no more memory than a chunk on either side)."""
    with open(path, "wb") as f:
        for lo in range(0, len(pos), DB_CHUNK_ROWS):
            r = pos[lo:lo + DB_CHUNK_ROWS]
            pickle.dump([gids[lo:lo + DB_CHUNK_ROWS], *[c[r] for c in cols]], f, protocol=5)


def _insert_rest(con: sqlite3.Connection, path: str, ids: list[int], pages: TablePages | None = None) -> int:
    """TASK_PMU_INFO rows of the tasks :func:`_hand_over` wrote in ``path`` (name ids ``ids``);
    returns the tasks."""
    n = 0
    with open(path, "rb") as f, pages.heap_kept() if pages is not None else nullcontext():
        while True:
            try:
                g, *cols = pickle.load(f)
            except EOFError:
                return n
            n += insert_pmu(con, cols, ids, np.arange(len(g)), g, pages=pages)


def bound(col: np.ndarray) -> list[Any] | str:
    """Python values to bind: a numeric column's ``tolist()`` (ints stay int, floats float; an
    integer column of one value: its literal, :func:`values`); other columns (object, extension
    types) value by value as ints or floats."""
    if col.dtype.kind in "iu":
        return values(col)
    if col.dtype.kind in "fb":
        return col.tolist()
    return [_sql_num(v) for v in col]


def _listed(col: np.ndarray) -> list[Any]:
    """:func:`bound` as a list always (a column of one integer too)."""
    b = bound(col)
    return col.tolist() if isinstance(b, str) else b


def _sql_num(v: Any) -> Any:
    if isinstance(v, (np.integer, int)):
        return int(v)
    return float(v)

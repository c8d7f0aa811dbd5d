"""The unified DB's tables (exact column lists and types, as msprof creates them) and how rows go in.

A table is created only when it has rows (msprof db_assembler.h SaveData); integer columns are
inserted from int64 arrays a chunk of rows at a time (Python ints of one chunk alive at once)."""
from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.export.db_pages import write_columns
from msprof_py.export.unified_db_enums import ENUM_TABLES

TABLES: dict[str, list[tuple[str, str]]] = {
    "STRING_IDS": [("id", "INTEGER PRIMARY KEY"), ("value", "TEXT")],
    "TASK": [("startNs", "INTEGER"), ("endNs", "INTEGER"), ("deviceId", "INTEGER"), ("connectionId", "INTEGER"),
             ("globalTaskId", "INTEGER"), ("globalPid", "INTEGER"), ("taskType", "INTEGER"),
             ("contextId", "INTEGER"), ("streamId", "INTEGER"), ("taskId", "INTEGER"), ("modelId", "INTEGER")],
    "CANN_API": [("startNs", "INTEGER"), ("endNs", "INTEGER"), ("type", "INTEGER"), ("globalTid", "INTEGER"),
                 ("connectionId", "INTEGER"), ("name", "INTEGER")],
    "COMPUTE_TASK_INFO": [("name", "INTEGER"), ("globalTaskId", "INTEGER"), ("blockNum", "INTEGER"),
                          ("mixBlockNum", "INTEGER"), ("taskType", "INTEGER"), ("opType", "INTEGER"),
                          ("inputFormats", "INTEGER"), ("inputDataTypes", "INTEGER"), ("inputShapes", "INTEGER"),
                          ("outputFormats", "INTEGER"), ("outputDataTypes", "INTEGER"),
                          ("outputShapes", "INTEGER"), ("attrInfo", "INTEGER"), ("opState", "INTEGER"),
                          ("hf32Eligible", "INTEGER"), ("gridDim", "INTEGER"), ("blockDim", "INTEGER")],
    "META_DATA": [("name", "TEXT"), ("value", "TEXT")],
    **{name: [("id", "INTEGER PRIMARY KEY"), ("name", "TEXT")] for name in ENUM_TABLES},
    "SESSION_TIME_INFO": [("startTimeNs", "INTEGER"), ("endTimeNs", "INTEGER")],
    "NPU_INFO": [("id", "INTEGER"), ("name", "TEXT")],
    "RANK_DEVICE_MAP": [("rankId", "INTEGER"), ("deviceId", "INTEGER")],
    "HOST_INFO": [("hostUid", "TEXT"), ("hostName", "TEXT")],
    "MEMCPY_INFO": [("globalTaskId", "NUMERIC"), ("size", "NUMERIC"), ("memcpyOperation", "NUMERIC")],
    "COMMUNICATION_OP": [("opName", "INTEGER"), ("startNs", "INTEGER"), ("endNs", "INTEGER"),
                         ("connectionId", "INTEGER"), ("groupName", "INTEGER"), ("opId", "INTEGER"),
                         ("relay", "INTEGER"), ("retry", "INTEGER"), ("dataType", "INTEGER"),
                         ("algType", "INTEGER"), ("count", "NUMERIC"), ("opType", "INTEGER"),
                         ("deviceId", "INTEGER"), ("rankSize", "INTEGER")],
    # device counters (filled by msprof_py.export.pmu_db)
    "TASK_PMU_INFO": [("globalTaskId", "INTEGER"), ("name", "INTEGER"), ("value", "NUMERIC")],
    "AICORE_FREQ": [("deviceId", "INTEGER"), ("timestampNs", "NUMERIC"), ("freq", "INTEGER")],
}


def create_table(con: sqlite3.Connection, name: str, created: set[str] | None = None, table: str | None = None) -> None:
    """``CREATE TABLE name`` with its :data:`TABLES` columns (once: not if ``name`` is in
    ``created``, which is updated; a table filled device after device is created by the first).
    ``table``: create that table (``schema.name``) with ``name``'s columns instead: rows built
    there in their final form are copied into ``name`` as they are (the same columns and types
    are what SQLite's transfer optimisation needs)."""
    if created is not None:
        if name in created:
            return
        created.add(name)
    cols = TABLES[name]
    con.execute(f"CREATE TABLE {table or name} (" + ", ".join(f"{c} {t}" for c, t in cols) + ")")


def insert_rows(con: sqlite3.Connection, name: str, rows: Any) -> None:
    """Create table ``name`` and insert ``rows`` (a list).  msprof creates a table only when it
    has rows (db_assembler.h SaveData), so an empty ``rows`` creates nothing."""
    if not rows:
        return
    create_table(con, name)
    n = len(TABLES[name])
    con.executemany(f"INSERT INTO {name} VALUES ({','.join('?' * n)})", rows)


INSERT_CHUNK = 8_192  # rows converted to Python ints at a time: bounds the memory of a big table (~6 MB for
# COMPUTE_TASK_INFO's 17 columns; 65,536 rows were ~50 MB, held beside the text writers by the DB thread)


class Lookup:
    """A column ``ids[codes]`` (code -1: the last id) made a slice at a time (:func:`insert_cols`)."""

    def __init__(self, ids: np.ndarray, codes: np.ndarray) -> None:
        self.ids, self.codes = ids, codes

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, rows: slice) -> np.ndarray:
        c = self.codes[rows]
        return self.ids[np.where(c < 0, np.int64(len(self.ids) - 1), c)]


class Const:
    """A column of ``n`` times ``value`` made a slice at a time (:func:`insert_cols`)."""

    def __init__(self, value: int, n: int) -> None:
        self.value, self.n = value, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, rows: slice) -> np.ndarray:
        return np.full(len(range(*rows.indices(self.n))), self.value, np.int64)


class Rows:
    """A column of ``n`` rows computed a slice at a time: ``fn(slice)`` (``slice.start`` <= n)."""

    def __init__(self, n: int, fn: Any) -> None:
        self.n, self.fn = n, fn

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, rows: slice) -> np.ndarray:
        return self.fn(slice(*rows.indices(self.n)))


def insert_cols(con: sqlite3.Connection, name: str, *cols: Any, created: set[str] | None = None,
                table: str | None = None, pages: Any = None) -> None:
    """Create table ``name`` (when there are rows and it is not in ``created`` yet) and insert
    int64 columns (arrays, or :class:`Lookup` / :class:`Const` / :class:`Rows` made a chunk at a time) in chunks
    of rows.  ``table``: into that table of ``name``'s columns (:func:`create_table`); ``pages``:
    the table's :class:`msprof_py.export.db_pages.TablePages`, which writes the rows as table
    pages where it can (:func:`msprof_py.export.db_pages.write_columns`; SQLite's inserts for the
    rest)."""
    n = len(cols[0]) if cols else 0
    if n == 0:
        return
    create_table(con, name, created, table)
    done = write_columns(con, pages, cols, n) if pages is not None and table is None else 0
    for lo in range(done, n, INSERT_CHUNK):
        hi = min(n, lo + INSERT_CHUNK)
        insert_lists(con, table or name, [values(c[lo:hi], j > 0) for j, c in enumerate(cols)])


def values(chunk: np.ndarray, literal: bool = True) -> list[Any] | str:
    """What :func:`insert_lists` binds for a chunk of a column: its Python values, or (``literal``)
    when it is an integer column holding one value in every row, that value's SQL literal (a
    column of a device id, a process id, a constant id costs nothing per row then: ~1/4 of
    TASK's insert).  The same integer is stored either way; -2**63 is bound (its literal would
    be a REAL)."""
    if literal and len(chunk) > 1 and chunk.dtype.kind in "iu" and chunk[0] == chunk[-1] and (chunk == chunk[0]).all():
        v = int(chunk[0])
        if -2**63 < v < 2**63:
            return str(v)
    return chunk.tolist()


MAX_PARAMS = 999  # SQLite's oldest SQLITE_MAX_VARIABLE_NUMBER (32766 since 3.32): parameters per statement
ROWS_PER_STATEMENT = 128


def insert_lists(con: sqlite3.Connection, table: str, columns: list[list[Any] | str]) -> None:
    """Insert rows given as equally long columns (Python lists) into an existing ``table``, in
    order.  Up to :data:`ROWS_PER_STATEMENT` rows per ``INSERT ... VALUES (..), (..)`` statement:
    SQLite's per-statement cost (program start, bind, step, reset) is paid once per group of rows,
    not per row (half the CPU of one row per statement); same rows, rowids and file bytes.  Each
    value is bound as it is (int, float, str, None); a column given as a ``str`` (not the first)
    is an SQL literal, the value of every row (:func:`values`)."""
    k = len(columns[0]) if columns else 0
    if not k:
        return
    one = "(" + ",".join(c if isinstance(c, str) else "?" for c in columns) + ")"
    columns = [c for c in columns if not isinstance(c, str)]
    m = len(columns)
    per = max(1, min(ROWS_PER_STATEMENT, MAX_PARAMS // m))
    full = k // per * per
    if full:
        flat: list[Any] = [None] * (full * m)
        for j, c in enumerate(columns):
            flat[j::m] = c[:full] if len(c) != full else c
        con.executemany(f"INSERT INTO {table} VALUES " + ",".join([one] * per), zip(*[iter(flat)] * (per * m)))
    if full < k:
        con.executemany(f"INSERT INTO {table} VALUES " + one, zip(*[c[full:] for c in columns]))


def i64(col: Any) -> np.ndarray:
    """int64 column; a value that is not a number or does not fit int64 is -1 (never wrapped)."""
    s = pd.Series(col)
    if s.dtype.kind == "i":
        return s.to_numpy(dtype=np.int64)
    if s.dtype.kind == "u":
        u = s.to_numpy(dtype=np.uint64)
        out = u.astype(np.int64)
        out[u > np.uint64(2**63 - 1)] = -1
        return out
    v = pd.to_numeric(s, errors="coerce")
    if v.dtype.kind in "fu":
        return i64(v) if v.dtype.kind == "u" else v.where(v.abs() < 2.0**63).fillna(-1).to_numpy(dtype=np.int64)
    return v.fillna(-1).to_numpy(dtype=np.int64)

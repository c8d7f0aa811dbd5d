"""A device's TASK_PMU_INFO rows kept until the table's turn in the unified DB (:class:`Staged`).

A DB written one device at a time (on the DB thread, or by the DB processes before the last) has a
device's PMU rows before TASK_PMU_INFO's turn: they are staged in a table of their own
(:func:`stage_pmu`), or made in their final form at once (:func:`build_now`), built while the DB
would wait (:func:`build_pmu`) and appended at the table's turn (:func:`unfold_pmu`,
:func:`copy_built`).  The rows themselves are :mod:`msprof_py.export.pmu_db`'s.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from msprof_py.export.pmu_db import DB_CHUNK_ROWS, PmuRows, bound, hand_over, insert_pmu, insert_rest
from msprof_py.export.unified_db_insert import create_table, insert_lists
from msprof_py.parse.pmu import metrics as M

_STAGE, _NAMES = "msprof_py_pmu_stage", "msprof_py_pmu_names"  # TEMP tables (not in the DB file)
_BUILT = "msprof_py_pmu_rows"  # a device's rows in their final form (build_pmu), beside its staged rows


def build_now(con: sqlite3.Connection, rows: PmuRows, ids: list[int], key: int, schema: str = "temp",
              more: Callable[[], bool] | None = None, rest: Path | None = None) -> Staged:
    """:func:`pmu_rows`' ``rows`` in their final form (the metric names given the STRING_IDS
    ``ids``, those the table's turn is predicted to give) in a table of their own in ``schema``,
    copied into the DB at TASK_PMU_INFO's turn (:func:`unfold_pmu`: as they are, SQLite's transfer
    optimisation, ~1/2 the CPU of inserting them then).  For a device whose rows can be made
    before the table's turn at a time the DB is not the critical path (a DB process of a device
    before the last, the last device's rows beside the DB, ``unified_db_side``).

    ``more`` / ``rest``: the rows are made while ``more()`` says so (asked every
    :data:`DB_CHUNK_ROWS` tasks); the tasks not made then are handed over as their values in the
    file ``rest`` (:func:`msprof_py.export.pmu_db.hand_over`), inserted at the table's turn by :func:`unfold_pmu`.  Why:
    a DB process of a device before the last must end before the export reads the next device
    (one device's tables in memory), and the export would wait for it (issue 12 phase 9b,
    benchmarks/RESULTS.md)."""
    names, cols, pos, gids = rows
    built = f"{schema}.{_BUILT}_{key}"
    create_table(con, "TASK_PMU_INFO", table=built)
    done = insert_pmu(con, cols, ids, pos, gids, into=built, more=more)
    if done < len(pos):
        assert rest is not None
        hand_over(rest, (names, cols, pos[done:], gids[done:]))
    return Staged(names, built, len(pos), built, list(ids), done, str(rest) if done < len(pos) else None)


def _stage_rows(con: sqlite3.Connection, table: str, cols: list[np.ndarray], rows: np.ndarray,
                gids: np.ndarray) -> None:
    insert_lists(con, table, [gids.tolist(), *[bound(c[rows]) for c in cols]])


def _names(con: sqlite3.Connection, ids: list[int]) -> None:
    """The TEMP table of metric positions and their STRING_IDS ids (:func:`_unfold` reads it)."""
    con.execute(f"CREATE TEMP TABLE {_NAMES} (j INTEGER PRIMARY KEY, id)")
    con.executemany(f"INSERT INTO {_NAMES} VALUES (?, ?)", enumerate(ids))


def _unfold(con: sqlite3.Connection, table: str, m: int, into: str = "TASK_PMU_INFO",
            rows: tuple[int, int] | None = None) -> None:
    """Every staged row of ``table`` (``m`` metric values; ``rows``: those of rowid ``lo < rowid
    <= hi``) as one row per metric of table ``into`` (TASK_PMU_INFO's columns), in order."""
    pick = "CASE n.j " + " ".join(f"WHEN {j} THEN s.v{j}" for j in range(m)) + " END"
    where = f"WHERE s.rowid > {int(rows[0])} AND s.rowid <= {int(rows[1])} " if rows is not None else ""
    con.execute(f"INSERT INTO {into} SELECT s.g, n.id, {pick} "
                f"FROM {table} AS s CROSS JOIN {_NAMES} AS n {where}ORDER BY s.rowid, n.j")


BUILD_CHUNK = 8_192  # staged rows (x the metrics: ~230k TASK_PMU_INFO rows, ~40 ms) per round of build_pmu


@dataclass
class Staged:
    """A device's TASK_PMU_INFO input kept until the table's turn (:func:`stage_pmu`): one row per
    task in ``table`` (rowids 1..``n``), the first ``done`` of them built in their final form in
    table ``built`` with the name ids ``ids`` (:func:`build_pmu`)."""

    names: list[str]  # the metrics
    table: str  # schema.name
    n: int
    built: str | None = None
    ids: list[int] | None = None
    done: int = 0
    rest: str | None = None  # the file of the tasks after ``done`` (build_now handed them over), not ``table``


def stage_pmu(con: sqlite3.Connection, rows: PmuRows, key: int, schema: str = "temp") -> Staged:
    """Stage all of :func:`pmu_rows`' ``rows`` in a table of their own in ``schema`` (``temp``:
    SQLite's temporary file, not memory; or an attached file that outlives the connection): a DB
    written one device at a time stages a device's rows while it has them and unfolds them at
    TASK_PMU_INFO's turn (:func:`unfold_pmu`)."""
    names, cols, pos, gids = rows
    table = f"{schema}.{_STAGE}_{key}"
    con.execute(f"CREATE TABLE {table} (g, " + ", ".join(f"v{j}" for j in range(len(cols))) + ")")
    for lo in range(0, len(pos), DB_CHUNK_ROWS):
        _stage_rows(con, table, cols, pos[lo:lo + DB_CHUNK_ROWS], gids[lo:lo + DB_CHUNK_ROWS])
    return Staged(names, table, len(pos))


def build_pmu(con: sqlite3.Connection, staged: Staged, ids: list[int], more: Callable[[], bool]) -> None:
    """Build :func:`stage_pmu`'s rows in their final form (the metric names given the STRING_IDS
    ``ids``) in a table beside the staged one (TASK_PMU_INFO's columns), :data:`BUILD_CHUNK`
    staged rows at a time while ``more()`` says so.

    Why: the unfold is most of TASK_PMU_INFO's cost, and the DB thread often waits for the next
    device with nothing to do; the rows built then are copied into the DB at the table's turn
    with SQLite's transfer optimisation (the records as they are: ~1/2 of the unfold's CPU),
    which shortens the DB's work after the last device.  Only while the DB would wait: built
    rows cost their copy on top of the unfold, so building them when the DB has other work
    would only add CPU."""
    if staged.done >= staged.n or not more():
        return
    if staged.built is None:
        staged.built, staged.ids = staged.table.replace(_STAGE, _BUILT, 1), list(ids)
        create_table(con, "TASK_PMU_INFO", table=staged.built)
    assert staged.ids is not None
    _names(con, staged.ids)
    try:
        while True:
            hi = min(staged.n, staged.done + BUILD_CHUNK)
            _unfold(con, staged.table, len(staged.names), staged.built, (staged.done, hi))
            staged.done = hi
            if staged.done >= staged.n or not more():
                break
    finally:
        con.execute(f"DROP TABLE IF EXISTS temp.{_NAMES}")


def unfold_pmu(con: sqlite3.Connection, staged: Staged, string_id: Any, created: set[str]) -> bool:
    """TASK_PMU_INFO rows of :func:`stage_pmu`'s rows (what :func:`db_tables` inserts for them).

    The rows :func:`build_pmu` built: when the names' ids are those they were built with,
    ``INSERT INTO ... SELECT *`` of their table as it is (SQLite's transfer optimisation: the
    same records, appended with the next rowids, so the same file); otherwise (strings interned
    before the table's turn that the prediction did not know) each built id is mapped to its id
    (a CASE per row).  Then the staged rows not built, unfolded.  Returns False when built rows
    had to be mapped."""
    final = [string_id(M.db_name(n)) for n in staged.names]
    create_table(con, "TASK_PMU_INFO", created)
    as_they_are = True
    try:
        if staged.built is not None:
            assert staged.ids is not None
            as_they_are = copy_built(con, staged.built, staged.ids, final)
        if staged.rest is not None:
            insert_rest(con, staged.rest, final)
        elif staged.done < staged.n:
            _names(con, final)
            _unfold(con, staged.table, len(staged.names), rows=(staged.done, staged.n) if staged.done else None)
    finally:
        if staged.built is not None:
            con.execute(f"DROP TABLE IF EXISTS {staged.built}")
        con.execute(f"DROP TABLE IF EXISTS {staged.table}")
        con.execute(f"DROP TABLE IF EXISTS temp.{_NAMES}")
        if staged.rest is not None:
            Path(staged.rest).unlink(missing_ok=True)
    return as_they_are


def copy_built(con: sqlite3.Connection, table: str, ids: list[int], final: list[int]) -> bool:
    """Append the rows :func:`build_pmu` built in ``table`` (name ids ``ids``) to TASK_PMU_INFO:
    as they are when ``ids`` are the ``final`` ids (``INSERT INTO ... SELECT *``: SQLite's
    transfer optimisation, the same records with the next rowids, so the same file; returns
    True), else each id mapped to its final one (a CASE per row)."""
    if final == ids:
        con.execute(f"INSERT INTO TASK_PMU_INFO SELECT * FROM {table}")
        return True
    pick = "CASE name " + " ".join(f"WHEN {a} THEN {b}" for a, b in zip(ids, final)) + " END"
    con.execute(f"INSERT INTO TASK_PMU_INFO SELECT globalTaskId, {pick}, value FROM {table}")
    return False

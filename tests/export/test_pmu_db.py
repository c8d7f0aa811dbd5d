"""TASK_PMU_INFO rows: the insert of whole tasks per statement (``pmu_db.insert_pmu``) against
binding every value on its own, the way the table was filled at first (same rows, same order,
same storage classes)."""
from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from msprof_py.export import pmu_db, pmu_db_staged
from msprof_py.parse.session import Session

FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3).map(float),
                   st.sampled_from([0.5, 1e-300, 2.0**60, -0.0]))


def _dump(con: sqlite3.Connection) -> list[tuple]:
    return con.execute("SELECT rowid, globalTaskId, name, value, typeof(value) FROM TASK_PMU_INFO "
                       "ORDER BY rowid").fetchall()


def _reference(p: pd.DataFrame, names: list[str], pos: np.ndarray, gids: list[int], ids: list[int]) -> list[tuple]:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE TASK_PMU_INFO (globalTaskId INTEGER, name INTEGER, value NUMERIC)")
    for g, r in zip(gids, pos.tolist()):
        for n, i in zip(names, ids):
            v = p[n].to_numpy()[r]
            con.execute("INSERT INTO TASK_PMU_INFO VALUES (?,?,?)",
                        (g, i, int(v) if isinstance(v, (np.integer, int)) else float(v)))
    return _dump(con)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 9), data=st.data(), chunk=st.sampled_from([1, 2, 4096]),
       params=st.sampled_from([5, 10, 15, 999]))
def test_insert_equals_per_value_insert(n: int, data: st.DataObject, chunk: int, params: int) -> None:
    """``params``: the parameters per statement (4 metrics and the globalTaskId per task: 1, 2, 3
    or all tasks of a chunk per statement, and the tasks left over one statement each)."""
    p = pd.DataFrame({
        "aic_total_cycles": np.array(data.draw(st.lists(st.one_of(st.integers(0, 2**62), st.just(2**53 + 1)),
                                                                    min_size=n, max_size=n)), np.int64),
        "aic_mac_ratio": np.array(data.draw(st.lists(FLOATS, min_size=n, max_size=n)), np.float64),
        "aic_vec_ratio": np.array(data.draw(st.lists(st.floats(width=32), min_size=n, max_size=n)), np.float32),
        "odd": pd.Series(data.draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n)), dtype=object),
    })
    names = list(p.columns)
    pos = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=12)), np.int64)
    gids = list(range(100, 100 + len(pos)))
    ids = [7, 3, 9, 1]
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE TASK_PMU_INFO (globalTaskId INTEGER, name INTEGER, value NUMERIC)")
    old = pmu_db.DB_CHUNK_ROWS, pmu_db.MAX_PARAMS
    pmu_db.DB_CHUNK_ROWS, pmu_db.MAX_PARAMS = chunk, params
    try:
        pmu_db.insert_pmu(con, [p[c].to_numpy() for c in names], ids, pos, np.asarray(gids, np.int64))
    finally:
        pmu_db.DB_CHUNK_ROWS, pmu_db.MAX_PARAMS = old
    assert _dump(con) == _reference(p, names, pos, gids, ids)
    # the staging tables are gone (a second device's call creates them again)
    assert not con.execute("SELECT name FROM sqlite_temp_master").fetchall()


@pytest.mark.parametrize("params", [5, 11, 15, 999])
def test_insert_of_many_tasks_per_statement(params: int) -> None:
    """Distinct values in 50 tasks, 1-3 or all tasks of a chunk per statement (``params``) and
    chunks of 16: each value in its task's and metric's row."""
    p = pd.DataFrame({"aic_total_cycles": np.arange(50, dtype=np.int64) * 3,
                      "aic_mac_ratio": np.arange(50) / 7, "aic_vec_ratio": np.arange(50) * 2.0,
                      "odd": pd.Series(list(range(50)), dtype=object)})
    names = list(p.columns)
    pos = np.arange(49, -1, -1, dtype=np.int64)
    gids = list(range(100, 150))
    ids = [7, 3, 9, 1]
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE TASK_PMU_INFO (globalTaskId INTEGER, name INTEGER, value NUMERIC)")
    old = pmu_db.DB_CHUNK_ROWS, pmu_db.MAX_PARAMS
    pmu_db.DB_CHUNK_ROWS, pmu_db.MAX_PARAMS = 16, params
    try:
        pmu_db.insert_pmu(con, [p[c].to_numpy() for c in names], ids, pos, np.asarray(gids, np.int64))
    finally:
        pmu_db.DB_CHUNK_ROWS, pmu_db.MAX_PARAMS = old
    assert _dump(con) == _reference(p, names, pos, gids, ids)


def test_db_tables_two_devices_in_task_order() -> None:
    key = {"stream_id": [1, 1, 2], "task_id": [7, 8, 7], "context_id": [0, 0, 0], "start_ns": [10, 20, 10]}
    pmu = pd.DataFrame({"device_id": [1, 0, 0], **key, "aic_total_cycles": [5, 6, 7],
                        "aic_mac_ratio": [0.25, 1.0, 0.5]})
    session = Session.from_tables(pmu=pmu)
    tasks = pd.DataFrame({"device_id": [0, 0, 1, 1], "stream_id": [2, 1, 1, 1], "task_id": [7, 8, 7, 9],
                          "context_id": [0, 0, 0, 0], "start_ns": [10, 20, 10, 30]})
    names: dict[str, int] = {}
    con = sqlite3.connect(":memory:")
    pmu_db.db_tables(con, session, tasks, np.arange(4) + 50, lambda s: names.setdefault(s, len(names)))
    assert _dump(con) == [(1, 50, 0, 7, "integer"), (2, 50, 1, 0.5, "real"), (3, 51, 0, 6, "integer"),
                          (4, 51, 1, 1, "integer"), (5, 52, 0, 5, "integer"), (6, 52, 1, 0.25, "real")]


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 6), data=st.data(), miss=st.sampled_from(["none", "shift", "swap"]),
       rounds=st.integers(0, 4))
def test_built_then_copied_rows_equal_the_direct_insert(n: int, data: st.DataObject, miss: str, rounds: int) -> None:
    """A device's staged rows, some or all built in their final form (build_pmu, two staged rows
    a round, ``rounds`` rounds) with the ids the table's turn gives or with other ids (the
    prediction missed: mapped at the turn), the rest unfolded at the turn, after rows already in
    the table: the same rows, rowids and storage classes as the direct insert."""
    p = pd.DataFrame({"aic_total_cycles": np.array(data.draw(st.lists(st.integers(0, 2**62), min_size=n,
                                                                      max_size=n)), np.int64),
                      "aic_mac_ratio": np.array(data.draw(st.lists(FLOATS, min_size=n, max_size=n)), np.float64)})
    names = list(p.columns)
    pos = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=8)), np.int64)
    gids = np.arange(100, 100 + len(pos), dtype=np.int64)
    final = {"aic_total_cycles": 11, "aic_mac_ratio": 4}
    ids = [final[c] for c in names]
    built_ids = {"none": ids, "shift": [i + 1 for i in ids], "swap": ids[::-1]}[miss]

    def table(con: sqlite3.Connection) -> None:
        con.execute("CREATE TABLE TASK_PMU_INFO (globalTaskId INTEGER, name INTEGER, value NUMERIC)")
        con.execute("INSERT INTO TASK_PMU_INFO VALUES (1, 2, 3)")  # rows of an earlier device

    direct = sqlite3.connect(":memory:")
    table(direct)
    pmu_db.insert_pmu(direct, [p[c].to_numpy() for c in names], ids, pos, gids)
    con = sqlite3.connect(":memory:")
    table(con)
    staged = pmu_db_staged.stage_pmu(con, (names, [p[c].to_numpy() for c in names], pos, gids), 3)
    old, pmu_db_staged.BUILD_CHUNK = pmu_db_staged.BUILD_CHUNK, 2
    try:
        budget = iter(range(rounds))
        pmu_db_staged.build_pmu(con, staged, built_ids, lambda: next(budget, None) is not None)
    finally:
        pmu_db_staged.BUILD_CHUNK = old
    assert staged.done == min(len(pos), 2 * rounds)
    assert pmu_db_staged.unfold_pmu(con, staged, lambda s: final[s], {"TASK_PMU_INFO"}) == (miss == "none" or not rounds)
    assert _dump(con) == _dump(direct)
    assert not con.execute("SELECT name FROM sqlite_temp_master").fetchall()  # staged and built rows dropped

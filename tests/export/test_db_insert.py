"""``unified_db_insert.insert_lists`` (several rows per INSERT statement) against one row per
statement: the same rows, rowids and storage classes, for any row and column count."""
from __future__ import annotations

import sqlite3

from hypothesis import given, settings, strategies as st

from msprof_py.export.unified_db_insert import insert_lists

VALUES = st.one_of(st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False), st.none(), st.text(max_size=3))


def _table(m: int) -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE T (" + ", ".join(f"c{j} NUMERIC" for j in range(m)) + ")")
    return con


def _dump(con: sqlite3.Connection, m: int) -> list[tuple]:
    cols = ", ".join(f"c{j}, typeof(c{j})" for j in range(m))
    return con.execute(f"SELECT rowid, {cols} FROM T ORDER BY rowid").fetchall()


@settings(max_examples=40, deadline=None)
@given(m=st.sampled_from([1, 2, 7, 40]), k=st.integers(0, 300), data=st.data())
def test_insert_lists_equals_row_by_row(m: int, k: int, data: st.DataObject) -> None:
    rows = [tuple(data.draw(st.lists(VALUES, min_size=m, max_size=m))) for _ in range(min(k, 3))]
    rows = (rows * (k // max(len(rows), 1) + 1))[:k] if rows else []
    columns = [[r[j] for r in rows] for j in range(m)]
    fast, slow = _table(m), _table(m)
    insert_lists(fast, "T", columns)
    slow.executemany("INSERT INTO T VALUES (" + ",".join("?" * m) + ")", rows)
    assert _dump(fast, m) == _dump(slow, m)


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 40), m=st.integers(1, 5), data=st.data())
def test_integer_columns_of_one_value_as_literals_store_the_same(k: int, m: int, data: st.DataObject) -> None:
    """insert_cols writes an integer column of one value as an SQL literal (values): the same rows
    and storage classes as binding every value, at int64's ends too, uint64 (below 2**63) included."""
    import numpy as np

    from msprof_py.export.unified_db_insert import values

    ints = st.one_of(st.integers(-2**63, 2**63 - 1), st.sampled_from([-2**63, -2**63 + 1, 2**63 - 1, 0, -1]))
    cols = []
    for _ in range(m):
        v = data.draw(ints)
        if data.draw(st.booleans()):  # one value in every row
            cols.append(np.full(k, v, np.int64))
        else:
            cols.append(np.array(data.draw(st.lists(ints, min_size=k, max_size=k)), np.int64))
    if data.draw(st.booleans()):
        cols.append(np.full(k, 2**63 - 1 if data.draw(st.booleans()) else 7, np.uint64))
    fast, slow = _table(len(cols)), _table(len(cols))
    insert_lists(fast, "T", [values(c, j > 0) for j, c in enumerate(cols)])
    slow.executemany("INSERT INTO T VALUES (" + ",".join("?" * len(cols)) + ")",
                     zip(*[c.tolist() for c in cols]))
    assert _dump(fast, len(cols)) == _dump(slow, len(cols))

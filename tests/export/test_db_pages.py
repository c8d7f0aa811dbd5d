"""Table pages written without SQLite's inserts (export.db_pages): the same stored values as
SQLite's own ``executemany`` of the same Python values (``SELECT rowid, *, typeof(..)``), a
valid file (``PRAGMA integrity_check``), pages that do not depend on how the rows were chunked,
a connection that sees them, and SQLite's inserts where the writer does not apply."""
from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msprof_py.export import db_btree, db_pages, pmu_db
from msprof_py.export.db_btree import serial
from msprof_py.export.db_pages import TablePages
from tests.test_chunk_writer_direct import _direct_supported

COLS = "(g INTEGER, name INTEGER, value NUMERIC)"  # TASK_PMU_INFO's affinities
EDGE_INTS = [0, 1, -1, 2, 127, 128, -128, -129, 255, 256, 2**15 - 1, 2**15, -2**15, -2**15 - 1, 2**23 - 1, 2**23,
             -2**23, -2**23 - 1, 2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**47 - 1, 2**47, -2**47, -2**47 - 1,
             2**63 - 1, -2**63, -2**63 + 1]
EDGE_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 127.0, 128.0, 2.0**31, 2.0**47, 2.0**53, 2.0**62, 2.0**63, -2.0**63,
               -2.0**63 + 2048, 2.0**63 - 1024, 9.2e18, 1e300, -1e300, 5e-324, 1e-310, 2.2250738585072014e-308,
               float("nan"), float("inf"), -float("inf"), 3.14, -2.5, 1e18]


def _db(path: Path, page_size: int = 4096, mode: str = "OFF") -> sqlite3.Connection:
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA page_size={page_size}")
    con.execute(f"PRAGMA journal_mode={mode}")
    con.execute("PRAGMA synchronous=OFF")
    con.execute(f"CREATE TABLE other {COLS}")
    con.execute(f"CREATE TABLE t {COLS}")
    return con


def _rows(con: sqlite3.Connection) -> list[tuple]:  # type: ignore[type-arg]
    return con.execute("SELECT rowid, *, typeof(g), typeof(name), typeof(value) FROM t ORDER BY rowid").fetchall()


def _same(a: list[tuple], b: list[tuple]) -> bool:  # type: ignore[type-arg]
    """Row lists equal, NaN-free (NaN is stored as NULL) and -0.0 compared as stored."""
    return [tuple(repr(v) for v in r) for r in a] == [tuple(repr(v) for v in r) for r in b]


def _through_sqlite(path: Path, cols: list[np.ndarray], page_size: int = 4096) -> list[tuple]:  # type: ignore[type-arg]
    con = _db(path, page_size)
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", zip(*[c.tolist() for c in cols]))
    con.commit()
    rows = _rows(con)
    con.close()
    return rows


def _through_pages(path: Path, cols: list[np.ndarray], cuts: list[int], page_size: int = 4096,
                   mode: str = "OFF", between: bool = True) -> sqlite3.Connection:
    """``cols`` written by TablePages in chunks cut at ``cuts``, an insert into another table of
    the same connection between chunks (as the export does; ``between``); the connection, committed."""
    con = _db(path, page_size, mode)
    pages = TablePages("t")
    assert pages.usable(con)
    n = len(cols[0])
    bounds = [0, *sorted({min(max(c, 0), n) for c in cuts}), n]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        got = [serial(c[lo:hi]) for c in cols]
        assert all(g is not None for g in got)
        pages.append(con, got)  # type: ignore[arg-type]
        if between:
            con.execute("INSERT INTO other VALUES (1, 2, 3)")
    pages.finish(con)
    con.commit()
    return con


def _check(con: sqlite3.Connection) -> None:
    assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def _column(draw, kind: str, n: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    if kind == "int":
        v = draw(st.lists(st.one_of(st.sampled_from(EDGE_INTS), st.integers(-2**63, 2**63 - 1),
                                    st.integers(-300, 300)), min_size=n, max_size=n))
        return np.array(v, np.int64)
    v = draw(st.lists(st.one_of(st.sampled_from(EDGE_FLOATS), st.floats(allow_nan=True, allow_infinity=True),
                                st.integers(-2**53, 2**53).map(float), st.integers(-1000, 1000).map(float)),
                      min_size=n, max_size=n))
    return np.array(v, np.float64)


@st.composite
def _table(draw):  # type: ignore[no-untyped-def]
    n = draw(st.integers(1, 700))
    kinds = draw(st.lists(st.sampled_from(["int", "float"]), min_size=3, max_size=3))
    cols = [_column(draw, k, n) for k in kinds]
    cuts = draw(st.lists(st.integers(0, n), max_size=4))
    return cols, cuts


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow, HealthCheck.data_too_large])
@given(table=_table(), page_size=st.sampled_from([1024, 4096]))
def test_pages_store_what_sqlite_stores(tmp_path: Path, table, page_size: int) -> None:  # type: ignore[no-untyped-def]
    """The same rows through ``executemany`` (Python ints and floats bound into NUMERIC /
    INTEGER columns) and through TablePages: the same rowids, values and storage classes (a
    float that is an int64 exactly is stored as INTEGER, -0.0 as 0, NaN as NULL, inf and
    +-2**63 as REAL), a valid file; the file's bytes do not depend on the chunks."""
    cols, cuts = table
    want = _through_sqlite(tmp_path / "a.db", cols, page_size)
    con = _through_pages(tmp_path / "b.db", cols, cuts, page_size)
    _check(con)
    assert _same(_rows(con), want)
    con.close()
    _through_pages(tmp_path / "b.db", cols, cuts, page_size, between=False).close()
    one = hashlib.md5((tmp_path / "b.db").read_bytes()).hexdigest()
    _through_pages(tmp_path / "c.db", cols, [], page_size, between=False).close()
    assert hashlib.md5((tmp_path / "c.db").read_bytes()).hexdigest() == one


@pytest.mark.parametrize("mode", ["OFF", "DELETE"])
def test_a_deep_tree_then_sqlite_goes_on(tmp_path: Path, mode: str) -> None:
    """40,000 rows on 1 KiB pages (three levels of interior pages over the leaves) in odd
    chunks: what SQLite stores for them; SQLite's own inserts after the table is complete (the
    rows that follow, rowids going on), then an update and a delete: a valid file throughout."""
    rng = np.random.default_rng(7)
    n = 40_000
    cols = [np.arange(n, dtype=np.int64) * 977, rng.integers(-3, 3, n).astype(np.int64),
            np.where(rng.random(n) < 0.5, rng.random(n) * 1e6, rng.integers(-2**40, 2**40, n)).astype(np.float64)]
    want = _through_sqlite(tmp_path / "a.db", cols, 1024)
    con = _through_pages(tmp_path / "b.db", cols, [1, 999, 12_345, 20_000], 1024, mode)
    _check(con)
    assert _same(_rows(con), want)
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", [(1, 2, 3.5), (4, 5, None)])
    con.execute("UPDATE t SET name = name + 10 WHERE rowid % 3 = 0")
    con.execute("DELETE FROM t WHERE rowid % 1000 = 7")
    con.commit()
    _check(con)
    assert con.execute("SELECT max(rowid), count(*) FROM t").fetchone() == (n + 2, n + 2 - 40)
    con.close()


def test_one_leaf_goes_into_the_root(tmp_path: Path) -> None:
    """Rows that fit one page: the root page itself (the file does not grow); a connection that
    had the empty root cached sees them."""
    cols = [np.arange(5, dtype=np.int64), np.ones(5, np.int64), np.array([0.5, 2.0, np.nan, -0.0, 1e300])]
    con = _db(tmp_path / "b.db")
    pages = TablePages("t")
    assert pages.usable(con)
    assert con.execute("SELECT count(*) FROM t").fetchone() == (0,)  # (the root page cached)
    size = (tmp_path / "b.db").stat().st_size
    pages.append(con, [serial(c) for c in cols])  # type: ignore[misc]
    pages.finish(con)
    assert (tmp_path / "b.db").stat().st_size == size
    assert _same(_rows(con), _through_sqlite(tmp_path / "a.db", cols))
    _check(con)


@pytest.mark.parametrize("case", ["wal", "index", "rows", "memory"])
def test_where_pages_do_not_apply(tmp_path: Path, case: str) -> None:
    """A table or DB the writer does not take (a WAL journal, an index on the table, rows in it
    already, a DB that is no file): not usable, nothing written (SQLite's inserts then)."""
    con = sqlite3.connect(":memory:") if case == "memory" else _db(tmp_path / "b.db", mode="WAL" if case == "wal" else "OFF")
    if case == "memory":
        con.execute(f"CREATE TABLE t {COLS}")
    if case == "index":
        con.execute("CREATE INDEX ti ON t (g)")
    if case == "rows":
        con.execute("INSERT INTO t VALUES (1, 2, 3)")
    pages = TablePages("t")
    assert not pages.usable(con) and pages.state == "off"
    pages.finish(con)


def test_values_pages_do_not_take(tmp_path: Path) -> None:
    """serial: None for an object column and an unsigned value past int64 (SQLite's binding of
    it fails: the inserts keep that error); bool and unsigned values that fit are integers."""
    assert serial(np.array([1, "a"], object)) is None
    assert serial(np.array([2**63], np.uint64)) is None
    st_, bits = serial(np.array([True, False]))  # type: ignore[misc]
    assert st_.tolist() == [9, 8] and bits.tolist() == [1, 0]
    st_, bits = serial(np.array([2**63 - 1], np.uint64))  # type: ignore[misc]
    assert st_.tolist() == [6] and bits.tolist() == [2**63 - 1]


def _pmu_db(path: Path, pages: TablePages | None, cols: list[np.ndarray], chunk: int = 3) -> list[tuple]:  # type: ignore[type-arg]
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE TASK_PMU_INFO (globalTaskId INTEGER, name INTEGER, value NUMERIC)")
    n = len(cols[0])
    pmu_db.insert_pmu(con, cols, [7, 8, 9], np.arange(n), np.arange(n, dtype=np.int64) + 100, pages=pages)
    if pages is not None:
        pages.finish(con)
    con.commit()
    assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    rows = con.execute("SELECT rowid, *, typeof(value) FROM TASK_PMU_INFO").fetchall()
    con.close()
    return rows


@pytest.mark.parametrize("case", ["object", "object later", "float32 and bool"])
def test_pmu_rows_fall_back_per_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """TASK_PMU_INFO through the writer (``_insert_pmu(pages=)``): the rows SQLite's inserts
    give.  A value column of a type it does not take (object): SQLite's inserts for the table,
    from the start or (a later chunk's values) after the pages of the rows before it."""
    monkeypatch.setattr(pmu_db, "PAGE_TASKS", 4)
    monkeypatch.setattr(pmu_db, "DB_CHUNK_ROWS", 8)
    n = 30
    a = np.arange(n, dtype=np.float64) * 1.5
    if case == "float32 and bool":
        cols = [a.astype(np.float32), (np.arange(n) % 2).astype(bool), np.arange(n, dtype=np.int64) - 15]
    else:
        cols = [a, np.array([float(i) if case == "object later" and i < 10 else str(i) for i in range(n)], object)
                if case != "object later" else
                np.array([float(i) for i in range(n)], object), np.arange(n, dtype=np.int64)]
    want = _pmu_db(tmp_path / "a.db", None, cols)
    pages = TablePages("TASK_PMU_INFO")
    got = _pmu_db(tmp_path / "b.db", pages, cols)
    assert _same(got, want) and pages.state == "off"


def test_pmu_rows_fall_back_midway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk whose values the writer does not take (here: made so) after chunks it took: the
    rows before stay pages, the table is completed, SQLite inserts the rest: the same rows."""
    monkeypatch.setattr(pmu_db, "PAGE_TASKS", 4)
    n = 30
    cols = [np.arange(n, dtype=np.float64) / 4, np.arange(n, dtype=np.int64), np.arange(n, dtype=np.int64) * 3]
    real = pmu_db._value_serial
    calls = iter(range(100))

    def once_none(c, r):  # type: ignore[no-untyped-def]
        return None if next(calls) == 3 else real(c, r)

    want = _pmu_db(tmp_path / "a.db", None, cols)
    monkeypatch.setattr(pmu_db, "_value_serial", once_none)
    pages = TablePages("TASK_PMU_INFO")
    assert _same(_pmu_db(tmp_path / "b.db", pages, cols), want)


def test_disk_full_is_sqlites_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No room for the pages: SQLite's own disk-full error (the export's one-line message)."""
    import errno
    con = _db(tmp_path / "b.db")
    pages = TablePages("t")
    assert pages.usable(con)

    def full(fd, data, offset):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(db_pages.os, "pwrite", full)
    n = 5000
    with pytest.raises(sqlite3.OperationalError, match="is full"):
        pages.append(con, [serial(np.arange(n, dtype=np.int64))] * 3)  # type: ignore[list-item]


@pytest.mark.parametrize("case", ["ints", "object later"])
def test_insert_cols_through_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """``insert_cols(pages=)`` (TASK, COMPUTE_TASK_INFO): the rows SQLite's inserts give, a
    constant column and a column made a slice at a time included; a chunk with values the
    writer does not take (object): the rows before stay pages, SQLite inserts the rest."""
    from msprof_py.export.unified_db_insert import Const, Rows, insert_cols

    monkeypatch.setattr(db_pages, "COLUMN_ROWS", 100)
    n = 1000
    start = np.arange(n, dtype=np.int64) * 1_000_003 + 2**40
    cols = [start, Rows(n, lambda r: start[r] + 5), Const(3, n),
            Rows(n, lambda r: (np.arange(r.start, r.stop) - 500).astype(object if r.start >= 300 else np.int64))
            if case == "object later" else np.arange(n, dtype=np.int64) - 500]
    got = []
    for k, pages in enumerate([None, TablePages("TASK")]):
        con = sqlite3.connect(tmp_path / f"{k}.db")
        con.execute("PRAGMA journal_mode=OFF")
        insert_cols(con, "TASK", *cols, *[Const(-1, n)] * 7, pages=pages)
        if pages is not None:
            assert pages.state == ("off" if case == "object later" else "on")
            pages.finish(con)
        con.commit()
        _check(con)
        got.append(con.execute("SELECT rowid, *, typeof(connectionId) FROM TASK").fetchall())
        con.close()
    assert got[0] == got[1] and len(got[0]) == n


def test_wide_rows_whose_every_column_varies_in_length(tmp_path: Path) -> None:
    """17 columns (COMPUTE_TASK_INFO's count), each value's length varying in every column (corrupt
    input does this): 7**17 layouts by the plain mixed-radix key, an int32 overflow / an 18.9 GiB
    bincount before _room renumbered the key (fuzz campaign 14, seed 26, cases 187 and 577)."""
    rng = np.random.default_rng(14)
    widths = np.array([0, 1, 100, 2**14, 2**22, 2**30, 2**46, 2**62], np.int64)  # 0 and 1: serial types 8 and 9
    n, m = 3000, 17
    cols = [widths[rng.integers(0, len(widths), n)] * rng.choice([-1, 1], n) for _ in range(m)]
    decl = "(" + ", ".join(f"c{j} INTEGER" for j in range(m)) + ")"

    def make(path: Path) -> sqlite3.Connection:
        con = sqlite3.connect(path)
        con.execute("PRAGMA journal_mode=OFF")
        con.execute(f"CREATE TABLE w {decl}")
        return con

    ref = make(tmp_path / "ref.db")
    ref.executemany(f"INSERT INTO w VALUES ({','.join('?' * m)})", zip(*[c.tolist() for c in cols]))
    ref.commit()
    con = make(tmp_path / "pages.db")
    pages = TablePages("w")
    assert pages.usable(con)
    for lo in range(0, n, 1100):
        got = [serial(c[lo:lo + 1100]) for c in cols]
        assert all(g is not None for g in got)
        pages.append(con, got)  # type: ignore[arg-type]
    pages.finish(con)
    con.commit()
    _check(con)
    q = "SELECT rowid, * FROM w ORDER BY rowid"
    assert con.execute(q).fetchall() == ref.execute(q).fetchall()


def test_layout_key_renumbered_in_the_same_order() -> None:
    """_room keeps the groups and their order (so the pages' bytes do not change where the key
    space was small enough before) and bounds the space."""
    key = np.array([5, 0, 5, 300, 0, 7], np.int64)
    same, mult = db_btree._room(key, 1000, 7)
    assert mult == 1000 and same is key  # room enough: untouched
    key[3] = 3_000_000
    got, mult = db_btree._room(key, 4_000_000, 7)
    assert mult == 4 and got.tolist() == [1, 0, 1, 3, 0, 2]


@pytest.mark.parametrize("direct", ["1", "0"])
def test_pages_written_past_the_page_cache_store_what_sqlite_stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     direct: str) -> None:
    """Bulk pages go out with O_DIRECT (db_pages.DIRECT_BYTES; every write here); the DB file is
    the one buffered writes give, byte for byte, and reads as SQLite's own inserts."""
    from msprof_py import direct_io

    monkeypatch.setattr(db_pages, "DIRECT_BYTES", 4096)
    monkeypatch.setenv(direct_io.DIRECT_ENV, direct)
    calls: list[bool] = []
    real = direct_io.pwrite_blocks

    def spy(*a):  # type: ignore[no-untyped-def]
        calls.append(real(*a))
        return calls[-1]

    monkeypatch.setattr(db_pages, "pwrite_blocks", spy)
    rng = np.random.default_rng(3)
    cols = [rng.integers(0, 1 << 40, 60_000), rng.integers(-5, 5, 60_000), rng.random(60_000)]
    want = _through_sqlite(tmp_path / "a.db", cols)
    con = _through_pages(tmp_path / "b.db", cols, [7_000, 31_000, 59_999])
    _check(con)
    assert _same(_rows(con), want)
    con.close()
    went_direct = list(calls)
    monkeypatch.setenv(direct_io.DIRECT_ENV, "0")
    con = _through_pages(tmp_path / "c.db", cols, [7_000, 31_000, 59_999])
    con.close()
    assert (tmp_path / "b.db").read_bytes() == (tmp_path / "c.db").read_bytes()
    assert went_direct and all(went_direct) == (direct == "1" and _direct_supported(tmp_path)) and not any(calls[len(went_direct):])


"""op_summary's PMU cells rendered in place (export/real3.py) against the per-value definition
(pmu_export.sqlite_real_text, itself checked against SQLite in tests/parse/test_pmu.py)."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings, strategies as st

from msprof_py.export.pmu_export import sqlite_real_text
from msprof_py.export.real3 import round3_thousandths
from msprof_py.export.table_writer import Col, csv_texts

_EDGES = [0.0, -0.0, 0.0005, -0.0005, 0.0004, -0.0004, 12.3455, 2.675, 1.0, 0.5, 0.05, 0.1, 10.0,
          999999999.9994, -999999999.9994, 123.4005, 7e-4, 1 / 3]


@given(st.lists(st.one_of(st.floats(-1e9 + 1, 1e9 - 1, allow_nan=False), st.sampled_from(_EDGES),
                          st.integers(-10**6, 10**6).map(lambda k: k / 1000), st.floats(0, 2)),
                min_size=1, max_size=60))
@settings(max_examples=300, deadline=None)
def test_real3_renders_as_sqlite_real_text(values: list[float]) -> None:
    v = np.array(values, dtype=np.float64)
    k, exact = round3_thousandths(v)
    assert exact.all()
    assert csv_texts(Col.real3(k)) == sqlite_real_text(v).tolist()


def test_values_it_cannot_print_are_left_to_the_caller() -> None:
    v = np.array([1.5, math.nan, math.inf, -math.inf, 1e9, 2e15, -3e12])
    k, exact = round3_thousandths(v)
    assert exact.tolist() == [True, False, False, False, False, False, False]
    assert k[0] == 1500


def test_na_rows() -> None:
    k = np.array([1500, 0, -250, 123456789], np.int64)
    na = np.array([False, True, False, False])
    assert csv_texts(Col.real3(k, na_mask=na)) == ["1.5", "N/A", "-0.25", "123456.789"]
    assert csv_texts(Col.real3(k.astype(np.int32), na_mask=na)) == ["1.5", "N/A", "-0.25", "123456.789"]
    assert csv_texts(Col.real3(np.array([0, 10, 100, 1000, -1000, -1], np.int32))) == [
        "0.0", "0.01", "0.1", "1.0", "-1.0", "-0.001"]


def test_cube_usage_cells_na_zero_and_values() -> None:
    """cube_utilization(%): N/A without PMU, "0" for a zero duration, "%.3f" otherwise (and the
    categorical path for values the in-place rendering cannot print)."""
    from msprof_py.export.pmu_export import _cube_usage, to_string_6

    base = np.array([50.0, 10.0, 33.3333333, -1.0])
    hit = np.array([True, True, False, True, True])
    order = np.arange(6)
    dur = np.array([2000, 0, 1000, 3000, 1000, 1000])  # the 6th row: no PMU (communication)
    fast = _cube_usage(base[:3], hit[:4] & np.array([1, 1, 0, 1], bool), 6, order, dur)
    assert fast.kind == "us" and csv_texts(fast) == ["25.000", "0", "N/A", "11.111", "N/A", "N/A"]
    few = _cube_usage(base, hit, 6, order, dur)  # a negative value: printf's text, a fixed text of its own
    assert few.kind == "us" and csv_texts(few) == ["25.000", "0", "N/A", "11.111", "-1.000", "N/A"]
    many = -np.arange(1, 301) / 7  # more distinct such texts than fixed texts fit: texts per distinct value
    slow = _cube_usage(many, np.ones(300, bool), 300, np.arange(300), np.full(300, 1000))
    assert slow.kind == "text" and csv_texts(slow) == ["%.3f" % v for v in to_string_6(many)]


def _chunked_texts(col: Col, rows: int) -> list[str]:
    """The CSV cells of ``col`` rendered ``rows`` rows at a time (as write_table renders)."""
    from msprof_py.export.rows import RowBuilder
    from msprof_py.export.table_writer import _add_cell

    rb = RowBuilder(len(col.values))
    _add_cell(rb, col, json_mode=False)
    rb.lit("\n")
    return b"".join(rb.chunks(rows, workers=1)).decode().split("\n")[:-1]


@given(st.lists(st.tuples(st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from(_EDGES),
                                    st.integers(-10**6, 10**6).map(lambda k: k / 1000 + 0.0005)),
                          st.integers(0, 2**40), st.booleans()), min_size=1, max_size=40),
       st.integers(0, 3), st.randoms(use_true_random=False), st.integers(1, 7))
@settings(max_examples=200, deadline=None)
def test_op_summary_pmu_columns_made_per_chunk(rows: list, n_comm: int, rnd, chunk: int) -> None:
    """op_summary's metric and cycle columns, made a chunk of rows at a time from the pmu table
    (values next to a tie that SQLite rounds otherwise included), against the per-value texts:
    ``N/A`` for the rows without a PMU row and the communication rows."""
    from types import SimpleNamespace

    import pandas as pd

    from msprof_py.export.pmu_export import op_summary_columns

    n = len(rows)
    tasks = pd.DataFrame({"stream_id": np.ones(n, np.int64), "task_id": np.arange(n), "context_id": np.zeros(n, np.int64),
                          "start_ns": np.arange(n) * 10})
    has = np.array([r[2] for r in rows])
    prow = np.flatnonzero(has)
    rnd.shuffle(prow := prow.tolist())  # the pmu table's rows in another order than the tasks'
    prow = np.array(prow, np.int64)
    p = pd.DataFrame({"device_id": np.zeros(len(prow), np.int64), "stream_id": np.ones(len(prow), np.int64),
                      "task_id": prow, "context_id": np.zeros(len(prow), np.int64), "start_ns": prow * 10,
                      "aic_total_cycles": np.array([rows[i][1] for i in prow], np.int64).reshape(-1),
                      "aic_mac_ratio": np.array([rows[i][0] for i in prow], np.float64).reshape(-1)})
    order = np.arange(n + n_comm)
    rnd.shuffle(order_list := order.tolist())
    order = np.array(order_list, np.int64)
    h, cols = op_summary_columns(SimpleNamespace(pmu=p), 0, tasks, n_comm, order, np.ones(n + n_comm, np.int64))
    if not len(prow):
        assert h == [] and cols == []
        return
    assert h == ["aic_total_cycles", "aic_mac_ratio"]
    want_cyc = [str(rows[j][1]) if j < n and has[j] else "N/A" for j in order.tolist()]
    want_mac = [sqlite_real_text(np.array([rows[j][0]]))[0] if j < n and has[j] else "N/A" for j in order.tolist()]
    assert _chunked_texts(cols[0], chunk) == csv_texts(cols[0]) == want_cyc
    assert _chunked_texts(cols[1], chunk) == csv_texts(cols[1]) == want_mac


def _round3_before(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """round3_thousandths as it was written before its one-rint form (2026-11-25), with the
    positions op_summary then took as fixes (``round3_plain(v) != k``)."""
    import sqlite3

    from msprof_py.export.real3 import round3_plain

    v = np.asarray(values, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        r = np.round(v, 3) + 0.0
        exact = np.abs(r) < 1e9
        k = np.zeros(len(v), np.int64)
        k[exact] = np.rint(r[exact] * 1000.0).astype(np.int64)
        scaled = v * 1000.0
        off = np.abs(scaled - np.floor(scaled) - 0.5)
        top = float(np.abs(scaled[exact]).max(initial=0.0))
        near = np.flatnonzero(exact & (off <= 16 * np.spacing(top) + 1e-9))
        if len(near):
            near = near[off[near] <= 16 * np.spacing(np.abs(scaled[near])) + 1e-9]
    con = sqlite3.connect(":memory:")
    for i in near.tolist():
        t = con.execute("SELECT CAST(ROUND(?, 3) AS TEXT)", (float(v[i]),)).fetchone()[0]
        y = float(t) * 1000.0
        if abs(y) < 1e12 and abs(y - round(y)) < 1e-6:
            k[i] = int(round(y))
        else:
            exact[i] = False
    con.close()
    with np.errstate(invalid="ignore", over="ignore"):
        fixes = np.flatnonzero(round3_plain(v) != k)
    return k, exact, fixes


@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(-1e12, 1e12),
                          st.sampled_from(_EDGES + [math.nan, math.inf, 1e9, 999999999.9995, 0.0015, 1.0005,
                                                    -2.5e-4, 4503599627370495.5]),
                          st.integers(-10**9, 10**9).map(lambda k: (k + 0.5) / 1000),
                          st.integers(-10**6, 10**6).map(lambda k: k / 1000)),
                min_size=1, max_size=80))
@settings(max_examples=400, deadline=None)
def test_one_rint_form_equals_the_one_before(values: list[float]) -> None:
    """The same ``k``, ``exact`` and fixes as the formulation before (ties, NaN, inf, huge values
    and -0.0 included); the fixes where every value is exact (the only case op_summary uses them)."""
    v = np.array(values, dtype=np.float64)
    k, exact, fixes = round3_thousandths(v, fixes=True)
    k0, exact0, fixes0 = _round3_before(v)
    assert exact.tolist() == exact0.tolist()
    assert k[exact].tolist() == k0[exact0].tolist() and k[~exact].tolist() == k0[~exact0].tolist()
    if exact.all():
        assert fixes.tolist() == fixes0.tolist()
    k2, exact2 = round3_thousandths(v)
    assert k2.tolist() == k.tolist() and exact2.tolist() == exact.tolist()


def test_ties_are_fixed_by_sqlite() -> None:
    """Values next to a tie that numpy's rint rounds otherwise than SQLite: in the fixes."""
    v = np.array([(k + 0.5) / 1000 for k in range(-3000, 3000)], np.float64)
    k, exact, fixes = round3_thousandths(v, fixes=True)
    k0, exact0, fixes0 = _round3_before(v)
    assert exact.all() and k.tolist() == k0.tolist() and fixes.tolist() == fixes0.tolist() and len(fixes)


@given(st.integers(1, 60), st.integers(1, 300), st.data())
@settings(max_examples=200, deadline=None)
def test_fixes_placed_by_final_row_equal_a_search_per_row(n_pmu: int, n_rows: int, data) -> None:
    """op_summary's lazy PMU columns: the fixed numbers found per chunk from the final rows
    (_place_fixes) equal the search per row and pmu row it replaced, for any chunking, rows
    without a pmu row (-1) and pmu rows shown by several rows."""
    from msprof_py.export.pmu_export import _lazy, _place_fixes
    from msprof_py.export.real3 import round3_plain

    at = np.array(data.draw(st.lists(st.integers(-1, n_pmu - 1), min_size=n_rows, max_size=n_rows)), np.int32)
    values = np.array(data.draw(st.lists(st.floats(-1e6, 1e6), min_size=n_pmu, max_size=n_pmu)))
    cols = []
    for _ in range(data.draw(st.integers(1, 3))):
        fixed = sorted(set(data.draw(st.lists(st.integers(0, n_pmu - 1), max_size=8))))
        if fixed:
            cols.append(np.stack([np.array(fixed, np.int64),
                                  np.array(data.draw(st.lists(st.integers(-10**9, 10**9), min_size=len(fixed),
                                                              max_size=len(fixed))), np.int64)]))
    holders = [{} for _ in cols]
    _place_fixes(at, n_pmu, list(zip(cols, holders)))
    cuts = sorted(set(data.draw(st.lists(st.integers(0, n_rows), max_size=5))) | {0, n_rows})
    for f, holder in zip(cols, holders):
        lazy = _lazy(values, at, round3_plain, np.zeros(1, np.int64), holder)
        got = np.concatenate([lazy[a:b] for a, b in zip(cuts, cuts[1:])])
        pos = at.astype(np.int64)
        want = np.zeros(n_rows, np.int64)
        some = pos >= 0
        want[some] = round3_plain(values[pos[some]])
        j = np.minimum(np.searchsorted(f[0], pos), f.shape[1] - 1)  # (the search per row it replaced)
        hit = f[0][j] == pos
        want[hit] = f[1][j[hit]]
        assert got.tolist() == want.tolist()

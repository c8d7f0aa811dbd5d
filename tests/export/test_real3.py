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
    from msprof_py.export.pmu_export import _cube_usage

    base = np.array([50.0, 10.0, 33.3333333, -1.0])
    hit = np.array([True, True, False, True, True])
    order = np.arange(6)
    dur = np.array([2000, 0, 1000, 3000, 1000, 1000])  # the 6th row: no PMU (communication)
    fast = _cube_usage(base[:3], hit[:4] & np.array([1, 1, 0, 1], bool), 6, order, dur)
    assert fast.kind == "us" and csv_texts(fast) == ["25.000", "0", "N/A", "11.111", "N/A", "N/A"]
    slow = _cube_usage(base, hit, 6, order, dur)  # a negative value: printf's texts
    assert slow.kind == "text" and csv_texts(slow) == ["25.000", "0", "N/A", "11.111", "-1.000", "N/A"]

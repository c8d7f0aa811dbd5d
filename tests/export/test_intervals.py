"""Overlap Analysis's interval sets: the complement of a busy set inside one span (Free) against
the general difference (every bound sorted, elementary segments merged)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from msprof_py.export import intervals


def _difference_by_segments(a: intervals.Intervals, b: intervals.Intervals) -> intervals.Intervals:
    bounds = intervals._sorted_unique(np.concatenate([a[0], a[1], b[0], b[1]]))
    if len(bounds) < 2:
        return a[0][:0], a[1][:0]
    mids = bounds[:-1]
    return intervals._from_mask(bounds, intervals._covered(a, mids) & ~intervals._covered(b, mids))


raw = st.lists(st.tuples(st.integers(-50, 400), st.integers(0, 60)), max_size=40)


@given(raw, st.integers(-100, 300), st.integers(1, 400))
@settings(max_examples=400, deadline=None)
def test_complement_in_one_span_equals_the_general_difference(rows: list, lo: int, width: int) -> None:
    s = np.array([r[0] for r in rows], np.int64)
    e = s + np.array([r[1] for r in rows], np.int64)  # zero-length intervals too
    busy = intervals.union(s, e)
    span = (np.array([lo], np.int64), np.array([lo + width], np.int64))
    got, want = intervals.difference(span, busy), _difference_by_segments(span, busy)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


@given(raw, raw)
@settings(max_examples=400, deadline=None)
def test_difference_of_two_unions_equals_the_general_difference(rows_a: list, rows_b: list) -> None:
    sets = []
    for rows in (rows_a, rows_b):
        s = np.array([r[0] for r in rows], np.int64)
        sets.append(intervals.union(s, s + np.array([r[1] for r in rows], np.int64)))
    got, want = intervals.difference(*sets), _difference_by_segments(*sets)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


@given(raw)
@settings(max_examples=200, deadline=None)
def test_union_of_rows_in_start_order_or_not(rows: list) -> None:
    s = np.array([r[0] for r in rows], np.int64)
    e = s + np.array([r[1] for r in rows], np.int64)
    o = np.argsort(s, kind="stable")
    a, b = intervals.union(s, e), intervals.union(s[o], e[o])
    assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
    covered = {t for x, y in zip(s.tolist(), e.tolist()) for t in range(x, y)}
    assert covered == {t for x, y in zip(*a) for t in range(int(x), int(y))}


def _union_before(start: np.ndarray, end: np.ndarray) -> intervals.Intervals:
    """union as it was (position arrays of each run's first and last interval)."""
    if len(start) == 0:
        return start[:0], end[:0]
    o = np.argsort(start, kind="stable")
    s, e = start[o], end[o]
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], reach[last]


@given(raw, raw, st.booleans())
@settings(max_examples=400, deadline=None)
def test_union_of_two_sets_equals_the_union_of_both(rows_a: list, rows_b: list, unite: bool) -> None:
    """union (masks) and union_of (b inserted into a, no sort) against a sort of every interval;
    ``unite``: the sets are unions (disjoint), else raw intervals (overlapping, unsorted too)."""
    sets = []
    for rows in (rows_a, rows_b):
        s = np.array([r[0] for r in rows], np.int64)
        e = s + np.array([r[1] for r in rows], np.int64)
        sets.append(intervals.union(s, e) if unite else (s, e))
    (a_s, a_e), (b_s, b_e) = sets
    want = _union_before(np.concatenate([a_s, b_s]), np.concatenate([a_e, b_e]))
    for got in (intervals.union_of(sets[0], sets[1]),
                intervals.union(np.concatenate([a_s, b_s]), np.concatenate([a_e, b_e]))):
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()

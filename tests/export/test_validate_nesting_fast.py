"""The nesting check's fast paths against the formulation they replace: one sort when no two
slices start together, the per-group running end without a pandas groupby (the result compared
as doubles, as before), on random slices near epoch-ns times where doubles round."""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from msprof_py.export.validate import _order, _roots, _roots_by_groupby, nesting


def _order_before(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    idx = np.argsort(-end, kind="stable")
    idx = idx[np.argsort(start[idx], kind="stable")]
    th = thread[idx]
    th = th.astype(np.uint16) if th.max(initial=0) < 65536 else th
    return idx[np.argsort(th, kind="stable")]


slices = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(0, 3000), st.integers(-3, 1500)),
                  min_size=1, max_size=120)
bases = st.sampled_from([0, 1_700_000_000_000_000_000, -(10**12), 2**61 - 10_000])


@given(slices, bases, st.integers(1, 300))
@settings(max_examples=300, deadline=None)
def test_order_roots_and_nesting_as_before(rows: list, base: int, scale: int) -> None:
    pid, tid, start, dur = (np.array(c, np.int64) for c in zip(*rows))
    start = base + start * scale  # scale: steps below and above the doubles' 256 ns grid
    end = start + dur * scale
    thread = pd.factorize(pid * 10 + tid)[0].astype(np.int64)
    assert _order(thread, start, end).tolist() == _order_before(thread, start, end).tolist()
    group = np.sort(thread)
    assert _roots(start, end, group).tolist() == _roots_by_groupby(start, end, group).tolist()
    new = nesting(pid, tid, start, end)
    import msprof_py.export.validate as v
    fast = v._order, v._roots
    v._order, v._roots = _order_before, _roots_by_groupby
    try:
        old = nesting(pid, tid, start, end)
    finally:
        v._order, v._roots = fast
    for f in ("parent", "prev", "bad", "root", "bad_round", "bad_thread_first"):
        assert getattr(new, f).tolist() == getattr(old, f).tolist(), f


def test_roots_compare_as_doubles() -> None:
    """An earlier slice ending 1 ns after a start near 1.7e18 ns counts as ended (doubles cannot
    tell them apart): the groupby formulation did so and the fast one keeps it."""
    s = np.array([1_700_000_000_000_000_000, 1_700_000_000_000_000_100], np.int64)
    e = np.array([1_700_000_000_000_000_101, 1_700_000_000_000_000_200], np.int64)
    g = np.zeros(2, np.int64)
    assert _roots(s, e, g).tolist() == _roots_by_groupby(s, e, g).tolist() == [True, True]

"""The vectorised per-stream FIFO scheduler against a one-task-at-a-time reference."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from msprof_py.runtime.scheduler import naive_schedule, plan_segments, schedule


@st.composite
def templates(draw):
    n = draw(st.integers(1, 24))
    rows = draw(st.integers(1, 4))
    stream = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    deps: dict[int, list[int]] = {}
    for i in range(1, n):
        if draw(st.booleans()) and draw(st.booleans()):
            deps[i] = sorted(set(draw(st.lists(st.integers(0, i - 1), min_size=1, max_size=2))))
    barriers = {i for i in range(n) if draw(st.integers(0, 5)) == 0}
    submit = np.array(draw(st.lists(st.integers(0, 5000), min_size=n * rows, max_size=n * rows)),
                      np.int64).reshape(rows, n)
    submit = np.sort(submit, axis=1)  # the host submits in launch order
    dur = np.array(draw(st.lists(st.integers(1, 3000), min_size=n * rows, max_size=n * rows)),
                   np.int64).reshape(rows, n)
    gap = draw(st.integers(0, 900))
    return stream, deps, barriers, submit, dur, gap


@settings(max_examples=150, deadline=None)
@given(templates())
def test_vectorised_schedule_equals_the_naive_one(t) -> None:
    stream, deps, barriers, submit, dur, gap = t
    segs = plan_segments(stream, deps, barriers)
    got = schedule(submit, dur, segs, gap)
    want = naive_schedule(submit, dur, stream, deps, barriers, gap)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@settings(max_examples=60, deadline=None)
@given(templates())
def test_fifo_and_dependencies_hold(t) -> None:
    stream, deps, barriers, submit, dur, gap = t
    start, end = schedule(submit, dur, plan_segments(stream, deps, barriers), gap)
    assert (start >= submit).all()
    for s in np.unique(stream):
        idx = np.flatnonzero(stream == s)
        assert (start[:, idx[1:]] >= end[:, idx[:-1]] + gap).all()
    for i, ds in deps.items():
        for d in ds:
            assert (start[:, i] >= end[:, d]).all()
    for b in barriers:  # a barrier ends together on every row (the last arrival + its own duration)
        assert (end[:, b] == start[:, b].max() + dur[:, b]).all()


@settings(max_examples=100, deadline=None)
@given(templates(), st.data())
def test_grouped_barriers_equal_the_naive_ones(t, data) -> None:
    """Barriers over communicators (a group number per row) wait only for their own group."""
    stream, deps, barriers, submit, dur, gap = t
    rows = submit.shape[0]
    groups = {b: np.array(data.draw(st.lists(st.integers(0, 2), min_size=rows, max_size=rows)), np.int64)
              for b in barriers}
    got = schedule(submit, dur, plan_segments(stream, deps, barriers), gap, barrier_groups=groups)
    want = naive_schedule(submit, dur, stream, deps, barriers, gap, barrier_groups=groups)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])

"""The nesting check's fast paths against the formulation they replace: one sort when no two
slices start together, the per-group running end without a pandas groupby (the result compared
as doubles, as before), on random slices near epoch-ns times where doubles round."""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from msprof_py.export.validate import Nesting, _order, _roots, _roots_by_groupby, nesting


def _order_before(thread: np.ndarray | None, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    if thread is None:  # (one thread)
        thread = np.zeros(len(start), np.int64)
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


# the general walk as it was before the one-thread fast paths (sorted rows, flat rows)
def _nesting_before(pid: np.ndarray, tid: np.ndarray, start: np.ndarray, end: np.ndarray) -> Nesting:
    """One pass of the nesting rounds (module doc) giving both what the overlap check and the
    viewer fitting need, so a timeline is sorted and walked once."""
    n = len(start)
    parent = np.full(n, -1, np.int64)
    prev = np.full(n, -1, np.int64)
    bad: list[np.ndarray] = []
    roots: list[np.ndarray] = []
    rounds: list[np.ndarray] = []
    z = np.zeros(0, np.int64)
    first = z
    if n:
        tcode = pd.factorize(tid)[0].astype(np.int64)
        if pid.min() == pid.max():  # one process: the tid codes are the thread codes (same order)
            thread = tcode
        else:
            pcode = pd.factorize(pid)[0].astype(np.int64)
            thread = pd.factorize(pcode * (int(tcode.max(initial=0)) + 1) + tcode)[0].astype(np.int64)
            del pcode
        del tcode
        idx = _order(thread, start, end)
        s, e, group = start[idx], end[idx], thread[idx]
        depth = 0
        is_slice_group = np.zeros(len(idx), bool)  # round 1: groups are threads, not slices
        while len(idx):
            # roots: after the end of the latest-ending earlier slice of the same group
            root = _roots(s, e, group)
            root_pos = np.maximum.accumulate(np.where(root, np.arange(len(idx)), 0))
            r = np.flatnonzero(root)
            parent[idx[r]] = np.where(is_slice_group[r], group[r], -1)
            same = np.zeros(len(r), bool)
            same[1:] = group[r[1:]] == group[r[:-1]]
            prev[idx[r[1:]][same[1:]]] = idx[r[:-1]][same[1:]]
            overlap = ~root & (e > e[root_pos])
            if overlap.any():
                bad.append(idx[overlap])
                roots.append(idx[root_pos][overlap])
                rounds.append(np.full(int(overlap.sum()), depth, np.int64))
            keep = ~root & ~overlap  # followers of root r form group r (contiguous, still in order)
            idx, s, e, group = idx[keep], s[keep], e[keep], idx[root_pos][keep]
            is_slice_group = np.ones(len(idx), bool)
            depth += 1
        if bad:  # thread codes are in order of first appearance: the first slice of each
            first = np.unique(thread, return_index=True)[1][thread[np.concatenate(bad)]]
    cat = (lambda parts: np.concatenate(parts) if parts else z)
    return Nesting(parent, prev, cat(bad), cat(roots), cat(rounds), first)



one_thread = st.lists(st.tuples(st.integers(0, 2000), st.integers(-2, 1500)), min_size=1, max_size=150)


@given(one_thread, bases, st.integers(1, 300), st.sampled_from(["sorted", "strict", "flat", "any"]))
@settings(max_examples=300, deadline=None)
def test_one_thread_fast_paths_as_the_general_walk(rows: list, base: int, scale: int, shape: str) -> None:
    """One thread whose rows start in increasing order (no sort, no copies) and flat ones (every
    slice a root of round 1): the same nesting as the general walk, also where doubles round."""
    gap, dur = (np.array(c, np.int64) for c in zip(*rows))
    if shape == "any":
        start = gap
    elif shape == "sorted":  # ties allowed
        start = np.cumsum(gap // 3)
    else:
        start = np.cumsum(gap + 1)  # strictly increasing
    if shape == "flat":  # each slice ends before (or as) the next starts
        room = np.append(np.diff(start), 10**6)
        dur = np.minimum(np.abs(dur), room)
    start = base + start * scale
    end = start + dur * scale
    pid, tid = np.full(len(start), 7, np.int64), np.full(len(start), 3, np.int64)
    new, old = nesting(pid, tid, start, end), _nesting_before(pid, tid, start, end)
    for f in ("parent", "prev", "bad", "root", "bad_round", "bad_thread_first"):
        assert getattr(new, f).tolist() == getattr(old, f).tolist(), f


def _viewer_durations_before(start: np.ndarray, dur: np.ndarray, nest: Nesting, slack_ns: int = 256,
                             max_shift_ns: int = 1024) -> tuple[np.ndarray, int]:
    from msprof_py.export.viewer_time import viewer_ns
    out = dur.copy()
    parent, prev = nest.parent, nest.prev
    sv = viewer_ns(start)
    changed = np.zeros(len(out), bool)
    for _ in range(4):
        limit = np.full(len(out), np.iinfo(np.int64).max, np.int64)
        has_p = parent >= 0
        limit[has_p] = sv[parent[has_p]] + out[parent[has_p]] - slack_ns
        nxt = np.full(len(out), -1, np.int64)
        has_prev = prev >= 0
        nxt[prev[has_prev]] = np.flatnonzero(has_prev)
        has_n = nxt >= 0
        limit[has_n] = np.minimum(limit[has_n], sv[nxt[has_n]] - slack_ns)
        end_v = sv + out
        fix = (end_v > limit) & (end_v - limit <= max_shift_ns) & (limit - sv >= 0)
        out[fix] = limit[fix] - sv[fix]
        if not fix.any():
            break
        changed |= fix
    return out, int(changed.sum())


@given(slices, bases, st.integers(1, 300))
@settings(max_examples=300, deadline=None)
def test_viewer_fitting_as_before(rows: list, base: int, scale: int) -> None:
    """The fitting on the nesting's links as positions (not masks) fits the same durations."""
    from msprof_py.export.viewer_time import viewer_durations
    pid, tid, start, dur = (np.array(c, np.int64) for c in zip(*rows))
    start = base + start * scale
    dur = dur * scale
    nest = nesting(pid, tid, start, start + dur)
    got, n = viewer_durations(pid, tid, start, dur, nest=nest)
    want, m = _viewer_durations_before(start, dur, nest)
    assert got.tolist() == want.tolist() and n == m

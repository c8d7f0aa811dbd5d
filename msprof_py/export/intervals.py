"""Interval-set helpers (sorted, disjoint ``[start, end)`` int64 arrays) for Overlap Analysis."""
from __future__ import annotations

import numpy as np

Intervals = tuple[np.ndarray, np.ndarray]


def union(start: np.ndarray, end: np.ndarray) -> Intervals:
    """Merge possibly overlapping intervals into sorted disjoint ones."""
    start = np.asarray(start, np.int64)
    end = np.asarray(end, np.int64)
    if len(start) == 0:
        return start[:0], end[:0]
    if (start[1:] >= start[:-1]).all():  # in start order already (a device's tasks): no sort
        s, e = start, end
    else:
        o = np.argsort(start, kind="stable")
        s, e = start[o], end[o]
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > reach[:-1]
    last = np.empty(len(s), bool)  # the last interval of each merged run (masks: no position arrays)
    last[:-1] = new[1:]
    last[-1] = True
    return s[new], reach[last]


def union_of(a: Intervals, b: Intervals) -> Intervals:
    """:func:`union` of two sets each sorted by start (e.g. two results of :func:`union`): ``b``
    inserted into ``a`` where a stable sort of both would put it (after ``a``'s equal starts),
    so no sort and no gathered copies of both (Overlap Analysis's busy time: every compute
    interval and a few HCCL ops)."""
    sorted_ = all(len(x) < 2 or bool((x[1:] >= x[:-1]).all()) for x in (a[0], b[0]))
    if not sorted_:
        return union(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))
    at = np.searchsorted(np.asarray(a[0], np.int64), np.asarray(b[0], np.int64), side="right")
    return union(np.insert(np.asarray(a[0], np.int64), at, b[0]), np.insert(np.asarray(a[1], np.int64), at, b[1]))


def _sorted_unique(v: np.ndarray) -> np.ndarray:
    v = np.sort(v)
    keep = np.ones(len(v), bool)
    keep[1:] = v[1:] != v[:-1]
    return v[keep]


def _covered(iv: Intervals, points: np.ndarray) -> np.ndarray:
    s, e = iv
    i = np.searchsorted(s, points, side="right") - 1
    ok = i >= 0
    out = np.zeros(len(points), bool)
    out[ok] = e[i[ok]] > points[ok]
    return out


def _from_mask(bounds: np.ndarray, mask: np.ndarray) -> Intervals:
    """Elementary segments ``[bounds[k], bounds[k+1])`` selected by ``mask`` -> merged intervals."""
    s, e = bounds[:-1][mask], bounds[1:][mask]
    if len(s) == 0:
        return s, e
    new = np.ones(len(s), bool)
    new[1:] = s[1:] != e[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], e[last]


def difference(a: Intervals, b: Intervals) -> Intervals:
    """Parts of ``a`` not covered by ``b``."""
    if len(a[0]) == 1 and a[1][0] > a[0][0] and _disjoint(b):
        return _complement(int(a[0][0]), int(a[1][0]), b)
    if _disjoint(a) and _disjoint(b):
        return _gaps_within(a, b)
    bounds = _sorted_unique(np.concatenate([a[0], a[1], b[0], b[1]]))
    if len(bounds) < 2:
        return a[0][:0], a[1][:0]
    mids = bounds[:-1]
    return _from_mask(bounds, _covered(a, mids) & ~_covered(b, mids))


def gaps(iv: Intervals) -> Intervals:
    """Holes between consecutive intervals of a disjoint sorted set."""
    s, e = iv
    if len(s) < 2:
        return s[:0], e[:0]
    keep = s[1:] > e[:-1]
    return e[:-1][keep], s[1:][keep]


def _disjoint(iv: Intervals) -> bool:
    """Sorted, with a positive gap between neighbours (what :func:`union` returns)."""
    s, e = iv
    return bool((e >= s).all() and (s[1:] > e[:-1]).all())


def _complement(lo: int, hi: int, b: Intervals) -> Intervals:
    """``[lo, hi)`` minus the sorted disjoint intervals ``b``: the gaps between them, clipped
    (no sort of every bound: Overlap Analysis's Free is the device's span minus its busy time).
    Empty intervals of ``b`` cover nothing and are left out first."""
    s, e = b
    keep = (e > s) & (e > lo) & (s < hi)
    if not keep.all():
        s, e = s[keep], e[keep]
    del keep
    # [lo, e_0), [e_0, s_1) ... written clipped into the two result columns (no other copies)
    starts = np.empty(len(s) + 1, np.int64)
    ends = np.empty(len(s) + 1, np.int64)
    starts[0], ends[-1] = lo, hi
    np.minimum(e, hi, out=starts[1:])
    np.maximum(s, lo, out=ends[:-1])
    gap = ends > starts
    if gap.all():
        return starts, ends
    return starts[gap], ends[gap]


def _gaps_within(a: Intervals, b: Intervals) -> Intervals:
    """``a`` minus ``b``, both sorted with positive gaps (:func:`union`'s output): per interval of
    ``a`` the gaps between the intervals of ``b`` overlapping it (found by searchsorted), clipped
    to it; no sort of every bound (Communication(Not Overlapped): a few HCCL ops minus every
    compute interval).  Empty intervals of either cover nothing and are left out first."""
    (lo, hi), (bs, be) = (np.asarray(x, np.int64) for x in a), (np.asarray(x, np.int64) for x in b)
    full = hi > lo
    lo, hi = lo[full], hi[full]
    full = be > bs
    bs, be = bs[full], be[full]
    i0 = np.searchsorted(be, lo, side="right")  # the first b ending after the interval starts
    m = np.maximum(np.searchsorted(bs, hi, side="left") - i0, 0)  # b intervals overlapping it
    # pieces per interval of a: [lo, s_i0), [e_i0, s_i0+1), ..., [e_last, hi)
    first = np.cumsum(m + 1) - (m + 1)  # where each interval's pieces begin
    total = int(m.sum()) + len(lo)
    starts = np.empty(total, np.int64)
    ends = np.empty(total, np.int64)
    starts[first], ends[first + m] = lo, hi
    inner = np.ones(total, bool)
    inner[first] = False  # pieces 1..m start at a b end
    j = np.repeat(i0 - np.cumsum(m) + m, m) + np.arange(int(m.sum()))  # the b intervals, in order
    starts[inner] = be[j]
    last = np.zeros(total, bool)
    last[first + m] = True
    ends[~last] = bs[j]  # pieces 0..m-1 end at a b start
    starts, ends = np.maximum(starts, np.repeat(lo, m + 1)), np.minimum(ends, np.repeat(hi, m + 1))
    gap = ends > starts
    return starts[gap], ends[gap]

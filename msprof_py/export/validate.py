"""Checks a timeline must pass before it is written, all vectorised.

* Slices on one (pid, tid) nest and never partly overlap.  Perfetto drops a partly overlapping
  ``X`` slice (``stats.slice_drop_overlapping_complete_event``) and catapult draws it wrongly.
* Every flow has both ends (one ``s`` and one ``f`` per id).
* Ids stay below 2**53, so viewers that read JSON numbers as doubles keep them exact.

Problems are reported (which thread, which ts), never silently fixed.  The durations a viewer
needs to see exact nesting are :mod:`msprof_py.export.viewer_time`'s.

Nesting check, one depth level per round: slices are ordered per thread by (start asc, end
desc).  In a group (first a whole thread, later the children of one slice) a slice is a *root*
when it starts at or after every earlier slice of the group has ended; every other slice must
end no later than its root, otherwise the two partly overlap.  Roots are then removed and their
followers form the next round's groups.  Rounds = the deepest nesting (a handful), each a few
numpy/pandas passes, so millions of slices take well under a second.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

MAX_SAFE_ID = 2**53
VIEWER_BLOCK = 1 << 16  # values per block of _reached's double comparisons
NEST_BLOCK = 1 << 16  # slices per block of the nesting walk (about: blocks end before a root)


def _order(thread: np.ndarray | None, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Indices sorted by (thread, start asc, end desc), ties in input order, with stable sorts,
    cheap on time-ordered data.  The end only orders slices that start together: when no two
    do (the usual case) one sort by start is the whole (start, end) order; one thread (``thread``
    None, or one code) needs no third sort."""
    idx = np.argsort(start, kind="stable")
    if _has_ties(start, idx):
        idx = np.argsort(-end, kind="stable")
        idx = idx[np.argsort(start[idx], kind="stable")]
    if thread is None or len(idx) == 0:
        return idx
    th = thread[idx]
    if th.min() == th.max():
        return idx
    th = th.astype(np.uint16) if th.max(initial=0) < 65536 else th
    return idx[np.argsort(th, kind="stable")]


def _has_ties(start: np.ndarray, idx: np.ndarray) -> bool:
    """Whether two slices start together (``idx`` orders ``start``), read in blocks: the sorted
    starts were a copy of the whole column."""
    for a in range(0, len(idx) - 1, NEST_BLOCK):
        s = start[idx[a:a + NEST_BLOCK + 1]]
        if (s[1:] == s[:-1]).any():
            return True
    return False


def _roots(s: np.ndarray, e: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Which slices start at or after every earlier slice of their group has ended (groups are
    contiguous runs of ``group``; the first of each is a root).  The running end per group is a
    cumulative max over values lifted so that every group lies above the previous ones; the
    comparison is made in doubles, as the groupby formulation (:func:`_roots_by_groupby`) made
    it (a shifted int64 column is float64 in pandas), so the result is the same bit for bit."""
    n = len(e)
    first = np.ones(n, bool)
    first[1:] = group[1:] != group[:-1]
    starts = np.flatnonzero(first)
    reach = np.empty(n, np.int64)  # the running max before each slice (lifted: see below)
    reach[0] = 0
    if len(starts) == 1:  # one group: its running max as it is (nothing to lift)
        np.maximum.accumulate(e[:-1], out=reach[1:])
        return _reached(first, reach, s)
    lo, hi = np.minimum.reduceat(e, starts), np.maximum.reduceat(e, starts)
    if int(lo.min()) < -2**61 or int(hi.max()) >= 2**61:
        return _roots_by_groupby(s, e, group)
    span = int((hi - lo).max()) + 1
    if span * len(starts) >= 2**62:
        return _roots_by_groupby(s, e, group)
    base = np.repeat(lo - np.arange(len(starts), dtype=np.int64) * span, np.diff(np.append(starts, n)))
    np.subtract(e[:-1], base[:-1], out=reach[1:])  # (in place: no temporary of n values)
    np.maximum.accumulate(reach[1:], out=reach[1:])
    reach += base
    del base
    return _reached(first, reach, s)


def _reached(first: np.ndarray, reach: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``first | (reach <= s)`` compared as doubles, in blocks (the double copies of a whole
    timeline's columns were 8 bytes a slice each at the check's peak); ``first`` is reused."""
    for a in range(0, len(s), VIEWER_BLOCK):
        b = a + VIEWER_BLOCK
        first[a:b] |= reach[a:b].astype(np.float64) <= s[a:b].astype(np.float64)
    return first


def _roots_by_groupby(s: np.ndarray, e: np.ndarray, group: np.ndarray) -> np.ndarray:
    prev_reach = pd.Series(e).groupby(group, sort=False).cummax().groupby(group, sort=False).shift(1)
    return (prev_reach.isna() | (prev_reach <= s)).to_numpy()


def index_dtype(n: int) -> type:
    """Positions among ``n`` slices (and -1): int32 below 2**31 slices (the check's index arrays
    are half the bytes), else int64."""
    return np.int32 if n < 2**31 - 1 else np.int64


@dataclass
class Nesting:
    """The nesting of a set of slices (indices into the arrays given to :func:`nesting`):
    ``parent`` / ``prev`` (previous sibling) per slice, -1 where there is none (and for slices
    that partly overlap), and the partly overlapping pairs (``bad[k]`` overlaps ``root[k]``) in
    the order the rounds found them."""

    parent: np.ndarray
    prev: np.ndarray
    bad: np.ndarray
    root: np.ndarray
    bad_round: np.ndarray  # the round (nesting depth) that found each pair
    bad_thread_first: np.ndarray  # the index of the first slice on each bad slice's thread


def nesting(pid: np.ndarray, tid: np.ndarray, start: np.ndarray, end: np.ndarray) -> Nesting:
    """One pass of the nesting rounds (module doc) giving both what the overlap check and the
    viewer fitting need, so a timeline is sorted and walked once.

    Cheap where the rows prove their order: one thread (no thread codes) whose slices start in
    strictly increasing order is its own (start, end desc) order (no sort, no reordered
    copies); when each of them also starts after every earlier one ended (a stream's tasks, the
    Overlap Analysis intervals) every slice is a root of round 1 and the walk ends there.

    Over ``NEST_BLOCK`` slices the walk goes block by block (:func:`_walk_blocks`): the rounds'
    copies and masks are a block's, not the timeline's; a block that finds a partly overlapping
    slice sends the whole set to the walk of all slices at once, which reports it."""
    n = len(start)
    it = index_dtype(n)
    parent = np.full(n, -1, it)
    prev = np.full(n, -1, it)
    z = np.zeros(0, np.int64)
    if not n:
        return Nesting(parent, prev, z, z, z, z)
    thread = _thread_codes(pid, tid, it)  # None: one thread
    in_order = thread is None and bool((start[1:] > start[:-1]).all())
    idx = None if in_order else _order(thread, start, end)
    if n > NEST_BLOCK:
        if _walk_blocks(idx, thread, start, end, parent, prev):
            return Nesting(parent, prev, z, z, z, z)
        parent.fill(-1)
        prev.fill(-1)
    if thread is None:
        thread = np.zeros(n, it)
    root = None
    if idx is None:
        idx, s, e, group = np.arange(n, dtype=it), start, end, thread  # already in order: no copies
        root = _roots(s, e, group)
        if root.all():  # nothing nests: each slice's previous sibling is the one before it
            prev[1:] = idx[:-1]
            return Nesting(parent, prev, z, z, z, z)
    else:
        idx = idx.astype(it, copy=False)
        s, e, group = start[idx], end[idx], thread[idx]
    bad, roots, rounds = _walk(idx, s, e, group, root, parent, prev, it)
    del idx, s, e, group, root
    first = z
    if bad:  # thread codes are in order of first appearance: the first slice of each
        first = np.unique(thread, return_index=True)[1][thread[np.concatenate(bad)]]
    cat = (lambda parts: np.concatenate(parts) if parts else z)
    return Nesting(parent, prev, cat(bad), cat(roots), cat(rounds), first)


def _thread_codes(pid: np.ndarray, tid: np.ndarray, it: type) -> np.ndarray | None:
    """Thread codes in order of first appearance, None when all slices are on one thread."""
    if pid.min() == pid.max():
        if tid.min() == tid.max():
            return None
        return pd.factorize(tid)[0].astype(it)  # one process: the tid codes are the thread codes
    tcode = pd.factorize(tid)[0].astype(np.int64)
    pcode = pd.factorize(pid)[0].astype(np.int64)
    return pd.factorize(pcode * (int(tcode.max(initial=0)) + 1) + tcode)[0].astype(it)


def _walk(idx: np.ndarray, s: np.ndarray, e: np.ndarray, group: np.ndarray, root: np.ndarray | None,
          parent: np.ndarray, prev: np.ndarray,
          it: type) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """The rounds (module doc) over slices ``idx`` in (thread, start, end desc) order (``s``,
    ``e``: their starts and ends, ``group``: their thread codes; ``root``: round 1's roots when
    known): ``parent`` / ``prev`` filled in place; returns the partly overlapping slices, their
    roots and rounds, round by round."""
    bad: list[np.ndarray] = []
    roots: list[np.ndarray] = []
    rounds: list[np.ndarray] = []
    depth = 0
    is_slice_group = False  # round 1: groups are threads, not slices
    while len(idx):
        # roots: after the end of the latest-ending earlier slice of the same group
        if root is None:
            root = _roots(s, e, group)
        if root.all():  # nothing left nests (a round of streams' tasks): the same links, no positions
            if is_slice_group:
                parent[idx] = group
            same = group[1:] == group[:-1]
            prev[idx[1:][same]] = idx[:-1][same]
            break
        root_pos = np.maximum.accumulate(np.where(root, np.arange(len(idx), dtype=it), it(0)))
        r = np.flatnonzero(root)
        if is_slice_group:  # (round 1's roots have no parent)
            parent[idx[r]] = group[r]
        same = np.zeros(len(r), bool)
        same[1:] = group[r[1:]] == group[r[:-1]]
        prev[idx[r[1:]][same[1:]]] = idx[r[:-1]][same[1:]]
        overlap = ~root & (e > e[root_pos])
        if overlap.any():
            bad.append(idx[overlap])
            roots.append(idx[root_pos][overlap])
            rounds.append(np.full(int(overlap.sum()), depth, np.int64))
        keep = ~root & ~overlap  # followers of root r form group r (contiguous, still in order)
        kp = np.flatnonzero(keep)  # (positions, then takes: masks this interleaved are slow)
        idx, s, e, group = idx[kp], s[kp], e[kp], idx[root_pos[kp]]
        is_slice_group, root = True, None
        depth += 1
    return bad, roots, rounds


def _walk_blocks(idx: np.ndarray | None, thread: np.ndarray | None, start: np.ndarray, end: np.ndarray,
                 parent: np.ndarray, prev: np.ndarray) -> bool:
    """:func:`_walk` block by block of about ``NEST_BLOCK`` slices in (thread, start, end desc)
    order (``idx``; None: the rows' own order), each block cut before a root of round 1: every
    earlier slice of its thread has ended (as doubles) when it starts, so the block's trees are
    whole, and its roots, computed from the block alone, are the whole set's (an earlier end
    below the block's first start is below every later start too).  The only link between two
    blocks is the previous sibling of a block's first slice: the last root of round 1 of the
    block before, on the same thread.  False (``parent`` / ``prev`` partly filled) as soon as a
    block finds a partly overlapping slice: the caller walks all slices at once, for the
    problems in the order of that walk."""
    n = len(start)
    it = index_dtype(n)
    a, width = 0, NEST_BLOCK
    last_root, last_thread = -1, -1
    while a < n:
        b = min(a + width, n)
        if idx is None:
            pos, s, e = np.arange(a, b, dtype=it), start[a:b], end[a:b]
        else:
            pos = idx[a:b]
            s, e = start[pos], end[pos]
        group = np.zeros(b - a, it) if thread is None else thread[pos]
        root = _roots(s, e, group)
        cut = b - a
        if b < n:
            later = np.flatnonzero(root[1:])
            if not len(later):  # one tree longer than the window: a wider one
                width *= 2
                continue
            cut = int(later[-1]) + 1
            pos, s, e, group, root = pos[:cut], s[:cut], e[:cut], group[:cut], root[:cut]
        if last_root >= 0 and int(group[0]) == last_thread:
            prev[pos[0]] = last_root
        k = int(np.flatnonzero(root)[-1])
        last_root, last_thread = int(pos[k]), int(group[k])
        bad, _, _ = _walk(pos, s, e, group, root, parent, prev, it)
        if bad:
            return False
        a, width = a + cut, NEST_BLOCK
    return True


def overlap_order(nest: Nesting, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Sort keys of the overlapping pairs (round, thread, start, end descending, index): the order
    :func:`nesting` finds them in, so pairs found in separate calls over disjoint threads can be
    merged into the order one call over all of them gives."""
    b = nest.bad
    return np.stack([nest.bad_round, nest.bad_thread_first, start[b], -end[b], b])


def negative_message(pid: int, tid: int, start: int) -> str:
    return f"slice at pid {pid} tid {tid} ts {_us(start)} has negative duration"


def overlap_message(pid: int, tid: int, start: int, dur: int, name: str | None) -> str:
    what = f" ({name})" if name is not None else ""
    return (f"slice{what} on pid {pid} tid {tid} at ts {_us(start)} "
            f"(dur {dur / 1000:.3f} us) partly overlaps another slice on the same thread")


def nesting_problems(pid: np.ndarray, tid: np.ndarray, start: np.ndarray, dur: np.ndarray,
                     name_of: Callable[[int], str] | None = None, limit: int = 5,
                     nest: Nesting | None = None) -> list[str]:
    """Return up to ``limit`` messages about partly overlapping slices (empty when all nest).

    ``name_of(i)`` names slice ``i`` in a message (called only for reported slices); ``nest``:
    the slices' :func:`nesting` when the caller has it."""
    n = len(start)
    if n == 0:
        return []
    pid = np.asarray(pid, np.int64)
    tid = np.asarray(tid, np.int64)
    start = np.asarray(start, np.int64)
    dur = np.asarray(dur, np.int64)
    problems = [negative_message(pid[i], tid[i], start[i]) for i in np.flatnonzero(dur < 0)[:limit]]
    if problems:
        return problems
    if nest is None:
        nest = nesting(pid, tid, start, start + dur)
    return [overlap_message(pid[i], tid[i], start[i], dur[i], name_of(i) if name_of is not None else None)
            for i in nest.bad[:limit].tolist()]


def flow_problems(s_ids: np.ndarray, f_ids: np.ndarray, limit: int = 5) -> list[str]:
    """Each id must have exactly one start and one end (sort-based: ids are nearly sorted)."""
    out: list[str] = []
    sets = []
    for label, ids in (("start", s_ids), ("end", f_ids)):
        v = np.sort(np.asarray(ids, np.int64))
        dup = np.flatnonzero(v[1:] == v[:-1])
        for x in pd.unique(v[dup])[:limit]:
            out.append(f"flow id {x} has {int(np.count_nonzero(v == x))} {label} events")
        sets.append(v)
    a, b = sets
    if len(a) != len(b) or not np.array_equal(a, b):
        only_s = np.setdiff1d(a, b, assume_unique=False)[:limit]
        only_f = np.setdiff1d(b, a, assume_unique=False)[:limit]
        out += [f"flow id {x} has a start but no end" for x in only_s]
        out += [f"flow id {x} has an end but no start" for x in only_f]
    return out


def id_problems(label: str, values: np.ndarray, limit: int = 3) -> list[str]:
    v = np.asarray(values)
    if len(v) == 0:
        return []
    big = v[(v >= MAX_SAFE_ID) | (v < 0)][:limit] if v.dtype.kind == "i" else v[v >= MAX_SAFE_ID][:limit]
    return [f"{label} {int(x)} is outside [0, 2**53): viewers reading JSON numbers as doubles "
            f"cannot keep it exact" for x in big]


def _us(ns: int) -> str:
    ns = int(ns)
    return f"{ns // 1000}.{ns % 1000:03d}"

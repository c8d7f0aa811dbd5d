"""Checks a timeline must pass before it is written, all vectorised.

* Slices on one (pid, tid) nest and never partly overlap.  Perfetto drops a partly overlapping
  ``X`` slice (``stats.slice_drop_overlapping_complete_event``) and catapult draws it wrongly.
* Every flow has both ends (one ``s`` and one ``f`` per id).
* Ids stay below 2**53, so viewers that read JSON numbers as doubles keep them exact.

Problems are reported (which thread, which ts), never silently fixed.

Nesting check, one depth level per round: slices are ordered per thread by (start asc, end
desc).  In a group (first a whole thread, later the children of one slice) a slice is a *root*
when it starts at or after every earlier slice of the group has ended; every other slice must
end no later than its root, otherwise the two partly overlap.  Roots are then removed and their
followers form the next round's groups.  Rounds = the deepest nesting (a handful), each a few
numpy/pandas passes, so millions of slices take well under a second.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

MAX_SAFE_ID = 2**53


def _order(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Indices sorted by (thread, start asc, end desc) with stable sorts, cheap on time-ordered data."""
    idx = np.argsort(-end, kind="stable")
    idx = idx[np.argsort(start[idx], kind="stable")]
    th = thread[idx]
    th = th.astype(np.uint16) if th.max(initial=0) < 65536 else th
    return idx[np.argsort(th, kind="stable")]


def nesting_problems(pid: np.ndarray, tid: np.ndarray, start: np.ndarray, dur: np.ndarray,
                     name_of: Callable[[int], str] | None = None, limit: int = 5) -> list[str]:
    """Return up to ``limit`` messages about partly overlapping slices (empty when all nest).

    ``name_of(i)`` names slice ``i`` in a message (called only for reported slices)."""
    n = len(start)
    if n == 0:
        return []
    pid = np.asarray(pid, np.int64)
    tid = np.asarray(tid, np.int64)
    start = np.asarray(start, np.int64)
    dur = np.asarray(dur, np.int64)
    end = start + dur
    problems = [f"slice at pid {pid[i]} tid {tid[i]} ts {_us(start[i])} has negative duration"
                for i in np.flatnonzero(dur < 0)[:limit]]
    if problems:
        return problems
    pcode = pd.factorize(pid)[0].astype(np.int64)
    tcode = pd.factorize(tid)[0].astype(np.int64)
    thread = pd.factorize(pcode * (int(tcode.max()) + 1) + tcode)[0].astype(np.int64)
    idx = _order(thread, start, end)
    s, e, group = start[idx], end[idx], thread[idx]
    bad: list[int] = []
    while len(idx) and len(bad) < limit:
        # end of the latest-ending earlier slice of the same group (exclusive running max)
        prev_reach = pd.Series(e).groupby(group, sort=False).cummax().groupby(group, sort=False).shift(1)
        root = (prev_reach.isna() | (prev_reach <= s)).to_numpy()
        root_pos = np.maximum.accumulate(np.where(root, np.arange(len(idx)), 0))
        overlap = ~root & (e > e[root_pos])
        bad += idx[np.flatnonzero(overlap)][: limit - len(bad)].tolist()
        keep = ~root & ~overlap
        # followers of root r form group r (they are contiguous and still in order)
        idx, s, e, group = idx[keep], s[keep], e[keep], idx[root_pos][keep]
    for i in bad:
        what = f" ({name_of(i)})" if name_of is not None else ""
        problems.append(f"slice{what} on pid {pid[i]} tid {tid[i]} at ts {_us(start[i])} "
                        f"(dur {dur[i] / 1000:.3f} us) partly overlaps another slice on the same thread")
    return problems


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

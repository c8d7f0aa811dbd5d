"""Checks a timeline must pass before it is written, all vectorised.

* Slices on one (pid, tid) nest and never partly overlap.  Perfetto drops a partly overlapping
  ``X`` slice (``stats.slice_drop_overlapping_complete_event``) and catapult draws it wrongly.
* Every flow has both ends (one ``s`` and one ``f`` per id).
* Ids stay below 2**53, so viewers that read JSON numbers as doubles keep them exact.

Problems are reported (which thread, which ts), never silently fixed.

Nesting check: every slice becomes a start and an end bracket, sorted per thread by time (at
equal times ends before starts, longer slices open first, inner slices close first).  Slices
nest exactly when this bracket sequence is well formed, i.e. when, among the brackets at each
depth, starts and ends alternate and each end closes the slice its preceding start opened.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MAX_SAFE_ID = 2**53


def nesting_problems(pid: np.ndarray, tid: np.ndarray, start: np.ndarray, dur: np.ndarray,
                     names: Sequence[str] | None = None, limit: int = 5) -> list[str]:
    """Return up to ``limit`` messages about partly overlapping slices (empty when all nest)."""
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
    # rank slices per thread by (start asc, end desc): the order brackets open in
    thread = np.unique(np.stack([pid, tid], axis=1), axis=0, return_inverse=True)[1].ravel()
    open_order = np.lexsort((-end, start, thread))
    rank = np.empty(n, np.int64)
    rank[open_order] = np.arange(n)
    ids = np.concatenate([np.arange(n), np.arange(n)])
    time = np.concatenate([start, end])
    # class at equal time: ends of non-empty slices 0, starts 1, ends of empty slices 2
    cls = np.concatenate([np.ones(n, np.int64), np.where(dur > 0, 0, 2)])
    tie = np.concatenate([rank, -rank])  # starts: outer first; ends: inner first
    th = np.concatenate([thread, thread])
    order = np.lexsort((tie, cls, time, th))
    is_start = (np.arange(2 * n) < n)[order]
    step = np.where(is_start, 1, -1)
    depth_after = np.cumsum(step)
    # per-thread cumulative depth: threads are contiguous in `order` and each sums to 0
    level = np.where(is_start, depth_after, depth_after + 1)
    th_o = th[order]
    grp = np.lexsort((np.arange(2 * n), level, th_o))  # stable by position inside (thread, level)
    g_start = is_start[grp]
    g_id = ids[order][grp]
    g_key = np.stack([th_o[grp], level[grp]], axis=1)
    # positions 0,2,4.. in each (thread, level) group must be starts, 1,3,5.. their ends
    new_group = np.ones(2 * n, bool)
    new_group[1:] = np.any(g_key[1:] != g_key[:-1], axis=1)
    pos_in_group = np.arange(2 * n) - np.maximum.accumulate(np.where(new_group, np.arange(2 * n), 0))
    bad = g_start != (pos_in_group % 2 == 0)
    pair_ok = np.ones(2 * n, bool)
    ends = np.flatnonzero(~g_start & (pos_in_group % 2 == 1))
    pair_ok[ends] = g_id[ends] == g_id[ends - 1]
    bad |= ~pair_ok
    bad_idx = np.flatnonzero(bad)
    for j in bad_idx[:limit]:
        i = g_id[j]
        what = f" ({names[i]})" if names is not None else ""
        problems.append(f"slice{what} on pid {pid[i]} tid {tid[i]} at ts {_us(start[i])} "
                        f"(dur {dur[i] / 1000:.3f} us) partly overlaps another slice on the same thread")
    return problems


def flow_problems(s_ids: np.ndarray, f_ids: np.ndarray, limit: int = 5) -> list[str]:
    s_ids = np.asarray(s_ids, np.int64)
    f_ids = np.asarray(f_ids, np.int64)
    out: list[str] = []
    for label, ids in (("start", s_ids), ("end", f_ids)):
        u, c = np.unique(ids, return_counts=True)
        out += [f"flow id {x} has {k} {label} events" for x, k in zip(u[c > 1][:limit], c[c > 1][:limit])]
    only_s = np.setdiff1d(s_ids, f_ids)[:limit]
    only_f = np.setdiff1d(f_ids, s_ids)[:limit]
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

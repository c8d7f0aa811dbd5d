"""``api_event.data``: MsprofApi intervals and MsprofEvent points (40 B each, one file).

Output: APIs (end >= begin; begin 0 = started before profiling) plus Events paired into pseudo-APIs by (level, thread, type,
request_id, item_id) in file order -- first = start, second = end (msprof's
CANNEventGenerator).  Every record takes the next running ``connection_id`` in file order
(aging stream first, then unaging: file-name order; msprof's Python ApiEventParser); a pseudo-API
keeps its start record's id.  ``cpp_connection_id``: the number msprof's C++ analysis gives the
record, 1 + its rank by (begin, level descending) over all records (EventGrouper sorts them with
SortByTimeAndLevel before each becomes an Event with ``++g_eventIDCnt``; ties in file order).
"""
from __future__ import annotations

import numpy as np

from msprof_py.parse.cpp_time import by_chunks
from msprof_py.parse.records.parts import DecodeContext, Parts
from msprof_py.raw import api_event
from msprof_py.raw.common import EVENT_FLAG


def decode(parts: Parts, ctx: DecodeContext) -> dict[str, np.ndarray]:
    """Columns (raw host counters, not yet converted): level, type, thread_id, item_id,
    start, end, request_id (-1 for APIs), connection_id, cpp_connection_id, is_event."""
    warnings = ctx.warnings
    n = len(parts)
    level = parts.col("level", np.uint16)
    typ = parts.col("type", np.uint32)
    thread = parts.col("thread_id", np.uint32)
    req = parts.col(api_event.REQUEST_ID, np.uint32)
    begin = parts.col(api_event.BEGIN, np.uint64)
    end = parts.col("end", np.uint64)
    item = parts.col("item_id", np.uint64)
    conn = np.arange(n, dtype=np.int64)
    cpp_conn = np.empty(n, dtype=np.int64)
    cpp_conn[_time_level_order(begin, level)] = np.arange(1, n + 1, dtype=np.int64)
    is_event = end == np.uint64(EVENT_FLAG)

    api = ~is_event
    # begin == 0 is how the runtime reports a call that started before profiling did (the first
    # aclrtSetDevice): msprof keeps it (its start converts to monotonic 0), so do we
    bad = api & (end < begin)
    if bad.any():
        warnings.warn(f"api_event: {int(bad.sum())} API record(s) with end < begin dropped (invalid)")
    api &= ~bad

    # --- events: pair by key in file order
    ev = np.flatnonzero(is_event)
    e_key = np.stack([level[ev].astype(np.uint64), thread[ev].astype(np.uint64), typ[ev].astype(np.uint64),
                      req[ev].astype(np.uint64), item[ev]])
    order = np.lexsort(e_key[::-1]) if len(ev) else np.zeros(0, np.int64)  # stable: file order kept in a key
    sk = e_key[:, order]
    new_group = np.ones(len(order), bool)
    if len(order) > 1:
        new_group[1:] = np.any(sk[:, 1:] != sk[:, :-1], axis=0)
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(len(order)), 0))
    rank = np.arange(len(order)) - group_start
    gid = np.cumsum(new_group) - 1
    gsize = np.bincount(gid)[gid] if len(order) else np.zeros(0, np.int64)
    is_start = (rank % 2 == 0) & (rank + 1 < gsize)
    unpaired = (rank % 2 == 0) & ~is_start
    if unpaired.any():
        warnings.warn(f"api_event: {int(unpaired.sum())} Event record(s) without a matching end event ignored")
    s_idx = ev[order[is_start]]
    e_idx = ev[order[np.flatnonzero(is_start) + 1]]

    # output rows in file order (connection id order): APIs and the start event of each pair
    sel = api.copy()
    sel[s_idx] = True
    if sel.all():  # every record an API call (no event, none dropped): the decoded columns as they
        # are (each a fresh array of its own), not a gather of all 4.2 M rows into fresh pages
        def rows_of(a: np.ndarray) -> np.ndarray:
            return a
    else:
        rows = np.flatnonzero(sel)

        def rows_of(a: np.ndarray) -> np.ndarray:
            return a[rows]
    del sel
    end_src = end
    if len(s_idx):
        end_src = end.copy()
        end_src[s_idx] = begin[e_idx]
    ev_rows = rows_of(is_event)
    return {
        "level": rows_of(level),
        "type": rows_of(typ),
        "thread_id": rows_of(thread),
        "item_id": rows_of(item),
        "start": rows_of(begin),
        "end": rows_of(end_src),
        "request_id": np.where(ev_rows, rows_of(req).astype(np.int64), -1),
        "connection_id": rows_of(conn),
        "cpp_connection_id": rows_of(cpp_conn),
        "is_event": ev_rows,
    }


def _time_level_order(begin: np.ndarray, level: np.ndarray) -> np.ndarray:
    """Record positions by begin, then level descending, ties in file order (``np.lexsort((file
    order, -level, begin))``): one stable argsort of begin and the 16-bit level packed in an int64
    when the begin span leaves room for them, else the lexsort."""
    if not len(begin):
        return np.zeros(0, np.int64)
    lo, hi = int(begin.min()), int(begin.max())
    if (hi - lo + 1) << 16 < 2 ** 63:
        def pack(b: np.ndarray, lv: np.ndarray) -> np.ndarray:
            p = (b - np.uint64(lo)).astype(np.int64) << np.int64(16)
            p |= np.int64(0xFFFF) - lv.astype(np.int64)
            return p
        # (in chunks: the four temporaries of 64 Ki rows reused, not of every record: 4.2 M on the
        # single-op million, each a fresh 34 MB mapping)
        return np.argsort(by_chunks(pack, begin, level), kind="stable")
    return np.lexsort((-level.astype(np.int64), begin))

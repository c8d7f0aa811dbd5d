"""``stars_soc.data``: STARS ACSQ task logs and FFTS+ sub-task logs (64 B) -> device tasks.

Pairing follows msprof's LogModeling: logs are grouped by key (stream, task, context) in
timestamp order; an end is accepted for the latest start <= it that has no end yet (the queue
merge, which equals the in-order zip when start/end counts agree); ends with no start and
starts with no end are dropped with a warning.  Other STARS log kinds (block / PMU logs)
are not task times and are skipped without a word, as msprof's task parser does.  Stream/task ids are decoded with msprof's
expandStatus rules (``raw.stars_soc.physical_ids``).  ACSQ rows get context 4294967295.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from msprof_py.errors import WarningLog
from msprof_py.parse.keys import group_codes, unique_inverse
from msprof_py.parse.records.parts import DecodeContext, Parts
from msprof_py.raw import stars_soc as raw
from msprof_py.raw.common import INVALID_U32


def decode(parts: Parts, ctx: DecodeContext) -> dict[str, np.ndarray]:
    """Device tasks: stream_id, task_id, context_id, start, end (syscnt), device_task_type (categorical).

    Logs without the STARS magic 0x6BD3 are dropped with a warning (msprof counts and skips
    them).  Stream / task ids follow ``ctx.expand_status``.  Rows are sorted by start time."""
    warnings = ctx.warnings
    magic = parts.col("resv0")
    bad = magic != raw.MAGIC
    if bad.any():
        path, off = parts.where(int(np.argmax(bad)))
        warnings.warn(f"{path}: byte {off}: {int(bad.sum())} STARS log(s) without the magic number "
                      f"0x{raw.MAGIC:04X} dropped (first one here)")
    word0 = parts.col("word0")
    func = raw.func_type(word0)
    acsq = (func == raw.FUNC_ACSQ_START) | (func == raw.FUNC_ACSQ_END)
    ffts = (func == raw.FUNC_FFTS_START) | (func == raw.FUNC_FFTS_END)
    keep = (acsq | ffts) & ~bad
    idx = np.flatnonzero(keep)
    every = len(idx) == len(keep)  # (every log kept: the columns as they are, not a gathered copy of each)

    def kept(col: np.ndarray) -> np.ndarray:
        return col if every else col[idx]
    sqe = raw.sqe_type(kept(word0))
    stream, task = raw.physical_ids(kept(parts.col("stream_id")), kept(parts.col("task_id")), ctx.expand_status, sqe)
    ffts = kept(ffts)
    if ffts.any():
        ctx_id = np.where(ffts, kept(parts.col("sub_task_id", view=raw.FFTS_DTYPE)).astype(np.int64), INVALID_U32)
        sub = (kept(parts.col("sub_task_type", view=raw.FFTS_DTYPE)) & 0xFF).astype(np.int64)
        # type code space: ACSQ sqe types as-is, FFTS sub-task types offset by 1000
        tcode = np.where(ffts, 1000 + sub, sqe.astype(np.int64))
    else:  # ACSQ logs only: no sub-task fields to read
        ctx_id = np.full(len(idx), INVALID_U32, np.int64)
        tcode = sqe.astype(np.int64)
    f = kept(func)
    is_start = (f == raw.FUNC_ACSQ_START) | (f == raw.FUNC_FFTS_START)
    ts = kept(parts.col("timestamp"))
    parts.release()  # every field is taken: the logs' pages need not stay resident through the pairing
    return pair(stream, task, ctx_id, ts, is_start, tcode, warnings, parts.label)


def pair(stream, task, ctx, ts, is_start, tcode, warnings: WarningLog, where: str) -> dict[str, np.ndarray]:
    """Queue-merge start/end logs per (stream, task, context) key (vectorised)."""
    key = group_codes(stream, task, ctx)
    order = _order(key, ts, is_start)  # by key, time; a start before an end at equal time
    k, st = key[order], is_start[order]
    s_pos = np.flatnonzero(st)
    e_pos = np.flatnonzero(~st)
    cand = _last_start(k, st, e_pos)
    ok = cand >= 0
    # first end claiming a start wins (ends are time-ordered within a key)
    claimed = np.zeros(len(s_pos), bool)
    first_claim = np.zeros(len(e_pos), bool)
    if ok.any():
        c = cand[ok]
        if len(c) < 2 or bool(np.all(c[1:] >= c[:-1])):  # as the order gives them: no sort needed
            first_idx = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
            uniq = c[first_idx]
        else:
            uniq, first_idx = np.unique(c, return_index=True)
        sel = np.flatnonzero(ok)[first_idx]
        first_claim[sel] = True
        claimed[uniq] = True
    dropped_ends = int((~first_claim).sum())
    dropped_starts = int((~claimed).sum())
    if dropped_ends or dropped_starts:
        warnings.warn(f"{where}: {dropped_starts} task start log(s) without an end and {dropped_ends} end log(s) "
                      "without a start dropped (start/end pairing)")
    s_sel = order[s_pos[cand[first_claim]]]
    e_sel = order[e_pos[first_claim]]
    start = ts[s_sel]
    out = {
        "stream_id": stream[s_sel].astype(np.int64),
        "task_id": task[s_sel].astype(np.int64),
        "context_id": ctx[s_sel].astype(np.int64),
        "start": start,
        "end": ts[e_sel],
        "device_task_type": type_names(tcode[s_sel]),
    }
    o = np.argsort(start, kind="stable")
    return {name: (v[o] if not isinstance(v, pd.Categorical) else v[o]) for name, v in out.items()}


def _last_start(k: np.ndarray, st: np.ndarray, e_pos: np.ndarray) -> np.ndarray:
    """For each end (positions ``e_pos`` of the (key, time, start first) order): the index among
    the starts of the last start of its key at or before its time, else -1.  In that order every
    such start comes before the end and every later one after it, so it is the last start before
    the end's position when that one has the end's key (one running maximum, no search)."""
    n = len(st)
    if not len(e_pos):
        return np.zeros(0, np.int64)
    last = np.maximum.accumulate(np.where(st, np.arange(n), -1))[e_pos]
    ok = last >= 0
    ok[ok] = k[last[ok]] == k[e_pos[ok]]
    rank = np.cumsum(st) - 1
    return np.where(ok, rank[np.maximum(last, 0)], -1)


def _order(key: np.ndarray, ts: np.ndarray, is_start: np.ndarray) -> np.ndarray:
    """Stable order by (key, time, end after start): one argsort of a packed int64 when key and
    time span fit in 62 bits together (a lexsort of three columns costs ~3x more), else lexsort."""
    if not len(key):
        return np.zeros(0, np.int64)
    t = np.asarray(ts, np.uint64)
    lo, hi = int(t.min()), int(t.max())
    span = hi - lo + 1
    if (int(key.max()) + 1) * span * 2 < 2 ** 62:
        packed = (key.astype(np.int64) * np.int64(span) + (t - np.uint64(lo)).astype(np.int64)) * 2
        packed += ~is_start
        return np.argsort(packed, kind="stable")
    return np.lexsort((~is_start, ts, key))


def type_names(tcode: np.ndarray) -> pd.Categorical:
    uniq, inv = unique_inverse(np.asarray(tcode, np.int64))  # small codes: counted, not sorted
    names = [raw.FFTS_SUBTASK_TYPES.get(int(c) - 1000, str(int(c) - 1000)) if c >= 1000
             else raw.SQE_TYPES.get(int(c), str(int(c))) for c in uniq]
    cats, codes = np.unique(np.array(names, dtype=object), return_inverse=True) if names else ([], [])
    return pd.Categorical.from_codes(np.asarray(codes, np.int32)[inv] if len(uniq) else np.zeros(0, np.int32),
                                     categories=pd.Index(list(cats), dtype=object).astype(str))

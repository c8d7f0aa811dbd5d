"""Batch ids from task-id flips (msprof's FlipCalculator.compute_batch_id), vectorised.

Per stream, tasks and flips sorted by time: a task at or after the k-th flip gets batch k (a
stream-destroy flip, flip_num 65535, increments too).  Calibration: the tasks right before a
(non-destroy) flip whose task_id < the flip's task_id were given id 0.. late by another thread,
so that contiguous run is moved to the new batch.
"""
from __future__ import annotations

import numpy as np

from msprof_py.parse.keys import group_codes, last_le
from msprof_py.raw.ts_track import FLIP_STREAM_DESTROY


def compute_batch_id(task_stream: np.ndarray, task_id: np.ndarray, task_time: np.ndarray,
                     flip_stream: np.ndarray, flip_task_id: np.ndarray, flip_time: np.ndarray,
                     flip_num: np.ndarray) -> np.ndarray:
    """Batch id (int64) per task, in the tasks' given order."""
    n = len(task_stream)
    batch = np.zeros(n, np.int64)
    if n == 0 or len(flip_stream) == 0:
        return batch
    codes = group_codes(np.concatenate([task_stream, flip_stream]))
    tc, fc = codes[:n], codes[n:]
    forder = np.lexsort((flip_time, fc))
    fk, ft = fc[forder], flip_time[forder].astype(np.int64)
    # number of flips with time <= task time on the same stream
    last = last_le(fk, ft, tc, task_time.astype(np.int64))
    first_of_key = np.searchsorted(fk, tc, side="left")
    batch = np.where(last >= 0, last - first_of_key + 1, 0)

    # calibration: contiguous run (in time order) right before flip k with task_id < flip.task_id;
    # only flips with task_id > 0 can move anything, so only their streams are looked at
    movable = (flip_task_id > 0) & (flip_num != FLIP_STREAM_DESTROY)
    if not movable.any():
        return batch
    sel = np.flatnonzero(np.isin(tc, np.unique(fc[movable])))
    batch[sel] = _calibrate(tc[sel], task_id[sel], task_time[sel], batch[sel], first_of_key[sel], fk, flip_task_id,
                            flip_num, forder, ft)
    return batch


def _calibrate(tc, task_id, task_time, batch, first_of_key, fk, flip_task_id, flip_num, forder,
               flip_time_sorted) -> np.ndarray:
    n = len(tc)
    torder = np.lexsort((task_time, tc))
    sk, sb, sid = tc[torder], batch[torder], task_id[torder].astype(np.int64)
    nxt = first_of_key[torder] + sb  # index in sorted flips of the next flip (if same key)
    has_next = nxt < len(fk)
    has_next[has_next] &= fk[nxt[has_next]] == sk[has_next]
    ftask = np.full(n, -1, np.int64)
    fnum = np.full(n, -1, np.int64)
    ftask[has_next] = flip_task_id[forder][nxt[has_next]]
    fnum[has_next] = flip_num[forder][nxt[has_next]]
    # msprof only reaches a flip when a later task of the stream exists (its loop walks tasks)
    last_time = np.full(int(tc.max()) + 1 if n else 0, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(last_time, tc, task_time.astype(np.int64))
    ftime = np.full(n, np.iinfo(np.int64).max, np.int64)
    ftime[has_next] = flip_time_sorted[nxt[has_next]]
    reached = has_next & (ftime <= last_time[sk])
    cond = reached & (sid < ftask) & (fnum != FLIP_STREAM_DESTROY)
    # segment = (key, batch); the run must reach the segment's end
    seg = np.ones(n, bool)
    seg[1:] = (sk[1:] != sk[:-1]) | (sb[1:] != sb[:-1])
    seg_id = np.cumsum(seg) - 1
    seg_end = np.r_[np.flatnonzero(seg)[1:], n] - 1  # last index of each segment
    breaks = np.cumsum(~cond)  # number of non-cond rows up to i
    last_i = seg_end[seg_id]
    run = cond & (breaks[last_i] - breaks == 0)
    sb = np.where(run, sb + 1, sb)
    out = np.empty(n, np.int64)
    out[torder] = sb
    return out

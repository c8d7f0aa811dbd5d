"""Match PMU records to device tasks the way msprof's ``PmuAssociation`` does (vectorised).

Per key (stream, task, context) the context PMU records are taken in end-time order and the
device tasks in start order; msprof walks both (a record before the task's start is skipped, a
task ending before the record is skipped, else they match and both advance).  With the tasks of
one key not overlapping that walk gives each task the earliest record whose end syscnt lies in
``[start, end]``, which is what is computed here.  Block PMU records (MIX tasks) go to the task
of their key whose window holds them and are ranked in time order, so the table builder can sum
the first ``mix_block_num`` of the right core type (msprof's MergeBlockPmuToDeviceTask).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from msprof_py.errors import WarningLog
from msprof_py.parse.keys import group_codes, last_le, rank_in_group
from msprof_py.parse.records.ffts_profile import MIX_AIC, MIX_AIV
from msprof_py.raw import ffts_profile as raw

COUNTER_COLS = [f"pmu{i}" for i in range(raw.N_COUNTERS)]


def _task_of(rec_keys: tuple, rec_ts: np.ndarray, task_keys: tuple, start: np.ndarray,
             end: np.ndarray) -> np.ndarray:
    """Index of the task (same key, start <= ts <= end) holding each record's timestamp, else -1."""
    n_t = len(start)
    if n_t == 0 or len(rec_ts) == 0:
        return np.full(len(rec_ts), -1, np.int64)
    codes = group_codes(*[np.concatenate([a, b]) for a, b in zip(task_keys, rec_keys)])
    tk, rk = codes[:n_t], codes[n_t:]
    order = np.lexsort((start, tk))
    cand = last_le(tk[order], start[order].astype(np.int64), rk, rec_ts.astype(np.int64))
    out = np.full(len(rec_ts), -1, np.int64)
    ok = cand >= 0
    idx = order[cand[ok]]
    inside = rec_ts[ok].astype(np.int64) <= end[idx].astype(np.int64)
    sel = np.flatnonzero(ok)[inside]
    out[sel] = idx[inside]
    return out


def associate(rec: dict[str, np.ndarray], tasks: dict[str, np.ndarray], warnings: WarningLog,
              where: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(context, block)`` frames.

    context: one row per matched task: ``task`` (index into ``tasks``), accel, total_cycle,
    end (syscnt of the record), pmu0..pmu7.  block: ``task``, core_type, rank (0-based, time
    order within the task), total_cycle, pmu0..pmu7 - only records of MIX tasks."""
    keys = ("stream_id", "task_id", "context_id")
    t_keys = tuple(np.asarray(tasks[k], np.int64) for k in keys)
    start = np.asarray(tasks["start"], np.uint64)
    end = np.asarray(tasks["end"], np.uint64)
    ctx_sel = np.flatnonzero(~rec["is_block"])
    c_end = rec["end"][ctx_sel]
    order = np.argsort(c_end, kind="stable")
    ctx_sel, c_end = ctx_sel[order], c_end[order]
    task = _task_of(tuple(rec[k][ctx_sel] for k in keys), c_end, t_keys, start, end)
    matched = task >= 0
    first = np.zeros(len(task), bool)
    if matched.any():
        _, first_idx = np.unique(task[matched], return_index=True)
        first[np.flatnonzero(matched)[first_idx]] = True
    unmatched = int((~matched).sum())
    if unmatched:
        warnings.warn(f"{where}: {unmatched} context PMU record(s) match no task of their (stream, task, "
                      "context) in time; not used (msprof drops them too)")
    sel = ctx_sel[first]
    pmu = rec["pmu"]
    context = pd.DataFrame({"task": task[first], "accel": rec["accel"][sel], "total_cycle": rec["total_cycle"][sel],
                            "end": rec["end"][sel],
                            **{c: pmu[sel, i] for i, c in enumerate(COUNTER_COLS)}})
    blk_sel = np.flatnonzero(rec["is_block"] & np.isin(rec["accel"], [MIX_AIC, MIX_AIV]))
    b_end = rec["end"][blk_sel]
    order = np.argsort(b_end, kind="stable")
    blk_sel, b_end = blk_sel[order], b_end[order]
    btask = _task_of(tuple(rec[k][blk_sel] for k in keys), b_end, t_keys, start, end)
    ok = btask >= 0
    bs = blk_sel[ok]
    block = pd.DataFrame({"task": btask[ok], "accel": rec["accel"][bs], "core_type": rec["core_type"][bs],
                          "rank": rank_in_group(btask[ok]), "total_cycle": rec["total_cycle"][bs],
                          **{c: pmu[bs, i] for i, c in enumerate(COUNTER_COLS)}})
    return context, block

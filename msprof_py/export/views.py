"""Row selections shared by several exporters (which tasks a device shows, display names).

Selections only; no time is computed here.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from msprof_py.export.session_access import NA_ID, of_device, table

# op_summary drops these task types (msprof C++ OpSummaryAssembler)
SUMMARY_DROPPED_TYPES = frozenset({"WRITE_BACK", "INVALID", "HCCL_AI_CPU", "COMMUNICATION"})


def as_cat(col: Any) -> pd.Categorical:
    """Any column as a Categorical of plain strings, missing values as "N/A" (cheap when the
    column is categorical already: only the categories are touched)."""
    if isinstance(col, pd.Categorical) or isinstance(getattr(col, "dtype", None), pd.CategoricalDtype):
        c = pd.Categorical(col)
        codes = np.asarray(c.codes, dtype=np.int64)
        cats = [str(x) for x in c.categories.tolist()]
    else:
        codes, uniq = pd.factorize(pd.Series(col, dtype=object), sort=False)
        codes = np.asarray(codes, dtype=np.int64)
        cats = [str(x) for x in uniq.tolist()]
    if (codes < 0).any() or "N/A" not in cats:
        cats = cats + ["N/A"]
        codes = np.where(codes < 0, len(cats) - 1, codes)
    if len(set(cats)) == len(cats):
        return pd.Categorical.from_codes(codes, categories=pd.Index(cats, dtype=object))
    uniq, inverse = np.unique(np.array(cats, dtype=object), return_inverse=True)  # dedupe categories
    return pd.Categorical.from_codes(inverse[codes], categories=pd.Index(list(uniq), dtype=object))


def cat_where(cond: np.ndarray, a: pd.Categorical, b: pd.Categorical) -> pd.Categorical:
    """Row-wise ``a if cond else b`` for categoricals, without per-row strings."""
    cats = pd.Index(list(dict.fromkeys([*a.categories, *b.categories])), dtype=object)
    ca = cats.get_indexer(a.categories)[a.codes]
    cb = cats.get_indexer(b.categories)[b.codes]
    return pd.Categorical.from_codes(np.where(cond, ca, cb), categories=cats)


def cat_isin(c: pd.Categorical, values: Any) -> np.ndarray:
    return np.isin(np.asarray(c.categories, dtype=object), list(values))[c.codes]


def shown_tasks(session: Any, device_id: int) -> pd.DataFrame:
    """Executed device tasks of one device, ordered by start time.

    Host-only rows (``match == "host_only"``, start -1) have no device time and are left out.
    When FFTS+ subtask rows (context_id != 4294967295) exist for a task, its parent row is
    hidden, as msprof's timeline does.
    """
    t = of_device(table(session, "tasks"), device_id)
    if len(t) == 0:
        return t
    t = t[t["start_ns"].to_numpy(dtype=np.int64) >= 0]
    ctx = t["context_id"].to_numpy(dtype=np.int64)
    if (ctx != NA_ID).any():
        key = ["stream_id", "task_id", "batch_id"]
        with_sub = t.loc[ctx != NA_ID, key].drop_duplicates()
        parents = t[ctx == NA_ID].reset_index().merge(with_sub, on=key)["index"]
        t = t.drop(index=parents)
    order = np.lexsort((t["stream_id"].to_numpy(np.int64), t["start_ns"].to_numpy(np.int64)))
    return t.iloc[order]


def summary_tasks(session: Any, device_id: int) -> pd.DataFrame:
    """The task rows of op_summary: :func:`shown_tasks` that have op info (msprof's TaskInfo:
    an op type; the parser names info-less tasks by their task type), minus WRITE_BACK/INVALID/HCCL task types.  Tasks without op info (memcpy,
    HCCL sub-tasks) are in task_time and the timeline, not here, as in msprof."""
    t = shown_tasks(session, device_id)
    if len(t) == 0:
        return t
    return t[~cat_isin(task_types(t), SUMMARY_DROPPED_TYPES) & ~cat_isin(as_cat(t["op_type"]), ["N/A"])]


def display_names(t: pd.DataFrame) -> pd.Categorical:
    """Op name; else the host task type; else (FFTS_PLUS/UNKNOWN host type) the device type."""
    name, host, dev = as_cat(t["op_name"]), as_cat(t["host_task_type"]), as_cat(t["device_task_type"])
    fallback = cat_where(cat_isin(host, ["N/A", "UNKNOWN", "FFTS_PLUS"]), dev, host)
    return cat_where(cat_isin(name, ["N/A"]), fallback, name)


def task_types(t: pd.DataFrame) -> pd.Categorical:
    """TaskInfo task type unless N/A, else the device task type (msprof §3.4)."""
    tt = as_cat(t["task_type"])
    return cat_where(cat_isin(tt, ["N/A"]), as_cat(t["device_task_type"]), tt)

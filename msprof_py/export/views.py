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


def _str(col: pd.Series) -> np.ndarray:
    return col.astype(object).where(col.notna(), "N/A").astype(str).to_numpy()


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
    """The task rows of op_summary: :func:`shown_tasks` minus WRITE_BACK/INVALID/HCCL tasks."""
    t = shown_tasks(session, device_id)
    if len(t) == 0:
        return t
    keep = ~pd.Series(_str(t["task_type"]), index=t.index).isin(SUMMARY_DROPPED_TYPES)
    return t[keep.to_numpy()]


def display_names(t: pd.DataFrame) -> np.ndarray:
    """Op name; else the host task type; else (FFTS_PLUS/UNKNOWN host type) the device type."""
    name = _str(t["op_name"])
    host = _str(t["host_task_type"])
    dev = _str(t["device_task_type"])
    fallback = np.where(np.isin(host, ["N/A", "UNKNOWN", "FFTS_PLUS"]), dev, host)
    return np.where(name == "N/A", fallback, name)


def task_types(t: pd.DataFrame) -> np.ndarray:
    """TaskInfo task type unless N/A, else the device task type (msprof §3.4)."""
    tt = _str(t["task_type"])
    return np.where(tt == "N/A", _str(t["device_task_type"]), tt)

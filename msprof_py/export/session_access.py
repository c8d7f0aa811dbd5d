"""Reading the parsed session the way every exporter needs it.

Exporters see a session only through :func:`table` (a DataFrame with exactly the columns of
:mod:`msprof_py.parse.schema`, empty when the session lacks it) and a few grouping helpers.
Nothing here computes time: it only selects rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.errors import WarningLog
from msprof_py.parse import schema
from msprof_py.parse.counters import TABLE_COLUMNS as COUNTER_COLUMNS

COLUMNS: dict[str, list[str]] = {
    "api": schema.API_COLUMNS,
    "tasks": schema.TASK_COLUMNS,
    "steps": schema.STEP_COLUMNS,
    "all_reduce": schema.ALL_REDUCE_COLUMNS,
    "communication": schema.COMMUNICATION_COLUMNS,
    "comm_tasks": schema.COMM_TASK_COLUMNS,
    "fusion_ops": schema.FUSION_OP_COLUMNS,
    "memcpy": schema.MEMCPY_COLUMNS,
    "devices": schema.DEVICE_INFO_FIELDS,
    **COUNTER_COLUMNS,  # aicpu, dp, l2_cache, msproftx
}
NA_ID = 4294967295


def table(session: Any, name: str) -> pd.DataFrame:
    """``session.<name>`` with the schema's columns (an empty frame if absent)."""
    df = getattr(session, name, None)
    cols = COLUMNS[name]
    if df is None:
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in cols})
    missing = [c for c in cols if c not in df.columns]
    if missing:
        df = df.copy()
        for c in missing:
            df[c] = pd.Series([pd.NA] * len(df), index=df.index, dtype=object)
    return df


@dataclass
class TableSession:
    """A session made directly from tables (tests, benchmarks).  ``msprof_py.load`` returns the
    parser's own Session, which offers the same attributes plus ``select``."""

    api: pd.DataFrame | None = None
    tasks: pd.DataFrame | None = None
    steps: pd.DataFrame | None = None
    all_reduce: pd.DataFrame | None = None
    communication: pd.DataFrame | None = None
    comm_tasks: pd.DataFrame | None = None
    fusion_ops: pd.DataFrame | None = None
    memcpy: pd.DataFrame | None = None
    devices: pd.DataFrame | None = None
    warnings: WarningLog = field(default_factory=WarningLog)


def device_ids(session: Any) -> list[int]:
    """Devices to export: the session's device dirs plus any device that ran tasks."""
    ids: set[int] = set()
    for name in ("devices", "tasks", "steps", "communication"):
        df = table(session, name)
        if len(df):
            ids.update(int(d) for d in pd.unique(df["device_id"].astype("int64")))
    return sorted(ids)


def device_info(session: Any, device_id: int) -> dict[str, Any]:
    df = table(session, "devices")
    rows = df[df["device_id"].astype("int64") == device_id] if len(df) else df
    if len(rows) == 0:
        return {}
    return rows.iloc[0].to_dict()


def of_device(df: pd.DataFrame, device_id: int) -> pd.DataFrame:
    if len(df) == 0:
        return df
    return df[df["device_id"].to_numpy(dtype=np.int64) == device_id]


def thread_device(api: pd.DataFrame, devices: list[int]) -> pd.Series:
    """Which device's files show each host thread's API calls.

    A thread goes with the device its task-issuing calls target (the most frequent one);
    threads that never targeted a device (setup threads) go with the lowest device id, so every
    call appears in exactly one timeline.  Returns a Series indexed like ``api``.
    """
    if len(api) == 0:
        return pd.Series([], dtype=np.int64)
    default = devices[0] if devices else 0
    if len(devices) <= 1:
        return pd.Series(np.full(len(api), default, dtype=np.int64), index=api.index)
    key = api["pid"].astype("int64") * (1 << 32) + api["thread_id"].astype("int64")
    dev = api["device_id"].astype("int64")
    known = dev >= 0
    counts = pd.DataFrame({"key": key[known], "dev": dev[known]}).value_counts().reset_index()
    counts = counts.sort_values(["key", "count", "dev"], ascending=[True, False, True])
    best = counts.drop_duplicates("key").set_index("key")["dev"]
    return key.map(best).fillna(default).astype("int64")


def api_of_device(session: Any, device_id: int) -> pd.DataFrame:
    api = table(session, "api")
    if len(api) == 0:
        return api
    owner = thread_device(api, device_ids(session))
    return api[owner.to_numpy() == device_id]

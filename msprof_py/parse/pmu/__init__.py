"""Device counters: task-based PMU (``ffts_profile.data``) and AI Core frequency
(``lpmInfoConv`` / ``lpmFreqConv``) -> the ``pmu`` and ``aicore_freq`` session tables.

The device pass (:func:`load_device_pmu`) decodes the records and matches them to the device
tasks while their syscnt times are at hand; :func:`pmu.table.build` computes msprof's metrics
once the host join has given each task its block dims.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from msprof_py.errors import WarningLog
from msprof_py.parse.meta import ResultDir, Ticks
from msprof_py.parse.pmu import freq as freq_table
from msprof_py.parse.pmu.assoc import associate
from msprof_py.parse.pmu.table import DevicePmu

EMPTY = (np.zeros(0, np.uint64), np.zeros(0, np.int64))


def _freq(tables: dict, name: str) -> tuple[np.ndarray, np.ndarray]:
    f = tables.get(name)
    return (f["syscnt"], f["freq_mhz"]) if f is not None else EMPTY


def load_device_pmu(rd: ResultDir, tables: dict, tasks: dict[str, np.ndarray], start_ns: np.ndarray,
                    warnings: WarningLog, ticks: Ticks | None = None) -> tuple[DevicePmu | None, pd.DataFrame]:
    """``tables``: the decoded registry tables of the device (``ffts_pmu``, ``freq_info``,
    ``freq_conv``, absent when the files are); ``tasks``: the paired device tasks (stream_id,
    task_id, context_id, start, end syscnt); ``start_ns``: their converted starts.
    ``ticks``: the device clock the tasks were converted with.  Returns (matched PMU or None,
    aicore_freq rows)."""
    info = _freq(tables, "freq_info")
    freq = freq_table.build(rd.device_id, rd, *info, ticks=ticks)
    rec = tables.get("ffts_pmu")
    if rec is None:
        return None, freq
    where = str(rd.path / "data" / f"ffts_profile.data.{rd.device_id}")
    context, block = associate(rec, tasks, warnings, where)
    for df in (context, block):
        idx = df["task"].to_numpy(np.int64)
        for k in ("stream_id", "task_id", "context_id"):
            df[k] = np.asarray(tasks[k], np.int64)[idx]
        df["start_ns"] = np.asarray(start_ns, np.int64)[idx]
    return DevicePmu(context, block, freq_conv=_freq(tables, "freq_conv"), freq_info=info), freq

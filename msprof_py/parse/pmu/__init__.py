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
from msprof_py.parse.meta import ResultDir
from msprof_py.parse.pmu import freq as freq_table
from msprof_py.parse.pmu.assoc import associate
from msprof_py.parse.pmu.table import DevicePmu
from msprof_py.parse.reader import Stream, read_records
from msprof_py.parse.records import ffts_profile, lpm_info
from msprof_py.raw import ffts_profile as raw_ffts, lpm_info as raw_lpm

FILE_TAGS = frozenset({raw_ffts.FILE_TAG, raw_lpm.FILE_TAG, raw_lpm.FREQ_FILE_TAG})


def _freq(streams: dict[tuple[str, int], Stream], tag: str, dev: int, warnings: WarningLog,
          typed: bool) -> tuple[np.ndarray, np.ndarray]:
    s = streams.get((tag, dev))
    dec = read_records(s, raw_lpm.DTYPE, warnings, host=False) if s is not None else None
    f = lpm_info.decode(dec, warnings, typed=typed)
    return f["syscnt"], f["freq_mhz"]


def load_device_pmu(rd: ResultDir, streams: dict[tuple[str, int], Stream], tasks: dict[str, np.ndarray],
                    start_ns: np.ndarray, warnings: WarningLog) -> tuple[DevicePmu | None, pd.DataFrame]:
    """``tasks``: the paired device tasks (stream_id, task_id, context_id, start, end syscnt);
    ``start_ns``: their converted starts.  Returns (matched PMU or None, aicore_freq rows)."""
    dev = rd.device_id
    info = _freq(streams, raw_lpm.FILE_TAG, dev, warnings, typed=True)
    freq = freq_table.build(dev, rd, *info)
    s = streams.get((raw_ffts.FILE_TAG, dev))
    if s is None:
        return None, freq
    dec = read_records(s, raw_ffts.DTYPE, warnings, host=False)
    rec = ffts_profile.decode(dec, warnings, str(rd.path / "data" / f"{raw_ffts.FILE_TAG}.{dev}"))
    del dec
    where = str(rd.path / "data" / f"{raw_ffts.FILE_TAG}.{dev}")
    context, block = associate(rec, tasks, warnings, where)
    for df in (context, block):
        idx = df["task"].to_numpy(np.int64)
        for k in ("stream_id", "task_id", "context_id"):
            df[k] = np.asarray(tasks[k], np.int64)[idx]
        df["start_ns"] = np.asarray(start_ns, np.int64)[idx]
    conv = _freq(streams, raw_lpm.FREQ_FILE_TAG, dev, warnings, typed=False)
    return DevicePmu(context, block, freq_conv=conv, freq_info=info), freq

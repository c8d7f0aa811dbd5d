"""The ``aicore_freq`` session table: AI Core frequency over the collection, as msprof's
AICORE_FREQ table and "AI Core Freq" counter track show it.

Rows (``device_id``, ``timestamp_ns`` local ns, ``freq_mhz``), built like msprof:
the lpmInfoConv frequency samples become freq.db rows (one at the device start ``cntvct``
carrying the last sample before it, default info.json ``aic_frequency``, then every later sample
in file order); rows before the device's collectionTimeBegin only update the starting
frequency; a row at collectionTimeBegin (starting frequency) and one at collectionTimeEnd (the
last row's frequency) frame the rest; sorted by time.  Only 910B / 310B (platform_version 5, 7)
have the table, as in msprof.  A capture without frequency samples gets no rows: msprof's
C++ would frame the default frequency, but the real exports without lpmInfoConv (310B) have
neither the table nor the track, and those are what we match.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from msprof_py.parse.meta import ResultDir, Ticks

COLUMNS = ["device_id", "timestamp_ns", "freq_mhz"]
FREQ_PLATFORMS = ("5", "7")


def freq_db_rows(dev_cnt: int, default_mhz: int, syscnt: np.ndarray, mhz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """msprof's LpmInfoConvParser: (syscnt, MHz) rows of freq.db."""
    syscnt = np.asarray(syscnt, np.uint64)
    mhz = np.asarray(mhz, np.int64)
    before = syscnt < np.uint64(dev_cnt)
    first = int(mhz[before][-1]) if before.any() else int(default_mhz)
    return (np.concatenate([[np.uint64(dev_cnt)], syscnt[~before]]).astype(np.uint64),
            np.concatenate([[first], mhz[~before]]).astype(np.int64))


def build(device_id: int, rd: ResultDir, syscnt: np.ndarray, mhz: np.ndarray, ticks: Ticks | None = None) -> pd.DataFrame:
    """AICORE_FREQ rows of one device (empty for other chips or without a device start log)."""
    if str(rd.info.get("platform_version", "")) not in FREQ_PLATFORMS or rd.dev_start is None or not len(syscnt):
        return pd.DataFrame({c: pd.Series(dtype=np.int64) for c in COLUMNS})
    dinfo = (rd.info.get("DeviceInfo") or [{}])[0]
    try:
        default = int(float(dinfo.get("aic_frequency")))
    except (TypeError, ValueError, AttributeError):
        default = 0
    # msprof's Python FreqParser (which writes freq.db) holds dev_start.log's cntvct as a float of
    # seconds (InfoConfReader: float(cntvct) / 1e9, get_dev_cnt: int(x * 1e9)): often 1 below
    dev_cnt = int(float(rd.dev_start.cntvct) / 1e9 * 1e9)
    sc, f = freq_db_rows(dev_cnt, default, syscnt, mhz)
    ts = (ticks or rd.device_ticks()).point_ns(sc)
    start, end = rd.collection_start_ns, rd.collection_end_ns
    early = ts < start
    first = int(f[early][-1]) if early.any() else default
    last = int(f[-1]) if len(f) else default
    t_out = [ts[~early]]
    f_out = [f[~early]]
    if end > 0:
        t_out.append(np.array([end], np.int64))
        f_out.append(np.array([last], np.int64))
    t_out.append(np.array([start], np.int64))
    f_out.append(np.array([first], np.int64))
    t = np.concatenate(t_out)
    fr = np.concatenate(f_out)
    o = np.argsort(t, kind="stable")
    return pd.DataFrame({"device_id": np.full(len(t), device_id, np.int64), "timestamp_ns": t[o],
                         "freq_mhz": fr[o]})

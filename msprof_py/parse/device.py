"""Device side of one ``device_{id}`` dir: paired task logs with batch ids, step-trace records
and flips, times converted to local wall-clock ns (§2.8 steps 2 and 4)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from msprof_py.errors import WarningLog
from msprof_py.parse.cats import frame
from msprof_py.parse.flip import compute_batch_id
from msprof_py.parse.meta import ResultDir
from msprof_py.parse.pmu import FILE_TAGS as PMU_TAGS, load_device_pmu
from msprof_py.parse.pmu.table import DevicePmu
from msprof_py.parse.reader import discover_device, read_records
from msprof_py.parse.records import stars_soc, ts_track
from msprof_py.raw import stars_soc as raw_stars, ts_track as raw_ts


@dataclass
class DeviceData:
    device_id: int
    tasks: pd.DataFrame  # stream_id, task_id, context_id, batch_id, start_ns, dur_ns, device_task_type
    step_records: pd.DataFrame  # timestamp (local ns), model_id, index_id, stream_id, task_id, tag_id
    flips: pd.DataFrame
    pmu: DevicePmu | None = None  # matched PMU records (parse.pmu)
    aicore_freq: pd.DataFrame | None = None


def load_device(rd: ResultDir, warnings: WarningLog) -> DeviceData:
    dev = rd.device_id
    streams = discover_device(rd.path / "data")
    ticks = rd.device_ticks()
    known = {raw_stars.FILE_TAG, raw_ts.FILE_TAG, *PMU_TAGS}
    for (tag, d), s in streams.items():
        if d != dev:
            warnings.warn(f"{s.paths[0]}: data of device {d} inside {rd.name}; ignored")
    other = sorted({tag for (tag, d) in streams if tag not in known})
    if other:
        warnings.warn(f"{rd.path / 'data'}: raw kinds not parsed by msprof_py: {', '.join(other)}")

    where_stars = str(rd.path / "data" / f"{raw_stars.FILE_TAG}.{dev}")
    if (raw_stars.FILE_TAG, dev) in streams:
        dec = read_records(streams[(raw_stars.FILE_TAG, dev)], raw_stars.DTYPE, warnings, host=False)
        t = stars_soc.decode(dec, warnings, where_stars)
        del dec
    else:
        t = stars_soc.pair(*(np.zeros(0, np.int64),) * 4, np.zeros(0, bool), np.zeros(0, np.int64), warnings, "")
    dec_ts = None
    if (raw_ts.FILE_TAG, dev) in streams:
        dec_ts = read_records(streams[(raw_ts.FILE_TAG, dev)], raw_ts.PREFIX_DTYPE, warnings, host=False)
    tr = ts_track.decode(dec_ts, warnings, str(rd.path / "data" / f"{raw_ts.FILE_TAG}.{dev}"))
    del dec_ts

    start = ticks.to_local_ns(t["start"])
    dur = ticks.dur_ns(t["end"].astype(np.int64) - t["start"].astype(np.int64))
    fl = tr["flip"]
    flip_time = ticks.to_local_ns(fl["timestamp"])
    batch = compute_batch_id(t["stream_id"], t["task_id"], start, fl["stream_id"], fl["task_id"], flip_time,
                             fl["flip_num"])
    tasks = frame({"stream_id": t["stream_id"], "task_id": t["task_id"], "context_id": t["context_id"],
                          "batch_id": batch, "start_ns": start, "dur_ns": dur,
                          "device_task_type": t["device_task_type"]})
    st = tr["step"]
    steps = frame({**{k: v for k, v in st.items() if k != "timestamp"},
                          "timestamp": ticks.to_local_ns(st["timestamp"])})
    flips = frame({"stream_id": fl["stream_id"], "task_id": fl["task_id"], "flip_num": fl["flip_num"],
                          "timestamp": flip_time})
    if not len(tasks) and not len(steps):
        warnings.warn(f"{rd.path / 'data'}: no device task or step-trace data")
    pmu, freq = load_device_pmu(rd, streams, t, start, warnings)
    return DeviceData(dev, tasks, steps, flips, pmu, freq)

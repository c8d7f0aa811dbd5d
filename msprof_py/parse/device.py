"""Device side of one ``device_{id}`` dir: paired task logs with batch ids, step-trace records
and flips, times converted to local wall-clock ns (§2.8 steps 2 and 4)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from msprof_py.errors import WarningLog
from msprof_py.parse import plausible
from msprof_py.parse.cats import frame
from msprof_py.parse.flip import compute_batch_id
from msprof_py.parse.meta import ResultDir, Ticks
from msprof_py.parse.pmu import load_device_pmu
from msprof_py.parse.pmu.table import DevicePmu
from msprof_py.parse.records.dictionaries import Dictionaries
from msprof_py.parse.records.parts import DecodeContext
from msprof_py.parse.registry import DEVICE, KindReader
from msprof_py.raw import stars_soc as raw_stars, ts_track as raw_ts


@dataclass
class DeviceData:
    device_id: int
    tasks: pd.DataFrame  # stream_id, task_id, context_id, batch_id, start_ns, dur_ns, span_ns, cut_start_ns,
    #                      device_task_type
    step_records: pd.DataFrame  # timestamp (local ns), model_id, index_id, stream_id, task_id, tag_id
    flips: pd.DataFrame
    kinds: KindReader | None = None  # what data/ held (unused / unknown kinds for the report)
    tables: dict = field(default_factory=dict)  # decoded tables of kinds other features registered
    pmu: DevicePmu | None = None  # PMU records matched to the tasks (parse.pmu)
    aicore_freq: pd.DataFrame | None = None  # AI Core frequency rows (parse.pmu.freq)


def load_device(rd: ResultDir, warnings: WarningLog, dicts: Dictionaries | None = None,
                expand_status: int = 0, ticks: Ticks | None = None) -> DeviceData:
    """Parse ``device_{id}/data``; ``expand_status`` comes from the host's expand_stream_spec,
    ``ticks`` is the syscnt clock (:mod:`msprof_py.parse.clocks`; default: the dir's own files)."""
    dev = rd.device_id
    ctx = DecodeContext(dicts or Dictionaries(), warnings, expand_status)
    kinds = KindReader(DEVICE, rd.path / "data", ctx, device_id=dev)
    ticks = ticks if ticks is not None else rd.device_ticks()
    t = kinds.get(raw_stars.FILE_TAG)
    tr = kinds.get(raw_ts.FILE_TAG)

    start, dur, span = ticks.task_ns(t["start"], t["end"])
    _plausible(rd, kinds, t, start, dur, warnings)
    fl = tr["flip"]
    flip_time = ticks.to_local_ns(fl["timestamp"])
    batch = compute_batch_id(t["stream_id"], t["task_id"], start, fl["stream_id"], fl["task_id"], flip_time,
                             fl["flip_num"])
    tasks = frame({"stream_id": t["stream_id"], "task_id": t["task_id"], "context_id": t["context_id"],
                   "batch_id": batch, "start_ns": start, "dur_ns": dur, "span_ns": span,
                   "cut_start_ns": ticks.cut_start_ns(t["start"], start),
                   "device_task_type": t["device_task_type"]})
    st = tr["step"]
    steps = frame({**{k: v for k, v in st.items() if k != "timestamp"},
                   "timestamp": ticks.to_local_ns(st["timestamp"])})
    flips = frame({"stream_id": fl["stream_id"], "task_id": fl["task_id"], "flip_num": fl["flip_num"],
                   "timestamp": flip_time})
    if not len(tasks) and not len(steps):
        warnings.warn(f"{rd.path / 'data'}: no device task or step-trace data")
    extra = kinds.extra_tables({raw_stars.FILE_TAG, raw_ts.FILE_TAG})
    pmu, freq = load_device_pmu(rd, extra, t, start, warnings, ticks)
    # the decoded STARS logs, ts_track and PMU records are in ``tasks`` / ``steps`` / ``flips`` /
    # ``pmu`` now: not kept through the join and the PMU table (A: ~70 MB a device)
    kinds.drop(raw_stars.FILE_TAG, raw_ts.FILE_TAG, tables=("ffts_pmu",))
    extra.pop("ffts_pmu", None)
    return DeviceData(dev, tasks, steps, flips, kinds, extra, pmu, freq)


def _plausible(rd: ResultDir, kinds: KindReader, t, start: np.ndarray, dur: np.ndarray, warnings: WarningLog) -> None:
    """Device tasks ending before they start or outside the collection window (warnings only)."""
    where = kinds.label(raw_stars.FILE_TAG)

    def ident(i: int) -> str:
        return f"stream {int(t['stream_id'][i])} task {int(t['task_id'][i])}"

    plausible.check_order(warnings, "device tasks", where, dur, ident)
    plausible.check_window(warnings, "device task starts", where, start, rd.collection_start_ns,
                           rd.collection_end_ns, ident)

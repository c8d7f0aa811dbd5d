"""aicpu, dp, l2_cache and msprof_tx summaries and the timeline's msproftx process.

Reads the session tables of :mod:`msprof_py.parse.counters`; only formats, as msprof's Python
analysis writes these files (``msconfig/msprof_export_data_config.py`` headers, then the
``Device_id`` column its summary merge puts first):

| file | header | values |
|---|---|---|
| ``aicpu_{dev}`` | Device_id, Timestamp(us), Node, Compute_time(us), Memcpy_time(us), Task_time(us), Dispatch_time(us), Total_time(us), Stream ID, Task ID | timestamp = run start, 3 decimals and a tab (msprof's high-precision cell); times ``round(x, 3)`` printed as Python prints a float (``20.0``, ``29.76``); Node "N/A" when no task on (stream, task) holds the run; with ``--model-id``/``--iteration-id`` only the runs inside those iterations |
| ``dp_{dev}`` | Device_id, Timestamp(us), Action, Source, Cached Buffer Size | timestamp with 3 decimals (no tab) |
| ``l2_cache_{dev}`` | Device_id, Stream Id, Task Id, Hit Rate, Victim Rate, Op Name | rates ``round(x, 6)`` as Python floats; Hit Rate "N/A" on STARS chips (Ascend 910B) |
| ``msprof_tx`` (host) | Device_id, pid, tid, category, event_type, payload_type, payload_value, Start_time(us), End_time(us), message_type, message, domain, Device Start_time(us), Device End_time(us) | Device_id "host"; times 3 decimals and a tab; domain / device times "N/A" for plain marks |

Timeline (msprof's C++ ``MsprofTxAssembler``): a process named after info.json ``pid_name``
(label CPU, sort index 6, pid ``format_pid(pid, 6, 31)``), one thread per OS thread ("Thread
{tid}"), an X event per mark / range named by its message, args ``Category`` (string),
``Payload_type``, ``Payload_value``, ``Message_type``, ``event_type``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.export.base import ExportContext, Naming, register
from msprof_py.export.session_access import of_device
from msprof_py.parse.session import Session
from msprof_py.export.summaries import i64, stem, text
from msprof_py.export.table_writer import Col, write_table
from msprof_py.export.trace_events import HOST_DEVICE, Arg, Meta, Slices, format_pid

AICPU_HEADER = ["Device_id", "Timestamp(us)", "Node", "Compute_time(us)", "Memcpy_time(us)", "Task_time(us)",
                "Dispatch_time(us)", "Total_time(us)", "Stream ID", "Task ID"]
DP_HEADER = ["Device_id", "Timestamp(us)", "Action", "Source", "Cached Buffer Size"]
L2_HEADER = ["Device_id", "Stream Id", "Task Id", "Hit Rate", "Victim Rate", "Op Name"]
TX_HEADER = ["Device_id", "pid", "tid", "category", "event_type", "payload_type", "payload_value", "Start_time(us)",
             "End_time(us)", "message_type", "message", "domain", "Device Start_time(us)", "Device End_time(us)"]
SORT_MSPROFTX = 6


def py_float_text(values: Any, decimals: int) -> pd.Categorical:
    """``str(round(x, decimals))`` per value (Python's shortest float text: ``20.0``, ``1e-05``),
    computed once per distinct value; NaN -> ``N/A``."""
    v = np.round(np.asarray(values, np.float64), decimals)
    uniq, inv = np.unique(v, return_inverse=True)
    texts = ["N/A" if u != u else repr(float(u) + 0.0) for u in uniq.tolist()]
    if not len(v):
        return pd.Categorical([])
    return pd.Categorical.from_codes(inv.reshape(-1), categories=pd.Index(texts, dtype=object)) \
        if len(set(texts)) == len(texts) else pd.Categorical(np.asarray(texts, dtype=object)[inv.reshape(-1)])


class AicpuSummary:
    name = "aicpu"
    kind = "summary"
    per_device = True
    describe = "AI CPU kernel runs: compute, memcpy, dispatch and total times per run (aicpu switch)"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        a = _in_selected_iterations(session, of_device(session.aicpu, naming.device_id), naming.device_id)
        if not len(a):
            return []
        n = len(a)
        cols = [Col.ints(np.full(n, naming.device_id)), Col.us(i64(a["start_ns"]), stamp=True),
                Col.text(text(a["op_name"])),
                Col.text(py_float_text(a["compute_us"].to_numpy(np.float64) / 1000.0 * 1000.0, 3), number=True),
                Col.text(py_float_text(a["memcpy_us"].to_numpy(np.float64) / 1000.0 * 1000.0, 3), number=True),
                Col.text(py_float_text(i64(a["task_ns"]) / 1000.0, 3), number=True),
                Col.text(py_float_text(a["dispatch_us"].to_numpy(np.float64) / 1000.0 * 1000.0, 3), number=True),
                Col.text(py_float_text(i64(a["total_ns"]) / 1000.0, 3), number=True),
                Col.ints(i64(a["stream_id"])), Col.ints(i64(a["task_id"]))]
        return [write_table(stem(out_dir, naming, self.name), AICPU_HEADER, cols, naming.summary_format)]


def _in_selected_iterations(session: Session, a: pd.DataFrame, device_id: int) -> pd.DataFrame:
    """With ``--model-id M --iteration-id I`` msprof keeps the AI CPU runs inside the selected
    iterations: start >= the first one's step start (0 for iteration 1) and end <= the last
    one's step end (its ``MsprofIteration.get_iter_interval``); no step data: every run."""
    sel = getattr(session, "selection", None)
    if sel is None or not len(a):
        return a
    model, first, count = sel
    st = of_device(session.steps, device_id)
    st = st[(i64(st["model_id"]) == model) & (i64(st["index_id"]) >= first) & (i64(st["index_id"]) < first + count)]
    if not len(st):
        return a
    lo = 0 if first == 1 else int(i64(st["step_start_ns"]).min())
    hi = int(i64(st["step_end_ns"]).max())
    return a[(i64(a["start_ns"]) >= lo) & (i64(a["end_ns"]) <= hi)]


class DpSummary:
    name = "dp"
    kind = "summary"
    per_device = True
    describe = "data-preprocess (dataset queue) events: dequeues and the batches left in the queue (aicpu switch)"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        d = of_device(session.dp, naming.device_id)
        if not len(d):
            return []
        cols = [Col.ints(np.full(len(d), naming.device_id)), Col.us(i64(d["timestamp_ns"])),
                Col.text(text(d["action"])), Col.text(text(d["source"])), Col.ints(i64(d["size"]))]
        return [write_table(stem(out_dir, naming, self.name), DP_HEADER, cols, naming.summary_format)]


class L2CacheSummary:
    name = "l2_cache"
    kind = "summary"
    per_device = True
    describe = "L2 cache hit and victim rates per task (l2 switch; hit rate N/A on the Ascend 910B, as msprof)"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        c = of_device(session.l2_cache, naming.device_id)
        if not len(c):
            return []
        cols = [Col.ints(np.full(len(c), naming.device_id)), Col.ints(i64(c["stream_id"])),
                Col.ints(i64(c["task_id"])), Col.text(py_float_text(c["hit_rate"], 6), number=True),
                Col.text(py_float_text(c["victim_rate"], 6), number=True), Col.text(text(c["op_name"]))]
        return [write_table(stem(out_dir, naming, self.name), L2_HEADER, cols, naming.summary_format)]


class MsprofTxSummary:
    name = "msprof_tx"
    kind = "summary"
    per_device = False
    describe = "msproftx marks and ranges of the profiled process (msproftx switch)"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        t = session.msproftx
        if not len(t):
            return []
        n = len(t)
        ex = i64(t["info_type"]) == 1

        def num(col: str) -> Col:
            v = pd.Series(t[col].to_numpy()).astype(str).to_numpy(object)
            return Col.text(np.where(ex, "N/A", v), number=True)

        na = Col.const("N/A", n)  # device times: msprof matches MarkEx mark ids to device records (none here)
        cols = [Col.const("host", n), Col.ints(i64(t["pid"])), Col.ints(i64(t["tid"])), num("category"),
                Col.text(text(t["event_type"])), num("payload_type"), num("payload_value"),
                Col.us(i64(t["start_ns"]), stamp=True), Col.us(i64(t["end_ns"]), stamp=True), num("message_type"),
                Col.text(text(t["message"])), Col.text(text(t["domain"])), na, na]
        return [write_table(stem(out_dir, naming, self.name, device=False), TX_HEADER, cols, naming.summary_format)]


def tx_layer(session: Session, meta: Meta) -> list[Slices]:
    """The msproftx process of the timeline (empty without msproftx data)."""
    t = session.msproftx
    if t is None or not len(t):
        return []
    devs = session.devices
    host = devs[i64(devs["device_id"]) == HOST_DEVICE_ID] if len(devs) else devs
    pid_name = str(host["pid_name"].iloc[0]) if len(host) and "pid_name" in host else "N/A"
    host_pid = int(i64(host["pid"])[0]) if len(host) else int(i64(t["pid"])[0])
    fpid = format_pid(host_pid, SORT_MSPROFTX, HOST_DEVICE)
    meta.process(fpid, pid_name, "CPU", SORT_MSPROFTX)
    tid = i64(t["tid"])
    for x in sorted(set(tid.tolist())):
        meta.thread(fpid, int(x), f"Thread {x}", int(x))
    start = i64(t["start_ns"])
    n = len(t)
    return [Slices(name=text(t["message"]).to_numpy(object), pid=np.full(n, fpid, np.int64), tid=tid, start_ns=start,
                   dur_ns=i64(t["end_ns"]) - start, label="msproftx",
                   args=[Arg("Category", "str", pd.Series(t["category"].to_numpy()).astype(str).to_numpy(object)),
                         Arg("Payload_type", "int", i64(t["payload_type"])),
                         Arg("Payload_value", "int", i64(t["payload_value"])),
                         Arg("Message_type", "int", i64(t["message_type"])),
                         Arg("event_type", "str", text(t["event_type"]).to_numpy(object))])]


HOST_DEVICE_ID = 64

for _cls in (AicpuSummary, DpSummary, L2CacheSummary, MsprofTxSummary):
    register(_cls())

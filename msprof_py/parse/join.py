"""Host <-> device task join on (stream, task, context, batch) for one device (msprof §3.4).

| host rows for key | device rows | result                                                        |
|-------------------|-------------|---------------------------------------------------------------|
| 1                 | N >= 1      | "matched": N rows sharing the host info (static graph replay) |
| M >= 1            | 0           | "host_only": start_ns/dur_ns = -1                             |
| 0                 | N           | "device_only": model 4294967295, host type UNKNOWN, conn -1   |
| M > 1             | N >= 1      | msprof drops these; we pair them first-in-first-out in time   |
|                   |             | order ("fifo") and keep the surplus as host_only/device_only  |
Nothing is dropped; counts per category go to the warnings.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from msprof_py.errors import WarningLog
from msprof_py.parse import cats
from msprof_py.parse.cats import frame
from msprof_py.parse.keys import group_codes, rank_in_group
from msprof_py.raw.common import INVALID_U32

MATCH_CATEGORIES = ["matched", "fifo", "host_only", "device_only"]
FFTS_OR_UNKNOWN = ("FFTS_PLUS", "UNKNOWN")


def join_device(device_id: int, host: pd.DataFrame, dev: pd.DataFrame, warnings: WarningLog,
                where: str) -> pd.DataFrame:
    """``host``: host_tasks rows of this device; ``dev``: DeviceData.tasks.  Returns joined rows
    with host columns (NaN-free: defaults filled) and device columns, plus ``match``."""
    nh, nd = len(host), len(dev)
    keys = group_codes(*(np.concatenate([host[c].to_numpy(np.int64), dev[c].to_numpy(np.int64)])
                         for c in ("stream_id", "task_id", "context_id", "batch_id")))
    hk, dk = keys[:nh], keys[nh:]
    nkeys = int(keys.max()) + 1 if len(keys) else 0
    hcount = np.bincount(hk, minlength=nkeys)
    dcount = np.bincount(dk, minlength=nkeys)
    # host rows in time order within a key; device rows are already in start order
    horder = np.lexsort((host["timestamp"].to_numpy(), hk)) if nh else np.zeros(0, np.int64)
    hfirst = np.full(nkeys, -1, np.int64)
    if nh:
        sk = hk[horder]
        first = np.r_[True, sk[1:] != sk[:-1]]
        hfirst[sk[first]] = np.flatnonzero(first)
    hrank = rank_in_group(hk[horder]) if nh else np.zeros(0, np.int64)
    drank = rank_in_group(dk)

    # device row -> host row (index into host) or -1
    hc = hcount[dk]
    one = hc == 1
    many = (hc > 1) & (drank < hc)
    host_of_dev = np.full(nd, -1, np.int64)
    host_of_dev[one] = horder[hfirst[dk[one]]]
    host_of_dev[many] = horder[hfirst[dk[many]] + drank[many]]
    match = np.where(one, 0, np.where(many, 1, 3))  # codes into MATCH_CATEGORIES
    # host rows never referenced
    used = np.zeros(nh, bool)
    used[host_of_dev[host_of_dev >= 0]] = True
    host_only = np.flatnonzero(~used)
    del hrank

    n_dev_only = int((match == 3).sum())
    n_fifo = int((match == 1).sum())
    # device-only rows alone are normal (tasks the runtime issues without a task_track record, e.g.
    # PLACE_HOLDER_SQE on real captures; msprof shows them under their device type): no warning
    if nd and not nh:  # not one host task for this device: every op name and type is unknown
        warnings.warn(f"{where}: {nd} device task rows and no host task record for this device (host "
                      f"task_track missing or damaged?): op names and types are unknown")
    elif len(host_only) or n_fifo:
        warnings.warn(f"{where}: host/device join: {int((match == 0).sum())} matched, {n_fifo} paired first-in-first-out "
                      f"(several host tasks for one key), {len(host_only)} host-only, {n_dev_only} device-only task rows")
    # assemble: device rows then host-only rows
    h_idx = np.concatenate([host_of_dev, host_only])
    out = frame({
        "device_id": np.int64(device_id),
        "stream_id": np.concatenate([dev["stream_id"].to_numpy(np.int64), host["stream_id"].to_numpy(np.int64)[host_only]]),
        "task_id": np.concatenate([dev["task_id"].to_numpy(np.int64), host["task_id"].to_numpy(np.int64)[host_only]]),
        "batch_id": np.concatenate([dev["batch_id"].to_numpy(np.int64), host["batch_id"].to_numpy(np.int64)[host_only]]),
        "context_id": np.concatenate([dev["context_id"].to_numpy(np.int64),
                                      host["context_id"].to_numpy(np.int64)[host_only]]),
        "start_ns": np.concatenate([dev["start_ns"].to_numpy(np.int64), np.full(len(host_only), -1, np.int64)]),
        "dur_ns": np.concatenate([dev["dur_ns"].to_numpy(np.int64), np.full(len(host_only), -1, np.int64)]),
        "span_ns": np.concatenate([dev["span_ns"].to_numpy(np.int64), np.full(len(host_only), -1, np.int64)]),
        "cut_start_ns": np.concatenate([dev["cut_start_ns"].to_numpy(np.int64), np.full(len(host_only), -1, np.int64)]),
        "device_task_type": cats.concat([_as_cat(dev["device_task_type"]),
                                         cats.const("UNKNOWN", len(host_only))]),
        "match_code": np.concatenate([match, np.full(len(host_only), 2)]),
    })
    has = h_idx >= 0
    hi = np.maximum(h_idx, 0)
    for col, default in (("model_id", INVALID_U32), ("request_id", -1), ("connection_id", -1), ("host_row", -1),
                         ("block_num", 0), ("mix_block_num", 0), ("host_task_type", "UNKNOWN"),
                         ("kernel_name", "N/A"), ("op_name", "N/A"), ("op_type", "N/A"), ("task_type", "N/A"),
                         ("op_state", "N/A"), ("hf32_eligible", "N/A"), ("input_shapes", "N/A"),
                         ("input_data_types", "N/A"), ("input_formats", "N/A"), ("output_shapes", "N/A"),
                         ("output_data_types", "N/A"), ("output_formats", "N/A"), ("hccl_api", -1),
                         ("thread_id", -1), ("launch_ns", -1)):
        if isinstance(default, str):
            src = _as_cat(host[col]) if nh else pd.Categorical([])
            out[col] = cats.take(src, h_idx, default)
        else:
            vals = np.full(len(h_idx), default, np.int64)
            if nh:
                vals[has] = host[col].to_numpy(np.int64)[hi[has]]
            out[col] = vals
    info = np.zeros(len(h_idx), bool)
    if nh:
        info[has] = host["has_op_info"].to_numpy(bool)[hi[has]]
    out["has_op_info"] = info
    _display_names(out)
    out["match"] = pd.Categorical.from_codes(out.pop("match_code").to_numpy(np.int8), categories=MATCH_CATEGORIES)
    return out


def _display_names(out: pd.DataFrame) -> None:
    """msprof's export naming: op name = the op's name if the task carries op info, else the
    host task type (device type for FFTS_PLUS / UNKNOWN); task type = the TaskInfo's (a GE task
    type, N/A in level0 captures) if the task has one, else that same host / device fallback."""
    info = out["has_op_info"].to_numpy()
    host_type = out["host_task_type"].array
    dev_type = out["device_task_type"].array
    fallback = cats.where(cats.isin(host_type, FFTS_OR_UNKNOWN), dev_type, host_type)
    op = out["op_name"].array
    out["op_name"] = cats.where(info & ~cats.isin(op, ("N/A",)), op, fallback)
    na = cats.const("N/A", len(out))
    for col in ("op_type", "op_state", "hf32_eligible", "input_shapes", "input_data_types", "input_formats",
                "output_shapes", "output_data_types", "output_formats"):
        out[col] = cats.where(info, out[col].array, na)
    # no TaskInfo: msprof's task type is the host task type (device type for FFTS_PLUS / no host
    # task: TaskProcessor::GetTaskType), never N/A; a TaskInfo's N/A (level0) stays N/A
    tt = out["task_type"].array
    out["task_type"] = cats.where(info | ~cats.isin(tt, ("N/A",)), tt, fallback)


def _as_cat(col: pd.Series) -> pd.Categorical:
    return col.array if isinstance(col.dtype, pd.CategoricalDtype) else pd.Categorical(col.to_numpy(dtype=object))

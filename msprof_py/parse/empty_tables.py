"""Typed empty tables: what each parsed table looks like when its source has no records, so
later stages see the documented columns (parse/schema.py) and dtypes, never a missing table."""
from __future__ import annotations

import numpy as np
import pandas as pd

from msprof_py.parse import counters, schema
from msprof_py.parse.pmu import table as pmu_table

def concat_any(parts: list, cols: list[str]) -> pd.DataFrame:
    """``parts`` (non-empty ones) concatenated with their own columns; none: ``cols`` as int64."""
    parts = [p for p in parts if p is not None and len(p)]
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=np.int64) for c in cols})
    return pd.concat(parts, ignore_index=True)



def object_frame(cols) -> pd.DataFrame:
    """No rows; every column of ``cols`` object-typed."""
    return pd.DataFrame({c: pd.Series(dtype=object) for c in cols})


def concat_or_empty(parts, cols) -> pd.DataFrame:
    """``parts`` (non-empty ones) concatenated, columns ``cols``; none: int64 columns, no rows."""
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(
        {c: pd.Series(dtype=np.int64) for c in cols})


HOST_TASK_COLS = {"device_id": np.int64, "stream_id": np.int64, "task_id": np.int64, "batch_id": np.int64,
                  "context_id": np.int64, "timestamp": np.int64, "launch_ns": np.int64, "host_task_type": object, "kernel_name": object,
                  "model_id": np.int64, "request_id": np.int64, "connection_id": np.int64, "node_api": np.int64,
                  "hccl_api": np.int64, "runtime_api": np.int64, "thread_id": np.int64, "op_name": object,
                  "op_type": object, "task_type": object, "op_state": object, "block_num": np.int64,
                  "mix_block_num": np.int64, "hf32_eligible": object, "input_shapes": object,
                  "input_data_types": object, "input_formats": object, "output_shapes": object,
                  "output_data_types": object, "output_formats": object, "has_op_info": bool, "host_row": np.int64}


def empty_host_tasks() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in HOST_TASK_COLS.items()})


def empty_device_tasks() -> pd.DataFrame:
    return pd.DataFrame({"stream_id": pd.Series(dtype=np.int64), "task_id": pd.Series(dtype=np.int64),
                         "context_id": pd.Series(dtype=np.int64), "batch_id": pd.Series(dtype=np.int64),
                         "start_ns": pd.Series(dtype=np.int64), "dur_ns": pd.Series(dtype=np.int64),
                         "span_ns": pd.Series(dtype=np.int64),
                         "cut_start_ns": pd.Series(dtype=np.int64), "device_task_type": pd.Series(dtype=object)})


def empty_table(name: str) -> pd.DataFrame:
    """The empty form of device table ``name`` (build.DEVICE_TABLES)."""
    if name in ("steps", "all_reduce"):
        return concat_or_empty([], schema.STEP_COLUMNS if name == "steps" else schema.ALL_REDUCE_COLUMNS)
    if name == "communication":
        return object_frame(schema.COMMUNICATION_COLUMNS)
    if name == "comm_tasks":
        return object_frame(schema.COMM_TASK_COLUMNS)
    if name == "pmu":
        return concat_any([], pmu_table.KEY_COLS)
    if name == "aicore_freq":
        return concat_any([], ["device_id", "timestamp_ns", "freq_mhz"])
    return counters.empty(name)

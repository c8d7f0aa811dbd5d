"""``ts_track.data``: device step-trace, task-flip and task-type records (40 B).

The func_type byte picks the layout; each kind is viewed with its own dtype from
:mod:`msprof_py.raw.ts_track`.  Stream ids are the low 11 bits.
"""
from __future__ import annotations

import numpy as np

from msprof_py.parse.records.parts import DecodeContext, Parts
from msprof_py.raw import ts_track as raw


def decode(parts: Parts, ctx: DecodeContext) -> dict[str, dict[str, np.ndarray]]:
    """Returns ``{"step": {...}, "flip": {...}}``; times are raw syscnt.

    step: timestamp, model_id, index_id (device's own), stream_id, task_id, tag_id.
    flip: timestamp, stream_id, task_id, flip_num.
    """
    func = parts.col("func_type")
    known = np.isin(func, [raw.FUNC_STEP_TRACE, raw.FUNC_TASK_FLIP, raw.FUNC_TASK_FLIP_OLD, raw.FUNC_TASK_TYPE,
                           raw.FUNC_MEMCPY, raw.FUNC_BLOCK_NUM, 61])
    if (~known).any():
        first = int(np.argmax(~known))
        path, off = parts.where(first)
        ctx.warnings.warn(f"{path}: byte {off}: {int((~known).sum())} ts_track record(s) with unknown func_type "
                      f"(first: {int(func[first])}) ignored")
    is_step = func == raw.FUNC_STEP_TRACE
    is_flip = (func == raw.FUNC_TASK_FLIP) | (func == raw.FUNC_TASK_FLIP_OLD)

    def get(name: str, layout: np.dtype, mask: np.ndarray) -> np.ndarray:
        return parts.col(name, view=layout)[mask]

    return {
        "step": {
            "timestamp": get("timestamp", raw.STEP_TRACE_DTYPE, is_step).astype(np.uint64),
            "model_id": get("model_id", raw.STEP_TRACE_DTYPE, is_step).astype(np.int64),
            "index_id": get("index_id", raw.STEP_TRACE_DTYPE, is_step).astype(np.int64),
            "stream_id": (get("stream_id", raw.STEP_TRACE_DTYPE, is_step) & raw.STREAM_ID_MASK).astype(np.int64),
            "task_id": get("task_id", raw.STEP_TRACE_DTYPE, is_step).astype(np.int64),
            "tag_id": get("tag_id", raw.STEP_TRACE_DTYPE, is_step).astype(np.int64),
        },
        "flip": {
            "timestamp": get("timestamp", raw.TASK_FLIP_DTYPE, is_flip).astype(np.uint64),
            "stream_id": (get("stream_id", raw.TASK_FLIP_DTYPE, is_flip) & raw.STREAM_ID_MASK).astype(np.int64),
            "task_id": get("task_id", raw.TASK_FLIP_DTYPE, is_flip).astype(np.int64),
            "flip_num": get("flip_num", raw.TASK_FLIP_DTYPE, is_flip).astype(np.int64),
        },
    }

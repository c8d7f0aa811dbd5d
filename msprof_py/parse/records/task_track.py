"""``compact.task_track``: runtime task submissions (64 B).

Split as msprof's TaskTrackParser does: FLIP_TASK records become flips (flip_num = the high 16
bits of taskId, i.e. ``batch_id``), MAINTENANCE records are dropped, the rest are host tasks.
``task_type`` resolves through type_info_dic at level 5000; ``kernel_name`` through hash_dic
(unknown -> "N/A", as msprof).
"""
from __future__ import annotations

import numpy as np

from msprof_py.parse import cats
from msprof_py.parse.records.parts import DecodeContext, Parts
from msprof_py.raw.common import LEVEL_RUNTIME


def decode(parts: Parts, ctx: DecodeContext) -> dict[str, dict[str, np.ndarray]]:
    """Returns ``{"tasks": ..., "flips": ...}``.  tasks: thread_id, timestamp (host counter), device_id,
    stream_id, task_id, batch_id, task_type (categorical), kernel_name (categorical), level.
    flips: device_id, stream_id, task_id, flip_num, timestamp."""
    dicts = ctx.dicts
    task_type = dicts.resolve_type(np.full(len(parts), LEVEL_RUNTIME), parts.col("task_type", np.uint64) & np.uint64(0xFFFFFFFF))
    # by the categories' codes (not 1 M names as Python strings compared one by one, under the GIL)
    is_flip = cats.isin(task_type, ("FLIP_TASK",))
    keep = ~is_flip & ~cats.isin(task_type, ("MAINTENANCE",))
    dev = parts.col("device_id", np.uint16) & np.uint16(0x0FFF)
    stream = parts.col("stream_id", np.uint16)
    task = parts.col("task_id", np.uint16)
    batch = parts.col("batch_id", np.uint16)
    ts = parts.col("timestamp", np.uint64)
    flips = {"device_id": dev[is_flip], "stream_id": stream[is_flip], "task_id": task[is_flip],
             "flip_num": batch[is_flip], "timestamp": ts[is_flip]}
    kernel = dicts.resolve_hash(parts.col("kernel_name", np.uint64)[keep], unknown="N/A")
    tasks = {
        "thread_id": parts.col("thread_id", np.uint32)[keep],
        "timestamp": ts[keep],
        "device_id": dev[keep],
        "stream_id": stream[keep],
        "task_id": task[keep],
        "batch_id": batch[keep],
        "task_type": task_type[keep],
        "kernel_name": kernel,
        "num_blocks": parts.col("num_blocks", np.uint16)[keep],
    }
    return {"tasks": tasks, "flips": flips}

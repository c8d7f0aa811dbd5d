"""``l2_cache.data``: per-task L2 counters -> ``stream_id``, ``task_id``, ``task_type`` and
``events`` ((n, 8) uint64 in the order of sample.json ``l2CacheTaskProfilingEvents``)."""
from __future__ import annotations

import numpy as np

from msprof_py.parse.records.parts import DecodeContext, Parts


def decode(parts: Parts, ctx: DecodeContext) -> dict[str, np.ndarray]:
    del ctx
    return {"task_type": parts.col("task_type", np.int64), "stream_id": parts.col("stream_id", np.int64),
            "task_id": parts.col("task_id", np.int64), "events": parts.col("events", np.uint64)}

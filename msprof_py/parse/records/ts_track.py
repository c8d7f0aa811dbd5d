"""``ts_track.data``: device step-trace, task-flip and task-type records (40 B).

The func_type byte picks the layout; each kind is viewed with its own dtype from
:mod:`msprof_py.raw.ts_track`.  Stream ids are the low 11 bits.
"""
from __future__ import annotations

import numpy as np

from msprof_py.errors import WarningLog
from msprof_py.raw import ts_track as raw


def decode(records: np.ndarray, warnings: WarningLog, where: str) -> dict[str, dict[str, np.ndarray]]:
    """Returns ``{"step": {...}, "flip": {...}}``; times are raw syscnt.

    step: timestamp, model_id, index_id (device's own), stream_id, task_id, tag_id.
    flip: timestamp, stream_id, task_id, flip_num.
    """
    func = records["func_type"] if len(records) else np.zeros(0, np.uint8)
    # view the whole buffer with each kind's dtype first, then select: indexing a padded
    # structured array copies only its named fields, so it must not happen before the view
    st = records.view(raw.STEP_TRACE_DTYPE)[func == raw.FUNC_STEP_TRACE]
    fl = records.view(raw.TASK_FLIP_DTYPE)[(func == raw.FUNC_TASK_FLIP) | (func == raw.FUNC_TASK_FLIP_OLD)]
    known = np.isin(func, [raw.FUNC_STEP_TRACE, raw.FUNC_TASK_FLIP, raw.FUNC_TASK_FLIP_OLD, raw.FUNC_TASK_TYPE,
                           raw.FUNC_MEMCPY, raw.FUNC_BLOCK_NUM, 61])
    if (~known).any():
        first = int(np.argmax(~known))
        warnings.warn(f"{where}: {int((~known).sum())} ts_track record(s) with unknown func_type "
                      f"(first: {int(func[first])} at record {first}) ignored")
    return {
        "step": {
            "timestamp": st["timestamp"].astype(np.uint64),
            "model_id": st["model_id"].astype(np.int64),
            "index_id": st["index_id"].astype(np.int64),
            "stream_id": (st["stream_id"] & raw.STREAM_ID_MASK).astype(np.int64),
            "task_id": st["task_id"].astype(np.int64),
            "tag_id": st["tag_id"].astype(np.int64),
        },
        "flip": {
            "timestamp": fl["timestamp"].astype(np.uint64),
            "stream_id": (fl["stream_id"] & raw.STREAM_ID_MASK).astype(np.int64),
            "task_id": fl["task_id"].astype(np.int64),
            "flip_num": fl["flip_num"].astype(np.int64),
        },
    }

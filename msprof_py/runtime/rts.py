"""The Runtime layer: task ids, stream ids, the runtime-level API/task type tables.

Task ids are 16-bit per stream.  The runtime keeps a 32-bit counter per stream; when the low 16
bits wrap to 0, that slot is taken by a FLIP_TASK (reported on the host as a task_track of type
FLIP_TASK whose 32-bit task id is ``flip_count << 16``, and written by the device as a ts_track
TaskFlip), and the next real task gets id 1 of the new batch.  Real task number ``n`` (0-based,
per stream) therefore sits at counter::

    n                                       if n < 65536
    65536 * (m + 1) + 1 + r                 with (m, r) = divmod(n - 65536, 65535) otherwise

so ``task_id = counter & 0xFFFF`` and ``batch_id = counter >> 16``.
"""
from __future__ import annotations

import numpy as np

from msprof_py.raw.task_track import RUNTIME_TASK_TYPES

TASK_ID_SPACE = 65536
# GE splits a model stream before it would wrap: replayed static tasks must keep (task, batch)
MAX_MODEL_STREAM_TASKS = 65000

RUNTIME_TYPE_IDS: dict[str, int] = {v: k for k, v in RUNTIME_TASK_TYPES.items()}
# runtime-level API type ids (type_info_dic 5000_<id>), apart from the task types
RUNTIME_API_TYPES: dict[str, int] = {
    "KernelLaunch": 1000, "MemcpyAsync": 1001, "StreamSynchronize": 1002, "ModelExecute": 1003,
    "StreamCreate": 1004, "SetDevice": 1005, "ModelLoad": 1006, "NotifyRecord": 1007, "NotifyWait": 1008,
    "EventRecord": 1009, "StreamWaitEvent": 1010, "CpuKernelLaunch": 1011, "MemcpyAsyncHccl": 1012,
}
# header ``type`` of the compact/additional records the runtime itself reports
TASK_TRACK_TYPE = 200
MEMCPY_INFO_TYPE = 201

# GE task type -> (runtime host task type, STARS SQE type)
KERNEL_TYPES: dict[str, tuple[str, str]] = {
    "AI_CORE": ("KERNEL_AICORE", "AI_CORE"),
    "AI_VECTOR_CORE": ("KERNEL_AIVEC", "AIV_SQE"),
    # MIX kernels run as FFTS+ tasks: the device logs an FFTS+ sub-task (context 0) of this type
    "MIX_AIC": ("KERNEL_MIX_AIC", "MIX_AIC"),
    "MIX_AIV": ("KERNEL_MIX_AIV", "MIX_AIV"),
    "AI_CPU": ("KERNEL_AICPU", "AI_CPU"),
}

MIX_CONTEXT_ID = 0  # the one FFTS+ context of a MIX kernel (context_id_info and the device log)

# physical stream ids: the user's stream, model streams, the communication stream
USER_STREAM = 2
FIRST_MODEL_STREAM = 3
COMM_STREAM_OFFSET = 40  # communication stream = FIRST_MODEL_STREAM + COMM_STREAM_OFFSET


def task_counters(n: np.ndarray) -> np.ndarray:
    """The 32-bit runtime counter of real task number ``n`` on a stream (see the module docstring)."""
    n = np.asarray(n, dtype=np.int64)
    over = n - TASK_ID_SPACE
    m, r = np.divmod(np.maximum(over, 0), TASK_ID_SPACE - 1)
    return np.where(n < TASK_ID_SPACE, n, TASK_ID_SPACE * (m + 1) + 1 + r)


def split_counter(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(task_id, batch_id)`` of runtime counters."""
    c = np.asarray(c, dtype=np.int64)
    return (c & 0xFFFF).astype(np.int64), (c >> 16).astype(np.int64)


def flip_positions(n_before: int, n_new: int) -> tuple[np.ndarray, np.ndarray]:
    """Flips that happen while launching real tasks ``n_before .. n_before+n_new-1`` on a stream.

    Returns ``(index into the new tasks of the first task after each flip, flip number)``.
    """
    if n_new <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # first real task of batch m (m >= 1) is number 65536 + (m-1)*65535; few flips, so filter all
    last = n_before + n_new - 1
    hi_m = 0 if last < TASK_ID_SPACE else (last - TASK_ID_SPACE) // (TASK_ID_SPACE - 1) + 1
    m = np.arange(1, hi_m + 1, dtype=np.int64)
    first_n = TASK_ID_SPACE + (m - 1) * (TASK_ID_SPACE - 1)
    keep = first_n >= n_before
    return first_n[keep] - n_before, m[keep]

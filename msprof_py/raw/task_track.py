"""MsprofRuntimeTrack: 64-byte compact record in ``(un)aging.compact.task_track.slice_N``.

Reported by the Runtime for every task it submits (and FLIP_TASK when a stream's 16-bit task
id wraps).  The u32 taskId is split as msprof's Python parser does: low 16 bits = task id,
high 16 bits = batch id (flip count).  ``task_type`` and ``kernel_name`` are hashes
(type_info_dic / hash_dic).  ``timestamp`` is the host counter when the task was submitted.
"""
from __future__ import annotations

from msprof_py.raw.common import COMPACT_SIZE, host_dtype

FILE_TAG = "compact.task_track"
DTYPE = host_dtype(
    [
        ("device_id", "<u2", 24),  # high 4 bits dev type (0 NPU), low 12 bits device id
        ("stream_id", "<u2", 26),
        ("task_id", "<u2", 28),
        ("batch_id", "<u2", 30),
        ("task_type", "<u8", 32),
        ("kernel_name", "<u8", 40),
        ("num_blocks", "<u2", 48),  # MsporfKernelInfo.numBlocks
        ("args_size", "<u2", 50),
        ("ratio_mode", "u1", 52),  # bits 0-2: MIX ratio (mix blocks per block), bits 3-4: schedMode
    ],
    COMPACT_SIZE,
)
# runtime-level type ids the simulator registers in type_info_dic (5000_<id>:<name>)
RUNTIME_TASK_TYPES: dict[int, str] = {
    0: "KERNEL_AICORE",
    1: "KERNEL_AIVEC",
    2: "KERNEL_MIX_AIC",
    3: "KERNEL_MIX_AIV",
    4: "KERNEL_AICPU",
    5: "MEMCPY_ASYNC",
    6: "EVENT_RECORD",
    7: "EVENT_WAIT",
    8: "FLIP_TASK",
    9: "MAINTENANCE",
    10: "PROFILER_TRACE_EX",
    11: "HCCL",
    12: "NOTIFY_RECORD",
    13: "NOTIFY_WAIT",
    14: "MODEL_EXECUTE",
}
FLIP_TASK = 8

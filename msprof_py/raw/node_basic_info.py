"""MsprofNodeBasicInfo: 64-byte compact record in ``(un)aging.compact.node_basic_info.slice_N``.

Reported by GE at the Node-level ``launch`` of every op.  unaging = static graph op
(reported once at model load), aging = dynamic / single op.  ``op_name``/``op_type`` are
hashes.  ``block_num``: low 16 bits block dim, high 16 bits mix block dim.
"""
from __future__ import annotations

from msprof_py.raw.common import COMPACT_SIZE, host_dtype

FILE_TAG = "compact.node_basic_info"
DTYPE = host_dtype(
    [
        ("op_name", "<u8", 24),
        ("task_type", "<u4", 32),  # GeTaskType, see GE_TASK_TYPES
        ("op_type", "<u8", 36),
        ("block_num", "<u4", 44),
        ("op_flag", "<u4", 48),  # bit 0: HF32 eligible
        ("op_state", "u1", 52),  # 1 dynamic, 0 static
    ],
    COMPACT_SIZE,
)
GE_TASK_TYPES: dict[int, str] = {
    0: "AI_CORE",
    1: "AI_CPU",
    2: "AI_VECTOR_CORE",
    3: "WRITE_BACK",
    4: "MIX_AIC",
    5: "MIX_AIV",
    6: "FFTS_PLUS",
    7: "DSA_SQE",
    8: "DVPP",
    9: "HCCL",
    10: "FUSION",
    11: "INVALID",
}
GE_TASK_TYPE_IDS: dict[str, int] = {v: k for k, v in GE_TASK_TYPES.items()}

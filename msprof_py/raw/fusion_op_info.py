"""ProfFusionOpInfo: 256-byte additional record in ``(un)aging.additional.fusion_op_info.slice_N``.

Which original ops GE fused into one op, and its memory sizes in bytes.
"""
from __future__ import annotations

from msprof_py.raw.common import ADDITIONAL_SIZE, host_dtype

FILE_TAG = "additional.fusion_op_info"
MAX_FUSED = 8
DTYPE = host_dtype(
    [
        ("op_name", "<u8", 24),
        ("fusion_op_num", "<u4", 32),
        ("input_mem", "<u8", 36),
        ("output_mem", "<u8", 44),
        ("weight_mem", "<u8", 52),
        ("workspace_mem", "<u8", 60),
        ("total_mem", "<u8", 68),
        ("fusion_op_ids", ("<u8", (MAX_FUSED,)), 76),
    ],
    ADDITIONAL_SIZE,
)

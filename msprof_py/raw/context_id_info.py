"""MsprofContextIdInfo: 256-byte additional record in ``(un)aging.additional.context_id_info.slice_N``.

The FFTS+/MIX context ids of an op's task; the join expands a host task into one row per id.
"""
from __future__ import annotations

from msprof_py.raw.common import ADDITIONAL_SIZE, host_dtype

FILE_TAG = "additional.context_id_info"
MAX_CTX_IDS = 55
DTYPE = host_dtype(
    [("op_name", "<u8", 24), ("ctx_id_num", "<u4", 32), ("ctx_ids", ("<u4", (MAX_CTX_IDS,)), 36)],
    ADDITIONAL_SIZE,
)

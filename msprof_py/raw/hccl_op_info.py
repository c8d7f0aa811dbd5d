"""MsprofHcclOPInfo: 64-byte compact record in ``(un)aging.compact.hccl_op_info.slice_N``.

One record per communication op (all-reduce, ...): relay/retry flags, data type, algorithm
(hash of a "-"-joined phase list), element count, group name hash.
"""
from __future__ import annotations

from msprof_py.raw.common import COMPACT_SIZE, host_dtype

FILE_TAG = "compact.hccl_op_info"
DTYPE = host_dtype(
    [("flags", "u1", 24), ("data_type", "u1", 25), ("alg_type", "<u8", 26), ("count", "<u8", 34),
     ("group_name", "<u8", 42)],
    COMPACT_SIZE,
)

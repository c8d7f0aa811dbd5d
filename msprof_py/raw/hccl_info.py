"""MsprofHcclInfo: 256-byte additional record in ``(un)aging.additional.hccl_info.slice_N``.

One record per communication sub-task (level 5500, reported under the HCCL-level API).
"""
from __future__ import annotations

from msprof_py.raw.common import ADDITIONAL_SIZE, host_dtype

FILE_TAG = "additional.hccl_info"
DTYPE = host_dtype(
    [
        ("item_id", "<u8", 24),
        ("ccl_tag", "<u8", 32),
        ("group_name", "<u8", 40),
        ("local_rank", "<u4", 48),
        ("remote_rank", "<u4", 52),
        ("rank_size", "<u4", 56),
        ("work_flow_mode", "<u4", 60),
        ("plane_id", "<u4", 64),
        ("ctx_id", "<u4", 68),
        ("notify_id", "<u8", 72),
        ("stage", "<u4", 80),
        ("role", "<u4", 84),  # 0 dst, 1 src
        ("duration_estimated", "<f8", 88),  # us
        ("src_addr", "<u8", 96),
        ("dst_addr", "<u8", 104),
        ("data_size", "<u8", 112),  # bytes
        ("op_type", "<u4", 120),  # 0 sum, 1 mul, 2 max, 3 min
        ("data_type", "<u4", 124),  # 0 INT8, 1 INT16, 2 INT32, 3 FP16, 4 FP32, 5 INT64, 6 UINT64
        ("link_type", "<u4", 128),  # 0 OnChip, 1 HCCS, 2 PCIe, 3 RoCE, 4 SIO
        ("transport_type", "<u4", 132),  # 0 SDMA, 1 RDMA, 2 LOCAL
        ("rdma_type", "<u4", 136),
    ],
    ADDITIONAL_SIZE,
)

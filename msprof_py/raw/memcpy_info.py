"""MsprofMemcpyInfo: 64-byte compact record in ``(un)aging.compact.memcpy_info.slice_N``.

Reported with every MEMCPY_ASYNC task: bytes copied, the largest copy per task, direction.
"""
from __future__ import annotations

from msprof_py.raw.common import COMPACT_SIZE, host_dtype

FILE_TAG = "compact.memcpy_info"
DTYPE = host_dtype(
    [("data_size", "<u8", 24), ("max_size", "<u8", 32), ("direction", "<u2", 40)],
    COMPACT_SIZE,
)
DIRECTIONS: dict[int, str] = {0: "host to host", 1: "host to device", 2: "device to host",
                              3: "device to device", 4: "managed memory", 5: "addr device to device",
                              6: "host to device ex", 7: "device to host ex"}

"""MsprofTensorInfo: 256-byte additional record in ``(un)aging.additional.tensor_info.slice_N``.

Up to 5 tensors per record (ops with more span several records, same op_name and timestamp).
Each tensor: type (0 input, 1 output), format (low 8 bits format, bits 8-23 sub-format),
data type, shape[8] (0 = unused dimension).
"""
from __future__ import annotations

import numpy as np

from msprof_py.raw.common import ADDITIONAL_SIZE, host_dtype

FILE_TAG = "additional.tensor_info"
MAX_TENSORS = 5
SHAPE_LEN = 8
TENSOR_DTYPE = np.dtype([("tensor_type", "<u4"), ("format", "<u4"), ("data_type", "<u4"),
                         ("shape", "<u4", (SHAPE_LEN,))])  # 44 bytes, naturally packed
DTYPE = host_dtype(
    [("op_name", "<u8", 24), ("tensor_num", "<u4", 32), ("tensors", (TENSOR_DTYPE, (MAX_TENSORS,)), 36)],
    ADDITIONAL_SIZE,
)
INPUT = 0
OUTPUT = 1
# GE data types and formats shown in op_summary
DATA_TYPES: dict[int, str] = {0: "FLOAT", 1: "FLOAT16", 2: "INT8", 3: "INT32", 4: "UINT8", 6: "INT16",
                              7: "UINT16", 8: "UINT32", 9: "INT64", 10: "UINT64", 11: "DOUBLE", 12: "BOOL",
                              27: "BF16"}
FORMATS: dict[int, str] = {0: "NCHW", 1: "NHWC", 2: "ND", 3: "NC1HWC0", 4: "FRACTAL_Z", 29: "FRACTAL_NZ",
                           30: "NCDHW", 32: "NDC1HWC0", 33: "FRACTAL_Z_3D"}

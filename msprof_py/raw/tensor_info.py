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
# GE data types (ge::DataType) as msprof prints them (both analyses: the newer types keep their
# ``DT_`` prefix, e.g. 27 -> ``DT_BF16``), and formats shown in op_summary
DATA_TYPES: dict[int, str] = {
    0: "FLOAT", 1: "FLOAT16", 2: "INT8", 3: "INT32", 4: "UINT8", 6: "INT16", 7: "UINT16", 8: "UINT32",
    9: "INT64", 10: "UINT64", 11: "DOUBLE", 12: "BOOL", 13: "STRING", 14: "DUAL_SUB_INT8", 15: "DUAL_SUB_UINT8",
    16: "COMPLEX64", 17: "COMPLEX128", 18: "QINT8", 19: "QINT16", 20: "QINT32", 21: "QUINT8", 22: "QUINT16",
    23: "RESOURCE", 24: "STRING_REF", 25: "DUAL", 26: "DT_VARIANT", 27: "DT_BF16", 28: "DT_UNDEFINED",
    29: "DT_INT4", 30: "DT_UINT1", 31: "DT_INT2", 32: "DT_UINT2", 33: "DT_COMPLEX32", 34: "DT_HIFLOAT8",
    35: "DT_FLOAT8_E5M2", 36: "DT_FLOAT8_E4M3FN", 37: "DT_FLOAT8_E8M0", 38: "DT_FLOAT6_E3M2",
    39: "DT_FLOAT6_E2M3", 40: "DT_FLOAT4_E2M1", 41: "DT_FLOAT4_E1M2"}
FORMATS: dict[int, str] = {0: "NCHW", 1: "NHWC", 2: "ND", 3: "NC1HWC0", 4: "FRACTAL_Z", 29: "FRACTAL_NZ",
                           30: "NCDHW", 32: "NDC1HWC0", 33: "FRACTAL_Z_3D"}

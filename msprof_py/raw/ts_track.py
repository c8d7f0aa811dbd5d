"""Device ts_track records: 40 bytes each in ``ts_track.data.{dev}.slice_N``.

Common prefix: u8 resv, u8 func_type (the tag), u16 resv, u32 resv, u64 timestamp (syscnt).
func_type 10 step trace, 11 memcpy, 12 task type, 14 task flip, 15 block num.
Each kind has its own dtype over the same 40 bytes; read ``func_type`` first (PREFIX_DTYPE),
then view the matching rows with the kind's dtype.
"""
from __future__ import annotations

from msprof_py.raw.common import packed_dtype

FILE_TAG = "ts_track.data"
RECORD_SIZE = 40
_PREFIX = [("resv0", "u1", 0), ("func_type", "u1", 1), ("resv1", "<u2", 2), ("resv2", "<u4", 4),
           ("timestamp", "<u8", 8)]

PREFIX_DTYPE = packed_dtype(_PREFIX, RECORD_SIZE)
# every byte covered (the body opaque): safe to copy, index and concatenate mixed kinds
RAW_DTYPE = packed_dtype(_PREFIX + [("body", "V24", 16)], RECORD_SIZE)
STEP_TRACE_DTYPE = packed_dtype(
    _PREFIX + [("index_id", "<u8", 16), ("model_id", "<u8", 24), ("stream_id", "<u2", 32),
               ("task_id", "<u2", 34), ("tag_id", "<u2", 36), ("resv3", "<u2", 38)],
    RECORD_SIZE,
)
TASK_TYPE_DTYPE = packed_dtype(
    _PREFIX + [("stream_id", "<u2", 16), ("task_id", "<u2", 18), ("task_type", "<u2", 20),
               ("task_state", "u1", 22), ("resv3", "u1", 23), ("resv4", "<u8", 24), ("resv5", "<u8", 32)],
    RECORD_SIZE,
)
TASK_FLIP_DTYPE = packed_dtype(
    _PREFIX + [("stream_id", "<u2", 16), ("flip_num", "<u2", 18), ("resv3", "<u2", 20),
               ("task_id", "<u2", 22), ("resv4", ("u1", (16,)), 24)],
    RECORD_SIZE,
)
STREAM_ID_MASK = 0x07FF  # the device reports stream ids in the low 11 bits

FUNC_STEP_TRACE = 10
FUNC_MEMCPY = 11
FUNC_TASK_TYPE = 12
FUNC_TASK_FLIP_OLD = 13
FUNC_TASK_FLIP = 14
FUNC_BLOCK_NUM = 15

# step-trace tag ids
TAG_MODEL_START = 0
TAG_MODEL_END = 1
TAG_FP = 2
TAG_BP = 3
TAG_ITER_END = 4
TAG_ALL_REDUCE_BASE = 10000  # even = start, odd = end
TAG_GET_NEXT_BASE = 20000
TAG_STEP_START = 60000
TAG_STEP_END = 60001
# flip_num of a stream-destroy flip (still increments the batch)
FLIP_STREAM_DESTROY = 65535

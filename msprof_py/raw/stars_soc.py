"""STARS ACSQ task logs: 64-byte device records in ``stars_soc.data.{dev}.slice_N``.

Word 0 (u16) packs ``func_type`` bits [5:0] (0 = ACSQ start, 1 = ACSQ end), ``cnt`` bits [9:6]
and the SQE ``task_type`` bits [15:10].  ``timestamp`` is the device syscnt (hwts clock).
Layout (fmt ``4HQHH11L``): word0, resv, stream_id, task_id, timestamp, acc/acsq id, resv, 11 x u32.
"""
from __future__ import annotations

import numpy as np

from msprof_py.raw.common import packed_dtype

FILE_TAG = "stars_soc.data"
RECORD_SIZE = 64
DTYPE = packed_dtype(
    [
        ("word0", "<u2", 0),
        ("resv0", "<u2", 2),
        ("stream_id", "<u2", 4),
        ("task_id", "<u2", 6),
        ("timestamp", "<u8", 8),
        ("acc_id", "<u2", 16),  # low 6 bits acc id, bits 6..12 acsq id
        ("resv1", "<u2", 18),
        ("resv2", ("<u4", (11,)), 20),
    ],
    RECORD_SIZE,
)
# bytes 2..3 of every STARS log (``resv0`` above) hold this magic number; msprof's parsers
# (msparser/stars/stars_log_parser.py, csrc .../stars_soc_parser.cpp) drop a log without it
MAGIC = 0x6BD3
FUNC_ACSQ_START = 0
FUNC_ACSQ_END = 1
FUNC_FFTS_START = 0b100010
FUNC_FFTS_END = 0b100011

SQE_TYPES: dict[int, str] = {
    0: "AI_CORE", 1: "AI_CPU", 2: "AIV_SQE", 3: "PLACE_HOLDER_SQE", 4: "EVENT_RECORD_SQE",
    5: "EVENT_WAIT_SQE", 6: "NOTIFY_RECORD_SQE", 7: "NOTIFY_WAIT_SQE", 8: "WRITE_VALUE_SQE",
    9: "VQ6_SQE", 10: "TOF_SQE", 11: "SDMA_SQE", 12: "VPC_SQE", 13: "JPEGE_SQE", 14: "JPEGD_SQE",
    15: "DSA_SQE", 16: "ROCCE_SQE", 17: "PCIE_DMA_SQE", 18: "HOST_CPU_SQE", 19: "CDQM_SQE",
    20: "C_CORE_SQE",
}
SQE_TYPE_IDS: dict[str, int] = {v: k for k, v in SQE_TYPES.items()}


def pack_word0(func_type: np.ndarray | int, cnt: np.ndarray | int, task_type: np.ndarray | int) -> np.ndarray:
    """Vectorised ``func_type | cnt << 6 | task_type << 10`` as uint16."""
    return (np.asarray(func_type, np.uint16) & 0x3F) | ((np.asarray(cnt, np.uint16) & 0xF) << 6) | (
        (np.asarray(task_type, np.uint16) & 0x3F) << 10)


def func_type(word0: np.ndarray) -> np.ndarray:
    return word0 & 0x3F


def sqe_type(word0: np.ndarray) -> np.ndarray:
    return word0 >> 10


PLACE_HOLDER_SQE = 3
EVENT_RECORD_SQE = 4


def physical_ids(stream_raw: np.ndarray, task_raw: np.ndarray, expand_status: int = 0,
                 sqe: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Decode (stream id, task id) of STARS logs as msprof does (stars_common.h GetStreamId /
    GetTaskId), for ACSQ and FFTS+ logs alike.

    ``expand_status`` 0 (no stream expansion):
    bit 12 of the raw stream id set: stream = raw % 2048, task = (task & 0x1FFF) | (stream & 0xE000);
    else bit 13 set: stream = task & 0x0FFF, task = (stream & 0x0FFF) | (task & 0xF000);
    else stream = raw % 2048, task = raw task.

    ``expand_status`` 1 (host ``compact.expand_stream_spec``, 15-bit stream ids): PLACE_HOLDER /
    EVENT_RECORD SQEs: stream = raw & 0x7FFF, task = raw task; else bit 15 of the raw stream id
    set: the two ids are swapped -- stream = task & 0x7FFF, task = (task & 0x8000) | (stream &
    0x7FFF) (raw 32769 / 46 is stream 46, task 1); else stream = raw & 0x7FFF, task = raw task.
    """
    s = np.asarray(stream_raw, np.uint16)
    t = np.asarray(task_raw, np.uint16)
    if expand_status == 1:
        plain = np.isin(np.asarray(sqe), [PLACE_HOLDER_SQE, EVENT_RECORD_SQE]) if sqe is not None \
            else np.zeros(len(s), bool)
        swap = ~plain & ((s & 0x8000) != 0)
        stream = np.where(swap, t & 0x7FFF, s & 0x7FFF)
        task = np.where(swap, (t & 0x8000) | (s & 0x7FFF), t)
        return stream.astype(np.uint16), task.astype(np.uint16)
    b12 = (s & 0x1000) != 0
    b13 = ~b12 & ((s & 0x2000) != 0)
    stream = np.where(b13, t & 0x0FFF, s) % 2048
    task = np.where(b12, (t & 0x1FFF) | (s & 0xE000), np.where(b13, (s & 0x0FFF) | (t & 0xF000), t))
    return stream.astype(np.uint16), task.astype(np.uint16)

# FFTS+ sub-task logs share the stars_soc stream (fmt ``4HQ4H10L``): func_type 34 start / 35 end;
# sub_task_id is the context id the host's context_id_info refers to.
FFTS_DTYPE = packed_dtype(
    [
        ("word0", "<u2", 0),
        ("resv0", "<u2", 2),
        ("stream_id", "<u2", 4),
        ("task_id", "<u2", 6),
        ("timestamp", "<u8", 8),
        ("sub_task_type", "<u2", 16),  # low 8 bits
        ("sub_task_id", "<u2", 18),  # = context id
        ("ffts_type", "<u2", 20),  # high 3 bits
        ("thread_id", "<u2", 22),
        ("resv1", ("<u4", (10,)), 24),
    ],
    RECORD_SIZE,
)
FFTS_SUBTASK_TYPES: dict[int, str] = {
    0: "AIC", 1: "AIV", 3: "Notify Wait", 4: "Notify Record", 5: "Write Value", 6: "MIX_AIC", 7: "MIX_AIV",
    8: "SDMA", 9: "Data Context", 10: "Invalidate Data Context", 11: "Writeback Data Context", 12: "AI_CPU",
    13: "Load Context", 15: "DSA",
}

"""Task-based PMU records: 128-byte device records in ``ffts_profile.data.{dev}.slice_N``.

Two kinds share the stream, told apart by ``func_type`` (low 6 bits of word 0):

* context PMU (``0b101000`` = 40): one per task (or FFTS+ context) on its main core: total
  cycles, the 8 counters of the configured events, start/end syscnt;
* block PMU (``0b101001`` = 41): one per block (per core) of MIX tasks, ``core_type`` 0 = AIC,
  1 = AIV.

Layout (msprof ``ContextPmu`` / ``BlockPmu``, Python fmt ``4HQ4HQ12Q``): word0, resv, stream_id,
task_id, resv u64, word5 (sub-task type bits 0..7, overflow flag bit 10; block: type low 8 bits),
sub_task_id (= context id), word7 (context: ffts type bits 13..15; block: byte 20 core type bit 0
/ core id bits 1..7, byte 21 ffts type bits 5..7 - the same 3 bits), ..., total_cycle u64 at
32, 8 x u64 counters at 48, start/end syscnt at 112/120.
"""
from __future__ import annotations

import numpy as np

from msprof_py.raw.common import packed_dtype

FILE_TAG = "ffts_profile.data"
RECORD_SIZE = 128
FUNC_CONTEXT_PMU = 0b101000
FUNC_BLOCK_PMU = 0b101001
FFTS_TYPE_NORMAL = 0  # traditional AI Core task
FFTS_TYPE_PLUS = 4  # FFTS+ context (context id valid)
SUBTASK_MIX_AIC = 6
SUBTASK_MIX_AIV = 7
N_COUNTERS = 8

DTYPE = packed_dtype(
    [
        ("word0", "<u2", 0),
        ("resv0", "<u2", 2),
        ("stream_id", "<u2", 4),
        ("task_id", "<u2", 6),
        ("resv1", "<u8", 8),
        ("word5", "<u2", 16),
        ("sub_task_id", "<u2", 18),
        ("word7", "<u2", 20),
        ("resv2", "<u2", 22),
        ("resv3", "<u4", 24),
        ("sub_block_id", "<u2", 28),
        ("block_id", "<u2", 30),
        ("total_cycle", "<u8", 32),
        ("resv4", "<u8", 40),
        ("pmu", ("<u8", (N_COUNTERS,)), 48),
        ("start", "<u8", 112),
        ("end", "<u8", 120),
    ],
    RECORD_SIZE,
)


def func_type(word0: np.ndarray) -> np.ndarray:
    return np.asarray(word0) & 0x3F


def ffts_type(word7: np.ndarray) -> np.ndarray:
    return np.asarray(word7) >> 13


def pack_word0(func: int | np.ndarray, cnt: int | np.ndarray) -> np.ndarray:
    """``func_type | (cnt & 0xF) << 6`` (cnt: the 4-bit rolling counter msprof checks)."""
    return (np.asarray(func, np.uint16) & 0x3F) | ((np.asarray(cnt, np.uint16) & 0xF) << 6)

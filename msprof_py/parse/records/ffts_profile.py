"""``ffts_profile.data``: task-based PMU records (128 B) -> context and block PMU rows.

Ids are decoded with the STARS rules (``raw.stars_soc.physical_ids``, the PROF dir's expandStatus); the
context id is the sub-task id for FFTS+ records (ffts type 4) and 4294967295 otherwise, as in
msprof's ``Chip4PmuParseItem``.  Context records with the overflow flag set are dropped with a
warning (msprof: "Total_cycle value is invalid"); records of other func types are counted and
reported once.
"""
from __future__ import annotations

import numpy as np

from msprof_py.parse.records.parts import DecodeContext, Parts
from msprof_py.raw import ffts_profile as raw
from msprof_py.raw.common import INVALID_U32
from msprof_py.raw.stars_soc import physical_ids

# accelerator of a record (msprof GetAcceleratorTypeByType)
AIC, AIV, MIX_AIC, MIX_AIV = 0, 1, 2, 3
ACCEL_NAMES = ("AIC", "AIV", "MIX_AIC", "MIX_AIV")


def accelerator(sub_task_type: np.ndarray, ffts_type: np.ndarray) -> np.ndarray:
    plus = ffts_type == raw.FFTS_TYPE_PLUS
    out = np.full(len(ffts_type), AIV, np.int8)
    out[(ffts_type == raw.FFTS_TYPE_NORMAL) | (plus & (sub_task_type == 0))] = AIC
    out[plus & (sub_task_type == raw.SUBTASK_MIX_AIC)] = MIX_AIC
    out[plus & (sub_task_type == raw.SUBTASK_MIX_AIV)] = MIX_AIV
    return out


def decode(dec: Parts, ctx: DecodeContext) -> dict[str, np.ndarray]:
    """Columns (one row per context or block record, file order): ``is_block`` bool,
    stream_id, task_id, context_id, accel (AIC/AIV/MIX_AIC/MIX_AIV code), core_type (block
    records: 0 AIC, 1 AIV), total_cycle u64, pmu (n, 8) u64, start, end (syscnt)."""
    warnings = ctx.warnings
    func = raw.func_type(dec.col("word0"))
    is_ctx = func == raw.FUNC_CONTEXT_PMU
    is_blk = func == raw.FUNC_BLOCK_PMU
    other = ~(is_ctx | is_blk)
    if other.any():
        path, off = dec.where(int(np.argmax(other)))
        warnings.warn(f"{path}: byte {off}: {int(other.sum())} PMU record(s) of unknown func type "
                      f"{int(func[np.argmax(other)])} ignored (first one here)")
    word5 = dec.col("word5")
    ov = is_ctx & (((word5 >> 10) & 1) == 1)
    if ov.any():
        path, off = dec.where(int(np.argmax(ov)))
        warnings.warn(f"{path}: byte {off}: {int(ov.sum())} PMU record(s) with the counter overflow flag "
                      "dropped (msprof: total cycles invalid)")
    keep = np.flatnonzero((is_ctx & ~ov) | is_blk)
    stream, task = physical_ids(dec.col("stream_id")[keep], dec.col("task_id")[keep], ctx.expand_status)
    word7 = dec.col("word7")[keep]
    fft = raw.ffts_type(word7)
    sub = (word5[keep] & 0xFF).astype(np.int64)
    ctx = np.where(fft == raw.FFTS_TYPE_PLUS, dec.col("sub_task_id")[keep].astype(np.int64), INVALID_U32)
    return {
        "is_block": is_blk[keep],
        "stream_id": stream.astype(np.int64),
        "task_id": task.astype(np.int64),
        "context_id": ctx,
        "accel": accelerator(sub, fft),
        "core_type": (word7 & 1).astype(np.int8),
        "total_cycle": dec.col("total_cycle")[keep],
        "pmu": dec.col("pmu")[keep],
        "start": dec.col("start")[keep],
        "end": dec.col("end")[keep],
    }

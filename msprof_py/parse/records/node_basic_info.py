"""``compact.node_basic_info``: GE op description at the Node-level launch (64 B).

unaging stream = static graph op (reported once at model load), aging = dynamic op; msprof's
Python path sets the op state from the file kind.  block_num: low 16 bits block dim; mix
block num = high 16 bits x low 16 bits.  op_flag bit 0 = HF32 eligible.
"""
from __future__ import annotations

import numpy as np

from msprof_py.parse import cats
from msprof_py.parse.keys import unique_inverse

from msprof_py.parse.records.parts import DecodeContext, Parts
from msprof_py.raw.node_basic_info import GE_TASK_TYPES


def decode(parts: Parts, ctx: DecodeContext) -> dict[str, np.ndarray]:
    dicts = ctx.dicts
    block = parts.col("block_num", np.uint32)
    low = (block & 0xFFFF).astype(np.int64)
    high = (block >> 16).astype(np.int64)
    ge = parts.col("task_type", np.uint32)
    uniq, inv = unique_inverse(ge)
    ge_cat = cats.from_codes(inv, [GE_TASK_TYPES.get(int(v), str(int(v))) for v in uniq])
    return {
        "thread_id": parts.col("thread_id", np.uint32),
        "timestamp": parts.col("timestamp", np.uint64),
        "op_name": dicts.resolve_hash(parts.col("op_name", np.uint64)),
        "task_type": ge_cat,
        "op_type": dicts.resolve_hash(parts.col("op_type", np.uint64)),
        "block_num": low,
        "mix_block_num": high * low,
        "hf32_eligible": cats.from_codes((parts.col("op_flag", np.uint32) & 1).astype(np.int32), ["NO", "YES"]),
        "op_state": cats.from_codes(parts.aging().astype(np.int32), ["static", "dynamic"]),
    }

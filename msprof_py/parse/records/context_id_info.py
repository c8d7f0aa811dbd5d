"""``additional.context_id_info``: the FFTS+/MIX context ids of an op's task (256 B).

Exploded to one row per (record, context id) without a Python loop.
"""
from __future__ import annotations

import numpy as np

from msprof_py.parse.records.parts import DecodeContext, Parts
from msprof_py.raw.context_id_info import MAX_CTX_IDS


def decode(parts: Parts, ctx: DecodeContext) -> dict[str, np.ndarray]:
    """Per record: thread_id, timestamp, op_name; plus ``ctx_record`` / ``ctx_id`` pairs."""
    num = np.minimum(parts.col("ctx_id_num", np.uint32), MAX_CTX_IDS)
    ids = parts.col("ctx_ids")
    rec, slot = np.nonzero(np.arange(MAX_CTX_IDS)[None, :] < num[:, None]) if len(num) else (
        np.zeros(0, np.int64), np.zeros(0, np.int64))
    return {
        "thread_id": parts.col("thread_id", np.uint32),
        "timestamp": parts.col("timestamp", np.uint64),
        "op_name": ctx.dicts.resolve_hash(parts.col("op_name", np.uint64)),
        "ctx_record": rec.astype(np.int64),
        "ctx_id": ids[rec, slot].astype(np.int64) if len(rec) else np.zeros(0, np.int64),
    }

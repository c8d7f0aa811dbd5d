"""``additional.msproftx``: msproftx marks and ranges (info type 0) and MarkEx segments (type 1).

Columns in file order: ``info_type``, ``seg_idx``, ``pid``, ``tid``, ``category``,
``event_type`` (msprof's names: marker, push/pop, start/end, marker_ex), ``payload_type``,
``payload_value``, ``start`` / ``end`` (host counter ticks), ``mark_id``, ``domain`` (the hash
resolved through hash_dic, msprof's "invalid" when unknown), ``message_type``, ``message``.
"""
from __future__ import annotations

import numpy as np

from msprof_py.parse.records.aicpu import _text
from msprof_py.parse.records.parts import DecodeContext, Parts
from msprof_py.raw import msproftx as raw


def decode(parts: Parts, ctx: DecodeContext) -> dict[str, np.ndarray]:
    ev = parts.col("event_type", np.int64)
    uniq, inv = np.unique(ev, return_inverse=True)
    names = np.array([raw.EVENT_NAMES.get(int(u), "") for u in uniq], dtype=object)
    domain = parts.col("domain", np.uint64)
    dom_names = np.asarray(ctx.dicts.resolve_hash(domain, "invalid"), dtype=object) if len(domain) else np.zeros(0, object)
    return {
        "info_type": parts.col("info_type", np.int64), "seg_idx": parts.col("seg_idx", np.int64),
        "pid": parts.col("process_id", np.int64), "tid": parts.col("tx_thread_id", np.int64),
        "category": parts.col("category", np.int64),
        "event_type": names[inv] if len(ev) else np.zeros(0, object),
        "payload_type": parts.col("payload_type", np.int64), "payload_value": parts.col("payload", np.uint64),
        "start": parts.col("start", np.uint64), "end": parts.col("end", np.uint64),
        "mark_id": parts.col("mark_id", np.uint64), "domain": dom_names,
        "message_type": parts.col("message_type", np.int64), "message": _text(parts.col("message")),
    }

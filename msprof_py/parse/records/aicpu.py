"""``aicpu.data``: AI CPU kernel runs (type node) and data-preprocess dequeues (type dp).

Returns ``{"node": {...}, "dp": {...}}`` columns in file order.  Node: ``stream_id``, ``task_id``,
``start_tick`` / ``end_tick`` (device syscnt of the kernel run), ``compute_us`` / ``memcpy_us``
/ ``dispatch_us`` (µs, as msprof computes them from the µs fields), ``total_ticks`` (after-run
minus submit tick).  DP: ``timestamp`` (device CLOCK_MONOTONIC_RAW ns), ``action``, ``source``,
``size``.  Records of other types (model / MindSpore / KFC kinds) are counted in one warning.
"""
from __future__ import annotations

import numpy as np

from msprof_py.parse.records.parts import DecodeContext, Parts
from msprof_py.raw import aicpu as raw


def _text(b: np.ndarray) -> np.ndarray:
    """NUL-terminated byte fields -> str (the bytes up to the first NUL, invalid UTF-8 dropped)."""
    uniq, inv = np.unique(b, return_inverse=True)
    names = np.array([u.split(b"\x00", 1)[0].decode("utf-8", "ignore") for u in uniq.tolist()], dtype=object)
    return names[inv] if len(b) else np.zeros(0, object)


def decode(parts: Parts, ctx: DecodeContext) -> dict[str, dict[str, np.ndarray]]:
    kind = parts.col("type", np.int64)
    node, dp = kind == raw.TYPE_NODE, kind == raw.TYPE_DP
    other = ~(node | dp)
    if other.any():
        path, off = parts.where(int(np.argmax(other)))
        ctx.warnings.warn(f"{path}: byte {off}: {int(other.sum())} AI CPU record(s) of other types "
                          f"(first type {int(kind[other][0])}) not used")

    def n(name: str, dtype=np.int64) -> np.ndarray:
        return parts.col(name, dtype)[node]

    comp, mem_s, mem_e = n("compute_start_us"), n("memcpy_start_us"), n("memcpy_end_us")
    out_node = {
        "stream_id": n("stream_id"), "task_id": n("task_id"),
        "start_tick": parts.col("run_start_tick", np.uint64)[node], "end_tick": parts.col("run_end_tick", np.uint64)[node],
        "compute_us": (mem_s - comp).astype(np.float64), "memcpy_us": (mem_e - mem_s).astype(np.float64),
        "dispatch_us": n("dispatch_time_us").astype(np.float64),
        "total_ticks": n("tick_after_run") - n("submit_tick"),
    }
    out_dp = {
        "timestamp": parts.col("timestamp", np.int64)[dp],
        "action": _text(parts.col("action", view=raw.DP_DTYPE)[dp]),
        "source": _text(parts.col("source", view=raw.DP_DTYPE)[dp]),
        "size": parts.col("size", np.int64, view=raw.DP_DTYPE)[dp],
    }
    return {"node": out_node, "dp": out_dp}

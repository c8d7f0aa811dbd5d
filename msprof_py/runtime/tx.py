"""msproftx records of a script: marks, push/pop and start/stop ranges (``acl.prof``).

CANN's ``aclprofMark`` / ``aclprofPush`` / ``aclprofPop`` / ``aclprofRangeStart`` /
``aclprofRangeStop`` report one ``MsprofTxInfo`` (:mod:`msprof_py.raw.msproftx`, info type 0)
per mark or per finished range: the message, the event type (marker / push/pop /
start/end), the calling process and thread, start / end as host counter ticks (a mark has
start == end).  :class:`TxRecorder` builds them; the timestamps are simulator ns here and become
host ticks when the host log is flushed (the header's) or right away (start / end).
"""
from __future__ import annotations

import numpy as np

from msprof_py.errors import WorkloadError
from msprof_py.raw import msproftx as raw
from msprof_py.raw.common import MAGIC, new_records

MARK_COST_NS = 300  # host time a mark / push / pop / range call takes
MAX_OPEN = 1 << 16


class TxError(WorkloadError):
    """A range stopped that was never started, a pop without push, a message too long."""


class TxRecorder:
    """Open ranges and finished records of one process (``pid``) on one thread (``tid``)."""

    def __init__(self, pid: int, tid: int) -> None:
        self.pid, self.tid = pid, tid
        self.next_id = 1
        self.ranges: dict[int, tuple[int, str]] = {}  # range id -> (start ns, message)
        self.stack: list[tuple[int, str]] = []

    def mark(self, t: int, message: str, clock) -> np.ndarray:
        return self._record(t, t, message, raw.EVENT_MARKER, clock)

    def range_start(self, t: int, message: str) -> int:
        _check(message)
        if len(self.ranges) >= MAX_OPEN:
            raise TxError(f"acl.prof: more than {MAX_OPEN} ranges open")
        rid = self.next_id
        self.next_id += 1
        self.ranges[rid] = (t, message)
        return rid

    def range_stop(self, t: int, range_id: int, clock) -> np.ndarray:
        if range_id not in self.ranges:
            raise TxError(f"acl.prof.range_stop: no open range with id {range_id!r}")
        t0, message = self.ranges.pop(range_id)
        return self._record(t0, t, message, raw.EVENT_START_END, clock)

    def push(self, t: int, message: str) -> None:
        _check(message)
        self.stack.append((t, message))

    def pop(self, t: int, clock) -> np.ndarray:
        if not self.stack:
            raise TxError("acl.prof.pop: no range pushed")
        t0, message = self.stack.pop()
        return self._record(t0, t, message, raw.EVENT_PUSH_POP, clock)

    def _record(self, t0: int, t1: int, message: str, event: int, clock) -> np.ndarray:
        _check(message)
        r = new_records(raw.DTYPE, 1)
        r["level"], r["thread_id"], r["timestamp"] = raw.LEVEL, self.tid, t1
        r["stamp_magic"], r["process_id"], r["tx_thread_id"] = MAGIC, self.pid, self.tid
        r["event_type"] = event
        r["start"], r["end"] = clock.host_cnt(np.array([t0, t1], np.int64))
        r["message"] = message.encode()
        return r


def _check(message: str) -> None:
    if not isinstance(message, str):
        raise TxError(f"acl.prof: the message must be a string, got {type(message).__name__}")
    if len(message.encode()) >= raw.MESSAGE_LEN:
        raise TxError(f"acl.prof: message longer than {raw.MESSAGE_LEN - 1} bytes: {message[:40]!r}...")

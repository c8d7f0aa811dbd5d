"""``acl.prof`` (aclprof* msproftx): instant marks, start/stop ranges and push/pop ranges on the
script's thread, at the script's current time.

Each call costs ``MARK_COST_NS`` of host time; a mark or a finished range reports one
``MsprofTxInfo`` record (:class:`msprof_py.runtime.tx.TxRecorder` builds it), an opened range
reports nothing until it is closed.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from msprof_py.runtime.acl.process import Process, current
from msprof_py.runtime.tx import MARK_COST_NS


def _tx_now() -> Process:
    """The process for an msproftx call (a device must be set, as for any acl call)."""
    s = current()
    s.dev()
    return s


def _tx_done(s: Process, recs: np.ndarray | None = None) -> None:
    """Report the finished record ``recs`` (a mark, a closed range) if any; charge the call's host time."""
    if recs is not None:
        s.em.add("additional.msproftx", True, recs)
    s.t += MARK_COST_NS


def _mark(message: str) -> None:
    """``aclprofMark``: an instant mark with ``message`` (< 156 bytes) at the script's current time."""
    s = _tx_now()
    _tx_done(s, s.tx.mark(s.t, message, s.clock))


def _range_start(message: str) -> int:
    """``aclprofRangeStart``: open a range; returns its id for :func:`range_stop`."""
    s = _tx_now()
    rid = s.tx.range_start(s.t, message)
    _tx_done(s)
    return rid


def _range_stop(range_id: int) -> None:
    """``aclprofRangeStop``: close the range ``range_id`` (one start/end record)."""
    s = _tx_now()
    _tx_done(s, s.tx.range_stop(s.t, range_id, s.clock))


def _push(message: str) -> None:
    """``aclprofPush``: open a nested range on this thread."""
    s = _tx_now()
    s.tx.push(s.t, message)
    _tx_done(s)


def _pop() -> None:
    """``aclprofPop``: close the innermost pushed range (one push/pop record)."""
    s = _tx_now()
    _tx_done(s, s.tx.pop(s.t, s.clock))


prof = SimpleNamespace(mark=_mark, range_start=_range_start, range_stop=_range_stop, push=_push, pop=_pop)
mark, range_start, range_stop = _mark, _range_start, _range_stop

"""op_summary ``Task Wait Time(us)`` as msprof's C++ analysis writes it (OpSummaryAssembler::
CalculateWaitTime), for captures msprof exports with its C++ analysis.

msprof sorts the rows of every device together (device id, then start time, both as text), and
for each row but the very first computes ``max(0, start - prev_start - prev_dur)`` in doubles
parsed from the printed µs values, printed with ``std::to_string`` (6 decimals); the first row
keeps ``0``.  The loop does not restart at a device change, so a device's first row is measured
from the last row of the device before it.

The doubles only matter through ``start - prev_start``: both are epoch µs in [2^50, 2^51), where
a double's step is 0.25 µs, so their difference is exact and a multiple of 0.25 µs; the duration
is a 3-decimal value, so the result is exact to the ns and its 6 decimals end in ``000``.  That
is computed here in integers (ns), with no per-row Python.
"""
from __future__ import annotations


import numpy as np
import pandas as pd

from msprof_py.export.session_access import device_ids, of_device
from msprof_py.export.table_writer import Col
from msprof_py.export.views import summary_tasks
from msprof_py.parse.session import Session


def as_double_us(ns: np.ndarray) -> np.ndarray:
    """ns -> the double nearest to the printed µs value (``ns / 1000``, 3 decimals), in µs.

    ``q + r / 1000`` with ``q`` exact: the only rounding is the final one onto the double grid
    (exact ties are ties in both, rounded half-even like strtod)."""
    ns = np.asarray(ns, dtype=np.int64)
    us = ns // 1000
    return us.astype(np.float64) + (ns - us * 1000).astype(np.float64) / 1000.0


def _last_row(session: Session, device_id: int) -> tuple[int, int] | None:
    """(start ns, dur ns) of a device's last op_summary row in start order, None if it has none."""
    t = summary_tasks(session, device_id, ["start_ns", "dur_ns"])
    comm = of_device(session.communication, device_id)
    start = np.concatenate([t["start_ns"].to_numpy(np.int64) if len(t) else np.zeros(0, np.int64),
                            comm["start_ns"].to_numpy(np.int64) if len(comm) else np.zeros(0, np.int64)])
    if len(start) == 0:
        return None
    dur = np.concatenate([t["dur_ns"].to_numpy(np.int64) if len(t) else np.zeros(0, np.int64),
                          comm["dur_ns"].to_numpy(np.int64) if len(comm) else np.zeros(0, np.int64)])
    i = int(np.argsort(start, kind="stable")[-1])
    return int(start[i]), int(dur[i])


def device_facts(session: Session, device_id: int) -> dict[str, object]:
    """What another device's op_summary needs of ``device_id`` (``Session.device_facts``) when
    the devices are exported one at a time: its last row (start, dur) in ns, or None."""
    return {"last_summary_row": _last_row(session, device_id)}


def _previous(session: Session, device_id: int) -> tuple[int, int] | None:
    """The row before ``device_id``'s first row: the last row of the device before it in msprof's
    order (device ids as text: ``"10" < "2"``); None when it is the first row of the file."""
    order = sorted((str(d) for d in device_ids(session)))
    pos = order.index(str(device_id)) if str(device_id) in order else 0
    facts = session.device_facts
    for d in reversed(order[:pos]):
        if facts is not None and int(d) in facts:  # a session of one device: the others' facts
            last = facts[int(d)].get("last_summary_row")
        else:
            last = _last_row(session, int(d))
        if last is not None:
            return last
    return None


def cpp_wait_col(session: Session, device_id: int, start_ns: np.ndarray, dur_ns: np.ndarray) -> Col:
    """The printed wait time of each row of one device's op_summary (rows already in start order):
    :func:`wait_texts`, rendered per row (``%.3f`` of the ns,
    then ``000``; the file's first row ``0``), with no Python string per distinct wait."""
    prev = _previous(session, device_id)
    wait = wait_ns(start_ns, dur_ns, prev)
    first = np.zeros(len(wait), np.uint8)
    if prev is None and len(first):
        first[0] = 1
    return Col.fixed3(wait, special=(first, ["0"]), suffix="000")


def wait_ns(start_ns: np.ndarray, dur_ns: np.ndarray, prev: tuple[int, int] | None) -> np.ndarray:
    """msprof's wait of each row in ns (exact: see the module doc), rows in start order; ``prev``:
    (start, dur) ns of the row before the first one, None when the first row opens the file."""
    p_start = np.concatenate([[prev[0]] if prev else [0], start_ns[:-1]]).astype(np.int64)
    p_dur = np.concatenate([[prev[1]] if prev else [0], dur_ns[:-1]]).astype(np.int64)
    gap_ns = np.rint((as_double_us(start_ns) - as_double_us(p_start)) * 1000.0).astype(np.int64)
    return np.maximum(0, gap_ns - p_dur)


def wait_texts(start_ns: np.ndarray, dur_ns: np.ndarray, prev: tuple[int, int] | None) -> pd.Categorical:
    """msprof's text per row for rows in start order; ``prev``: (start, dur) ns of the row before
    the first one (another device's), None when the first row opens the file (it shows ``0``)."""
    n = len(start_ns)
    wait = wait_ns(start_ns, dur_ns, prev)
    uniq, inverse = np.unique(wait, return_inverse=True)
    texts = [f"{u // 1000}.{u % 1000:03d}000" for u in uniq.tolist()]
    codes = inverse.astype(np.int64)
    if prev is None and n:
        texts.append("0")
        codes[0] = len(texts) - 1
    return pd.Categorical.from_codes(codes, categories=pd.Index(texts, dtype=object))

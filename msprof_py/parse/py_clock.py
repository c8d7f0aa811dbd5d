"""Device task times the way msprof's Python analysis computes them (clocks rule "python"), to the
printed digit.

``InfoConfReader.time_from_syscnt`` (common_func/info_conf_reader.py) works in Python floats:
``float(cnt - dev_cnt × 1e9) / (hwts MHz × 1e6) × 1e9 + host_mon × 1e9`` ns, with ``dev_cnt`` =
dev_start.log cntvct / 1e9 and ``host_mon`` = host_start.log clock_monotonic_raw / 1e9 (seconds
as floats); the AscendTask duration is the float ``end - start``.  Those floats are shown as
``trans_into_local_time``: ``Decimal(str(t)) / 1000 + Decimal(str(offset µs))`` quantized to
0.001 µs (half even) for every start (op_summary, the timeline's ``ts``); op_summary's duration
is ``round(duration / 1000, 3)``.  task_time reads the AscendTask table with ``CAST(start_time AS
INTEGER)``, ``CAST(duration AS INTEGER)`` (viewer/training/task_op_viewer.py up to Ascend/msprof
b36b234d6, 2026-02-05, the msprof that exported the 310B captures): its duration is the float
truncated (``span_ns``), its start the float start truncated (:func:`cut_start_ns`, one ns below
the shown start when the fraction is past a half) and its stop ``trunc(start) + trunc(duration)``.
Checked against the soc_log.db / ascend_task.db msprof left in the 310B captures of
shared/realdata (every start, end and duration equal as floats) and their task_time CSVs.
"""
from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

import numpy as np


def py_round(values: np.ndarray, ndigits: int = 3) -> np.ndarray:
    """Python's ``round(x, ndigits)`` of every float64 (exact on the binary value; numpy's
    ``rint(x * 10**n)`` differs only next to a tie or when ``x * 10**n`` is past 2**52, and
    those values are rounded by Python itself)."""
    v = np.asarray(values, np.float64)
    scale = 10.0 ** ndigits
    y = v * scale
    out = np.rint(y) / scale
    frac = y - np.floor(y)
    doubtful = (np.abs(frac - 0.5) <= 4 * np.spacing(np.abs(y))) | (np.abs(y) >= 2.0**52) | ~np.isfinite(y)
    for i in np.flatnonzero(doubtful):
        out[i] = round(float(v[i]), ndigits)
    return out


def time_ns_float(cnt: np.ndarray, cnt0: int, mhz: float, mono0_ns: int) -> np.ndarray:
    """``time_from_syscnt``: monotonic ns as the Python analysis' float."""
    c = np.asarray(cnt, dtype=np.uint64).astype(np.float64)  # Python's int - float converts the int first
    return (c - float(cnt0) / 1e9 * 1e9) / (mhz * 1e6) * 1e9 + float(mono0_ns) / 1e9 * 1e9


def shown_ns(t: np.ndarray, offset_ns: int) -> np.ndarray:
    """``trans_into_local_time`` in whole ns: ``str(t) + offset`` rounded half even (the offset
    is whole ns); values within an ulp of a tie go through ``Decimal(str(t))`` itself."""
    t = np.asarray(t, np.float64)
    whole = np.floor(t)
    frac = t - whole
    base = whole.astype(np.int64) + np.int64(offset_ns)
    out = base + ((frac > 0.5) | ((frac == 0.5) & (base % 2 == 1))).astype(np.int64)
    for i in np.flatnonzero(np.abs(frac - 0.5) <= np.spacing(np.abs(t))):
        d = Decimal(str(float(t[i]))) + offset_ns
        out[i] = int(d.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))
    return out


def task_ns(start_cnt: np.ndarray, end_cnt: np.ndarray, cnt0: int, mhz: float, mono0_ns: int,
            offset_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start_ns, dur_ns, span_ns): the shown start, op_summary's duration (the float duration
    rounded to 0.001 µs) and task_time's (the float duration truncated: TaskOpViewer reads
    ``CAST(duration AS INTEGER)``)."""
    s = time_ns_float(start_cnt, cnt0, mhz, mono0_ns)
    e = time_ns_float(end_cnt, cnt0, mhz, mono0_ns)
    start = shown_ns(s, offset_ns)
    dur = np.rint(py_round((e - s) / 1000.0) * 1000.0).astype(np.int64)
    return start, dur, np.trunc(e - s).astype(np.int64)


def cut_start_ns(start_cnt: np.ndarray, cnt0: int, mhz: float, mono0_ns: int, offset_ns: int) -> np.ndarray:
    """task_time's start: the float start truncated (``CAST(start_time AS INTEGER)``, toward zero)
    plus the local offset (``trans_into_local_time`` of an integer is exact).  int64 ns."""
    s = time_ns_float(start_cnt, cnt0, mhz, mono0_ns)
    return np.trunc(s).astype(np.int64) + np.int64(offset_ns)


def host_shown_ns(cnt: np.ndarray, cnt0: int, mhz: float, mono0_ns: int, offset_ns: int) -> np.ndarray:
    """Host counter values as msprof's Python analysis shows them in µs (its HostToDevice flow
    starts): ``time_from_host_syscnt(cnt, MICRO_SECOND)`` -- ``float(cnt - host_cnt × 1e9) / (MHz ×
    1e6) × 1e6 + host_mon × 1e6`` with ``host_cnt`` / ``host_mon`` the host_start.log cntvct and
    clock_monotonic_raw / 1e9 as floats, or ``cnt × 1e6 / 1e9`` at the default frequency (counters
    in ns) -- then ``trans_into_local_time(use_us=True)``: ``Decimal(str(t)) + offset`` quantized to
    0.001 µs half even (the offset is whole ns).  int64 local ns, one ns apart from the exact
    conversion in some rows."""
    c = np.asarray(cnt, dtype=np.uint64).astype(np.float64)  # Python's int - float converts the int first
    if mhz == 1000.0:
        t_us = c / 1000.0  # int * 10**6 / 10**9: the correctly rounded quotient
    else:
        t_us = (c - float(cnt0) / 1e9 * 1e9) / (mhz * 1e6) * 1e6 + float(mono0_ns) / 1e9 * 1e6
    y = t_us * 1000.0
    whole = np.floor(y)
    frac = y - whole
    base = whole.astype(np.int64) + np.int64(offset_ns)
    out = base + ((frac > 0.5) | ((frac == 0.5) & (base % 2 == 1))).astype(np.int64)
    # y carries the product's rounding: next to a tie the shortest str of t decides
    for i in np.flatnonzero(np.abs(frac - 0.5) <= 1e-3):
        d = Decimal(repr(float(t_us[i]))) * 1000 + offset_ns
        out[i] = int(d.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))
    return out

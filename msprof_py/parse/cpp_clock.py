"""Counters -> ns the way msprof's C++ analysis computes them (clocks rule "cpp"), to the ns.

msprof's C++ (``infrastructure/utils/time_utils.cpp`` GetTimeFromCnt, ``hp_float.{h,cpp}``) does
not compute ``mono + Δ / MHz × 1000`` exactly:

1. ``Δ / MHz`` is a double division (µs), turned into its decimal ``HPFloat`` through
   ``std::to_string`` (``%f``: 6 decimals), shifted three digits (ns, 3 decimals) and added to the
   integer ``hostMonotonic`` in decimal.  Host API calls then get the local offset added and are
   truncated to whole ns (``api_processor.cpp``: ``Uint64()``).
2. Device tasks take a detour through a double (``ascend_task_association.cpp``: ``.Double()``,
   which ``HPFloat::Double`` computes digit by digit, ``Σ digit × pow(10, k)`` from the least
   significant digit up, not correctly rounded); the AscendTask start and ``end - start`` are
   kept as doubles, read back through ``std::to_string`` again (``task_processor.cpp``), the
   local offset added and each of start and end truncated to whole ns.  op_summary shows
   ``end - start`` of those truncated values; task_time(us) and the timeline's ``dur`` show the
   double ``end - start`` truncated to whole ns.

Emulated here exactly with integers and float64 (``std::to_string``'s rounding of the binary
value is Python's ``%f``, applied by Python itself to the rare values next to a tie).
"""
from __future__ import annotations

import numpy as np

# pow(10, k) as glibc returns it (the correctly rounded double), k = -3 .. 18
_POW10 = {k: float(f"1e{k}") for k in range(-3, 19)}
MICRO = 1_000_000


def to_string_micro(q: np.ndarray) -> np.ndarray:
    """``std::to_string(q)`` (``%f``) of non-negative doubles as integer millionths (exact)."""
    q = np.asarray(q, np.float64)
    y = q * 1e6
    out = np.rint(y).astype(np.int64)
    frac = y - np.floor(y)
    doubtful = (np.abs(frac - 0.5) <= 4 * np.spacing(np.abs(y))) | (np.abs(y) >= 2.0**52)
    for i in np.flatnonzero(doubtful):
        out[i] = int(("%.6f" % float(q[i])).replace(".", ""))
    return out


def hp_double(milli: np.ndarray) -> np.ndarray:
    """``HPFloat::Double()`` of decimals held as integer thousandths (3 decimals)."""
    a = np.asarray(milli, np.int64)
    neg = a < 0
    a = np.abs(a)
    ans = np.zeros(len(a), np.float64)
    k = -3
    while len(a) and a.any():
        ans = ans + (a % 10).astype(np.float64) * _POW10[k]
        a = a // 10
        k += 1
    return np.where(neg, -ans, ans)


def mono_milli(cnt: np.ndarray, cnt0: int, mhz: float, mono0_ns: int) -> np.ndarray:
    """GetTimeFromCnt: ``hostMonotonic ± to_string(|cnt - cnt0| / MHz) << 3`` in thousandths of ns."""
    delta = np.asarray(cnt, dtype=np.uint64).astype(np.int64) - np.int64(cnt0)
    r = to_string_micro(np.abs(delta).astype(np.float64) / mhz)
    return np.int64(mono0_ns) * 1000 + np.where(delta >= 0, r, -r)


def local_ns(cnt: np.ndarray, cnt0: int, mhz: float, mono0_ns: int, offset_ns: int) -> np.ndarray:
    """A host API time: the decimal monotonic time + offset, truncated to whole ns."""
    return np.floor_divide(mono_milli(cnt, cnt0, mhz, mono0_ns), 1000) + np.int64(offset_ns)


def _split(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A double as (whole part, ``std::to_string`` millionths of its fraction), the fraction's
    rounding carried into the whole part."""
    whole = np.floor(d)
    f6 = to_string_micro(d - whole)
    return whole.astype(np.int64), f6


def task_ns(start_cnt: np.ndarray, end_cnt: np.ndarray, cnt0: int, mhz: float, mono0_ns: int,
            offset_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Device task times: (start_ns, end_ns, span_ns); ``end - start`` is op_summary's duration,
    ``span`` (the double end - start, truncated) task_time's and the timeline's."""
    ds = hp_double(mono_milli(start_cnt, cnt0, mhz, mono0_ns))
    de = hp_double(mono_milli(end_cnt, cnt0, mhz, mono0_ns))
    dur = de - ds
    i, f6 = _split(ds)
    j, g6 = _split(dur)
    off = np.int64(offset_ns)
    start = i + f6 // MICRO + off
    end = i + j + (f6 + g6) // MICRO + off
    return start, end, np.trunc(dur).astype(np.int64)

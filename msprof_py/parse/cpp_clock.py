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
    """``std::to_string(q)`` (``%f``) of non-negative doubles below 2**62 / 1e6 as integer
    millionths (exact)."""
    q = np.asarray(q, np.float64)
    y = q * 1e6
    fast = np.abs(y) < 2.0**52
    out = np.rint(np.where(fast, y, 0.0)).astype(np.int64)
    frac = y - np.floor(y)
    doubtful = ~fast | (np.abs(frac - 0.5) <= 4 * np.spacing(np.abs(y)))
    for i in np.flatnonzero(doubtful):
        out[i] = int(("%.6f" % float(q[i])).replace(".", ""))
    return out


def fits(cnt: np.ndarray, cnt0: int, mhz: float) -> bool:
    """True when every ``|cnt - cnt0| / MHz`` µs has its millionths in int64 (false only for
    corrupt counters; the caller then converts exactly instead)."""
    c = np.asarray(cnt, dtype=np.uint64)
    if not len(c):
        return True
    lo, hi = float(c.min()), float(c.max())
    return max(abs(hi - cnt0), abs(cnt0 - lo)) / mhz * 1e6 < 2.0**62


def hp_double(whole: np.ndarray, milli: np.ndarray) -> np.ndarray:
    """``HPFloat::Double()`` of ``whole + milli / 1000`` (``0 <= milli < 1000``): the digits of
    the magnitude from the least significant up, ``ans += digit × pow(10, k)``, then the sign."""
    whole = np.asarray(whole, np.int64)
    milli = np.asarray(milli, np.int64)
    neg = whole < 0
    carry = neg & (milli > 0)
    mag_w = np.where(neg, -whole - carry, whole)
    mag_m = np.where(carry, 1000 - milli, milli)
    ans = np.zeros(len(whole), np.float64)
    for k in (-3, -2, -1):
        ans = ans + (mag_m % 10).astype(np.float64) * _POW10[k]
        mag_m = mag_m // 10
    k = 0
    while len(mag_w) and mag_w.any():
        ans = ans + (mag_w % 10).astype(np.float64) * _POW10[k]
        mag_w = mag_w // 10
        k += 1
    return np.where(neg, -ans, ans)


def mono_parts(cnt: np.ndarray, cnt0: int, mhz: float, mono0_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """GetTimeFromCnt: ``hostMonotonic ± to_string(|cnt - cnt0| / MHz) << 3`` as (whole ns,
    thousandths of a ns in [0, 1000))."""
    delta = np.asarray(cnt, dtype=np.uint64).astype(np.int64) - np.int64(cnt0)
    r = to_string_micro(np.abs(delta).astype(np.float64) / mhz)
    r = np.where(delta >= 0, r, -r)
    return np.int64(mono0_ns) + r // 1000, r % 1000


def local_ns(cnt: np.ndarray, cnt0: int, mhz: float, mono0_ns: int, offset_ns: int) -> np.ndarray:
    """A host API time: the decimal monotonic time + offset, truncated to whole ns."""
    return mono_parts(cnt, cnt0, mhz, mono0_ns)[0] + np.int64(offset_ns)


def _split(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A double as (whole part, ``std::to_string`` millionths of its fraction)."""
    whole = np.floor(d)
    return whole.astype(np.int64), to_string_micro(d - whole)


def task_ns(start_cnt: np.ndarray, end_cnt: np.ndarray, cnt0: int, mhz: float, mono0_ns: int,
            offset_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Device task times: (start_ns, end_ns, span_ns); ``end - start`` is op_summary's duration,
    ``span`` (the double end - start, truncated) task_time's and the timeline's."""
    ds = hp_double(*mono_parts(start_cnt, cnt0, mhz, mono0_ns))
    de = hp_double(*mono_parts(end_cnt, cnt0, mhz, mono0_ns))
    dur = de - ds
    i, f6 = _split(ds)
    j, g6 = _split(dur)
    off = np.int64(offset_ns)
    start = i + f6 // MICRO + off
    end = i + j + (f6 + g6) // MICRO + off
    return start, end, np.trunc(dur).astype(np.int64)

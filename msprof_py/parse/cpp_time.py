"""Device task times exactly as msprof's C++ analysis computes them (to the ns it writes).

msprof's C++ path does not convert a syscnt to ns in exact arithmetic; it goes through doubles,
its decimal ``HPFloat`` and ``std::to_string``, and the unified DB's TASK ``startNs`` / ``endNs``
(and everything derived from them) carry the result.  The steps, for a task's start and end
counters (``infrastructure/utils/time_utils.cpp`` GetTimeFromCnt, ``hp_float.cpp``,
``domain/services/association/ascend_task_association.cpp``,
``domain/services/persistence/device/ascend_task_persistence.cpp``,
``domain/data_process/ai_task/task_processor.cpp``):

1. ``us = double(|cnt - cnt0|) / double(MHz)``; ``HPFloat(us)`` is ``std::to_string(us)``: µs
   rounded to 6 decimals (C's ``%f``, ties to even);
2. ``x = HPFloat(monotonic ns) ± that << 3`` (exact decimal), then ``x.Double()``, which sums
   ``digit * pow(10, k)`` in doubles from the lowest digit up (not a correctly rounded
   conversion);
3. the AscendTask table holds ``start_d`` and ``dur_d = end_d - start_d`` (doubles);
4. TaskProcessor: ``start = HPFloat(start_d)``, ``end = start + HPFloat(dur_d)`` (both through
   ``%f`` again), plus the local offset, floored to whole ns (``HPFloat::Uint64``).

The result differs from the exact floor by one ns on ~1 % of the tasks of a real 910B capture
(start or end just below a whole ns).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

_MILLION = 1_000_000
# values converted per pass: the ~25 temporaries of a conversion then stay in the cache and are
# reused by the allocator, not 25 arrays of the whole column (4.2 M host API times: 34 MB each,
# fresh pages every time, most of the conversion's cost was the kernel's)
CHUNK = 1 << 16


def by_chunks(fn, *arrays: np.ndarray, outs: int = 1):
    """``fn(*arrays)`` computed CHUNK rows at a time into int64 outputs (``outs`` of them; ``fn``
    elementwise and giving int64 arrays): the same values as one call over the whole arrays."""
    arrays = tuple(np.asarray(a) for a in arrays)
    n = len(arrays[0]) if arrays and np.ndim(arrays[0]) == 1 else -1
    if n <= CHUNK:
        return fn(*arrays)
    out = tuple(np.empty(n, np.int64) for _ in range(outs))
    for lo in range(0, n, CHUNK):
        got = fn(*(a[lo:lo + CHUNK] for a in arrays))
        for o, g in zip(out, got if outs > 1 else (got,)):
            o[lo:lo + CHUNK] = g
    return out if outs > 1 else out[0]


def fits(cnt: np.ndarray, cnt0: int, mhz: float) -> bool:
    """True when every ``|cnt - cnt0| / MHz`` µs has its millionths in int64 (false only for
    corrupt counters; the caller then converts exactly instead)."""
    c = np.asarray(cnt, dtype=np.uint64)
    if not len(c):
        return True
    lo, hi = float(c.min()), float(c.max())
    return max(abs(hi - cnt0), abs(cnt0 - lo)) / mhz * 1e6 < 2.0**62


def _to_string_6(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``std::to_string`` of non-negative doubles: (whole part, millionths), x rounded to 6
    decimals, ties to even (glibc's ``%f`` of the binary value).  ``(x - floor x) * 1e6`` is exact
    for every x >= 2**20 (the fraction has at most 33 bits then); for smaller x its rounding can
    cross a tie, so values within a few ulps of one are printed by Python's ``%f`` (the same
    rounding of the exact binary value)."""
    whole = np.floor(x)
    y = (x - whole) * 1e6
    frac = np.rint(y).astype(np.int64)
    w = whole.astype(np.int64)
    # next to a tie the product may have rounded across it: those few values go through %f itself
    for i in np.flatnonzero(np.abs(y - np.floor(y) - 0.5) <= 4 * np.spacing(np.maximum(y, 1.0))):
        a, b = ("%.6f" % float(x[i])).split(".")
        w[i], frac[i] = int(a), int(b)
    return w, frac


def _hp_double(whole: np.ndarray, milli: np.ndarray) -> np.ndarray:
    """``HPFloat::Double()`` of the decimal ``whole + milli / 1000`` (whole >= 0, 0 <= milli < 1000):
    ``ans += digit * pow(10, k)`` from the lowest digit to the highest, in doubles."""
    ans = np.zeros(len(whole), dtype=np.float64)
    for k, d in ((-3, milli % 10), (-2, (milli // 10) % 10), (-1, milli // 100)):
        ans = ans + d.astype(np.float64) * (10.0 ** k)
    top = int(whole.max()) if len(whole) else 0
    rest, q, term = whole.copy(), np.empty_like(whole), np.empty(len(whole))
    k = 0
    while top > 0:  # one pass per digit of the largest value (a zero digit adds +0.0)
        np.floor_divide(rest, 10, out=q)  # by a constant: multiply and shift, not np.divmod's division
        np.subtract(rest, q * 10, out=rest)  # the digit
        np.multiply(rest, 10.0 ** k, out=term)  # int64 * double: the product in doubles, then the sum, as C++
        ans += term
        rest, q = q, rest
        top //= 10
        k += 1
    return ans


def _cnt_to_decimal(cnt: np.ndarray, cnt0: int, mono0_ns: int, mhz: Fraction) -> tuple[np.ndarray, np.ndarray]:
    """Steps 1-2 up to the exact decimal: (floor ns, thousandths of a ns >= 0) of
    ``HPFloat(monotonic) ± HPFloat(us) << 3`` for each counter value."""
    diff = np.asarray(cnt, dtype=np.uint64).astype(np.int64) - np.int64(cnt0)
    neg = diff < 0
    us = np.abs(diff).astype(np.float64) / float(mhz)
    whole, frac = _to_string_6(us)
    ps = whole * _MILLION + frac  # the to_string value in 1e-3 ns
    signed = np.where(neg, -ps, ps)
    q = signed // 1000  # floor division by a constant (not np.divmod's division per value): whole ns q,
    r = signed - q * 1000  # thousandths r >= 0
    return np.int64(mono0_ns) + q, r


def point_ns(cnt: np.ndarray, cnt0: int, mono0_ns: int, mhz: Fraction, local_offset_ns: int) -> np.ndarray:
    """Local ns of counter values msprof converts without the double (the AICORE_FREQ rows:
    ``GetLocalTime(HPFloat(GetTimeFromSyscnt(...))).Uint64()``, aicore_freq_processor.cpp): the
    exact decimal of steps 1-2, floored.  int64."""
    return by_chunks(lambda c: _cnt_to_decimal(c, cnt0, mono0_ns, mhz)[0] + np.int64(local_offset_ns), cnt)


def _cnt_to_double(cnt: np.ndarray, cnt0: int, mono0_ns: int, mhz: Fraction) -> np.ndarray:
    """Steps 1-2: msprof's double of monotonic ns for each counter value."""
    whole_ns, r = _cnt_to_decimal(cnt, cnt0, mono0_ns, mhz)
    if (whole_ns < 0).any():  # before monotonic 0: HPFloat works on the magnitude, then negates
        below = whole_ns < 0
        mag_whole = np.where(below, -whole_ns - (r > 0), whole_ns)
        mag_milli = np.where(below, (1000 - r) % 1000, r)
        d = _hp_double(mag_whole, mag_milli)
        return np.where(below, -d, d)
    return _hp_double(whole_ns, r)


def task_ns(start_cnt: np.ndarray, end_cnt: np.ndarray, cnt0: int, mono0_ns: int, mhz: Fraction,
            local_offset_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start ns, end ns, span ns) in local wall-clock time of device tasks, as msprof's C++
    analysis writes them (module doc): ``end - start`` is op_summary's duration, ``span`` (the
    double ``end_d - start_d`` truncated) task_time's and the timeline's.  int64 arrays."""
    return by_chunks(lambda s, e: _task_ns(s, e, cnt0, mono0_ns, mhz, local_offset_ns), start_cnt, end_cnt, outs=3)


def _task_ns(start_cnt: np.ndarray, end_cnt: np.ndarray, cnt0: int, mono0_ns: int, mhz: Fraction,
             local_offset_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s_d = _cnt_to_double(start_cnt, cnt0, mono0_ns, mhz)
    e_d = _cnt_to_double(end_cnt, cnt0, mono0_ns, mhz)
    dur_d = e_d - s_d  # the AscendTask duration column
    s_w, s_f = _signed_to_string_6(s_d)
    d_w, d_f = _signed_to_string_6(dur_d)
    start = s_w + s_f // _MILLION  # floor of a non-negative decimal (a negative time has no ns)
    end = s_w + d_w + (s_f + d_f) // _MILLION
    return start + np.int64(local_offset_ns), end + np.int64(local_offset_ns), np.trunc(dur_d).astype(np.int64)


def _signed_to_string_6(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``std::to_string`` of any doubles as (floor part, millionths >= 0) of the rounded value."""
    w, f = _to_string_6(np.abs(x))
    neg = x < 0
    if not neg.any():
        return w, f
    total_w = np.where(neg, -w - (f > 0), w)
    total_f = np.where(neg, (_MILLION - f) % _MILLION, f)
    return total_w, total_f

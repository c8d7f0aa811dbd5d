"""msprof's own counter -> ns arithmetic (parse.cpp_time, parse.py_clock) against plain-Python
transcriptions of its C++ (time_utils.cpp, hp_float.cpp, task_processor.cpp) and Python
(info_conf_reader.py) code, one value at a time."""
from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Decimal

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from msprof_py.parse import cpp_time, py_clock

MHZ = float("49.999001")  # a 910B hwts frequency
CNT0 = 4108348224667
MONO0 = 82133488943335
OFFSET = 1784177062374018000 - 82133488943335


def hp_double_ref(milli: int) -> float:
    """HPFloat::Double: digits from the least significant up, ``ans += digit * pow(10, k)``."""
    neg, a = milli < 0, abs(milli)
    ans, k = 0.0, -3
    while a:
        ans += (a % 10) * math.pow(10, k)
        a //= 10
        k += 1
    return -ans if neg else ans


def hp_milli_ref(cnt: int) -> int:
    """GetTimeFromCnt: HPFloat(std::to_string(|Δ| / MHz)) << 3, added to hostMonotonic."""
    delta = cnt - CNT0
    micro = int(("%f" % (abs(delta) / MHZ)).replace(".", ""))
    return MONO0 * 1000 + (micro if delta >= 0 else -micro)


def task_ref(s: int, e: int) -> tuple[int, int, int]:
    ds, de = hp_double_ref(hp_milli_ref(s)), hp_double_ref(hp_milli_ref(e))
    dur = de - ds
    start_hp = Decimal("%f" % ds)
    end_hp = start_hp + Decimal("%f" % dur)
    return int(start_hp) + OFFSET, int(end_hp) + OFFSET, int(dur)


COUNTS = st.integers(CNT0 - 10**9, CNT0 + 10**13)


@settings(max_examples=300, deadline=None)
@given(COUNTS, st.integers(0, 10**7))
def test_cpp_task_times(s: int, d: int) -> None:
    start, end, span = cpp_time.task_ns(np.array([s], np.uint64), np.array([s + d], np.uint64), CNT0, MONO0, MHZ,
                                        OFFSET)
    assert (int(start[0]), int(end[0]), int(span[0])) == task_ref(s, s + d)


@settings(max_examples=300, deadline=None)
@given(COUNTS)
def test_cpp_api_times(c: int) -> None:
    got = cpp_time.point_ns(np.array([c], np.uint64), CNT0, MONO0, 100.0, OFFSET)[0]
    micro = int(("%f" % (abs(c - CNT0) / 100.0)).replace(".", ""))
    milli = MONO0 * 1000 + (micro if c >= CNT0 else -micro)
    assert int(got) == milli // 1000 + OFFSET


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**20))
def test_hp_double(milli: int) -> None:
    assert cpp_time._hp_double(np.array([milli // 1000], np.int64), np.array([milli % 1000], np.int64))[0] == \
        hp_double_ref(milli)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(0, 1e9), st.integers(0, 10**12).map(lambda k: (k + 0.5) / 1e6)))
def test_to_string_6(q: float) -> None:
    whole, frac = cpp_time._to_string_6(np.array([q]))
    assert int(whole[0]) * 1_000_000 + int(frac[0]) == int(("%f" % q).replace(".", ""))


PY_MHZ, PY_CNT0, PY_MONO0 = float("47.999001"), 8581220446925, 178769642066012
PY_OFFSET = 1713390711594134000 - 178769475509345


def py_ref(s: int, e: int) -> tuple[int, int, int]:
    """time_from_syscnt, trans_into_local_time, round(duration / 1000, 3), CAST(duration AS INTEGER)."""
    dev_cnt, host_mon, freq = float(PY_CNT0) / 1e9, float(PY_MONO0) / 1e9, PY_MHZ * 1e6

    def t(c: int) -> float:
        return float(c - dev_cnt * 1e9) / freq * 1e9 + host_mon * 1e9

    shown = (Decimal(str(t(s))) / 1000 + Decimal(PY_OFFSET) / 1000).quantize(Decimal("0.000"), ROUND_HALF_EVEN)
    dur = t(e) - t(s)
    return int(shown * 1000), int(round(round(dur / 1000, 3) * 1000)), int(dur)


@settings(max_examples=300, deadline=None)
@given(st.integers(PY_CNT0, PY_CNT0 + 10**12), st.integers(0, 10**7))
def test_python_task_times(s: int, d: int) -> None:
    got = py_clock.task_ns(np.array([s], np.uint64), np.array([s + d], np.uint64), PY_CNT0, PY_MHZ, PY_MONO0, PY_OFFSET)
    assert tuple(int(x[0]) for x in got) == py_ref(s, s + d)


def py_task_time_ref(s: int, e: int) -> tuple[int, int]:
    """TaskOpViewer (msprof before b36b234d6): ``CAST(start_time AS INTEGER)``, ``CAST(duration AS
    INTEGER)`` from the AscendTask floats, then ``trans_into_local_time`` of the start and of
    ``start + duration`` (both integers, so exact)."""
    dev_cnt, host_mon, freq = float(PY_CNT0) / 1e9, float(PY_MONO0) / 1e9, PY_MHZ * 1e6

    def t(c: int) -> float:
        return float(c - dev_cnt * 1e9) / freq * 1e9 + host_mon * 1e9

    start, dur = int(t(s)), int(t(e) - t(s))  # SQLite's CAST of a REAL truncates toward zero, as int()

    def local(ns: int) -> int:
        return int((Decimal(str(ns)) / 1000 + Decimal(PY_OFFSET) / 1000) * 1000)

    return local(start), local(start + dur)


@settings(max_examples=300, deadline=None)
@given(st.integers(PY_CNT0, PY_CNT0 + 10**12), st.integers(0, 10**7))
def test_python_task_time_start(s: int, d: int) -> None:
    starts, ends = np.array([s], np.uint64), np.array([s + d], np.uint64)
    _, _, span = py_clock.task_ns(starts, ends, PY_CNT0, PY_MHZ, PY_MONO0, PY_OFFSET)
    cut = py_clock.cut_start_ns(starts, PY_CNT0, PY_MHZ, PY_MONO0, PY_OFFSET)
    assert (int(cut[0]), int(cut[0] + span[0])) == py_task_time_ref(s, s + d)


def test_python_task_time_start_is_below_the_shown_one() -> None:
    """Both rules are exercised: among a few hundred counters some starts are truncated one ns below
    the shown (rounded) start, the others equal it."""
    cnt = np.arange(PY_CNT0, PY_CNT0 + 300, dtype=np.uint64)
    shown, _, _ = py_clock.task_ns(cnt, cnt, PY_CNT0, PY_MHZ, PY_MONO0, PY_OFFSET)
    lag = shown - py_clock.cut_start_ns(cnt, PY_CNT0, PY_MHZ, PY_MONO0, PY_OFFSET)
    assert set(lag.tolist()) == {0, 1}


def test_long_uptime_and_corrupt_counters() -> None:
    """A host up for a year (monotonic 3e16 ns: x1000 would pass int64) converts; a counter of
    2**63 - 1 (corrupt dev_start.log) falls back to exact arithmetic without a warning."""
    mono = 31_536_000 * 10**9
    start, end, span = cpp_time.task_ns(np.array([CNT0 + 1000], np.uint64), np.array([CNT0 + 2000], np.uint64),
                                        CNT0, mono, 50.0, 0)
    assert (int(start[0]), int(end[0]), int(span[0])) == (mono + 20_000, mono + 40_000, 20_000)
    assert not cpp_time.fits(np.array([2**63 - 1], np.uint64), 0, 50.0)


@settings(max_examples=300, deadline=None)
@given(st.integers(PY_CNT0 - 10**9, PY_CNT0 + 10**12))
def test_python_host_times(c: int) -> None:
    """time_from_host_syscnt(c, MICRO_SECOND) then trans_into_local_time(use_us=True, is_host=True)."""
    host_cnt, host_mon, freq = float(PY_CNT0) / 1e9, float(PY_MONO0) / 1e9, PY_MHZ * 1e6
    t_us = float(c - host_cnt * 1e9) / freq * 1e6 + host_mon * 1e6
    ref = (Decimal(str(t_us)) + Decimal(PY_OFFSET) / 1000).quantize(Decimal("0.000"), ROUND_HALF_EVEN)
    got = py_clock.host_shown_ns(np.array([c], np.uint64), PY_CNT0, PY_MHZ, PY_MONO0, PY_OFFSET)
    assert int(got[0]) == int(ref * 1000)

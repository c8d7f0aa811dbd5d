"""msprof's C++ task-time arithmetic (parse.cpp_time): the vectorised version against a plain
step-by-step transcription (Python floats, C's ``%f`` via Python's correctly rounded ``%f``,
Decimal for the exact ``HPFloat`` sums), and on values where it differs from the exact floor."""
from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from msprof_py.parse import cpp_time
from msprof_py.parse.meta import Ticks


def _hp_double(v: Decimal) -> float:
    """HPFloat::Double: sum digit * pow(10, k) in doubles, lowest digit first, then the sign."""
    sign, digits, exp = v.as_tuple()
    ans = 0.0
    for i, d in enumerate(reversed(digits)):
        ans += float(d) * (10.0 ** (exp + i))
    return -ans if sign else ans


def _ref_double(cnt: int, cnt0: int, mono0: int, mhz: float) -> float:
    us = float(abs(cnt - cnt0)) / mhz
    shift = Decimal("%f" % us) * 1000
    return _hp_double(Decimal(mono0) + shift if cnt >= cnt0 else Decimal(mono0) - shift)


def reference(start: int, end: int, cnt0: int, mono0: int, mhz: Fraction, offset: int) -> tuple[int, int]:
    with localcontext() as ctx:
        ctx.prec = 60
        s_d = _ref_double(start, cnt0, mono0, float(mhz))
        e_d = _ref_double(end, cnt0, mono0, float(mhz))
        s = Decimal("%f" % s_d)
        e = s + Decimal("%f" % (e_d - s_d))
        return math.floor(s) + offset, math.floor(e) + offset


FREQS = st.sampled_from([Fraction("49.999001"), Fraction(50), Fraction("38.4"), Fraction(100), Fraction("24.576"),
                         Fraction(1000, 1024), Fraction("1800")])


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**50), st.lists(st.tuples(st.integers(-2**24, 2**42), st.integers(0, 2**30)), min_size=1,
                                       max_size=20),
       st.integers(2**20, 2**57), FREQS, st.integers(0, 2**61))
def test_task_ns_matches_step_by_step(cnt0: int, spans: list[tuple[int, int]], mono0: int, mhz: Fraction,
                                      offset: int) -> None:
    starts = [max(cnt0 + a, 0) for a, _ in spans]
    ends = [s + d for s, (_, d) in zip(starts, spans)]
    got_s, got_e, _ = cpp_time.task_ns(np.array(starts, np.uint64), np.array(ends, np.uint64), cnt0, mono0, mhz,
                                    offset)
    want = [reference(s, e, cnt0, mono0, mhz, offset) for s, e in zip(starts, ends)]
    assert list(zip(got_s.tolist(), got_e.tolist())) == want


def test_differs_from_exact_floor_as_msprof_does() -> None:
    """A 910B capture's numbers (add_ascendc_b1, stream 46 task 1): msprof wrote end ...971514
    where the exact floor is ...971513 (the double of ~8.2e13 ns has 1/64 ns steps)."""
    t = Ticks(Fraction("49.999001"), 0, 82133535549606, 1784177144514971514 - 82133542954534, cpp=True)
    exact = Ticks(t.mhz, t.cnt0, t.mono0_ns, t.local_offset_ns)
    cnt = np.arange(10**8, 10**8 + 20_000, 7, dtype=np.uint64)
    s_cpp, d_cpp, _ = t.task_ns(cnt, cnt + np.uint64(677))
    s_ex, d_ex, _ = exact.task_ns(cnt, cnt + np.uint64(677))
    diff = np.abs(s_cpp - s_ex)
    assert diff.max() <= 1 and 0 < np.count_nonzero(diff) < len(cnt) // 10  # a few, by one ns
    want = [reference(int(c), int(c) + 677, 0, t.mono0_ns, t.mhz, t.local_offset_ns) for c in cnt[:300]]
    assert list(zip(s_cpp[:300].tolist(), (s_cpp + d_cpp)[:300].tolist())) == want

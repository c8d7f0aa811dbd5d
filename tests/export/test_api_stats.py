"""api_statistic numbers (msprof_py.export.api_stats) against a plain-Python transcription of the
rule msprof's Python analysis applies (ApiStatisticViewer), and Python's round on every input."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from msprof_py.export.api_stats import api_stats_frame, py_round, py_round_square, py_str

FREQ_HZ = float("47.999001") * 1e6  # the 310B host counter


def msprof_python(rows: list[tuple[str, str, int]], freq_hz: float) -> dict[tuple[str, str], list[str]]:
    """(name, level, ticks) in file order -> msprof's printed row (the Python analysis, verbatim rule)."""
    groups: dict[tuple[str, str], list[float]] = {}
    for name, level, ticks in rows:
        groups.setdefault((name, level), []).append(ticks / freq_hz * 1e6)
    out = {}
    for key, d in groups.items():
        s = round(sum(d), 3)
        avg = round(s / len(d), 3)
        var = round(sum(round((x - avg) ** 2, 3) for x in d) / len(d), 3)
        out[key] = [str(s), str(len(d)), str(avg), str(round(min(d), 3)), str(round(max(d), 3)), str(var)]
    return out


def ours(rows: list[tuple[str, str, int]], freq_hz: float) -> dict[tuple[str, str], list[str]]:
    name = np.array([r[0] for r in rows], dtype=object)
    level = np.array([r[1] for r in rows], dtype=object)
    ticks = np.array([r[2] for r in rows], dtype=np.int64)
    f = api_stats_frame(level, name, ticks, True, ticks, freq_hz)
    cols = [py_str(f[c]) for c in ("total", "avg", "min", "max", "var")]
    return {(n, lv): [cols[0][i], str(int(c)), cols[1][i], cols[2][i], cols[3][i], cols[4][i]]
            for i, (n, lv, c) in enumerate(zip(f["name"], f["level"], f["count"]))}


ROWS = st.lists(st.tuples(st.sampled_from(["aclrtMalloc", "aclrtFree", "launch"]), st.sampled_from(["acl", "node"]),
                          st.integers(0, 10**13)), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(ROWS)
def test_python_rule_matches_msprof_transcription(rows: list[tuple[str, str, int]]) -> None:
    assert ours(rows, FREQ_HZ) == msprof_python(rows, FREQ_HZ)


def test_real_row_from_310b() -> None:
    """aclMallocMemInner of a 310B capture (shared/realdata 01Addcmul ...055151588): msprof wrote
    2758.599 / 167323.035; integer-ns durations give 2758.601 / 167323.075."""
    ticks = [70812, 7159, 5494, 8767, 4131, 4168, 4287, 4270, 18464, 4858]
    got = ours([("aclMallocMemInner", "acl", t) for t in ticks], FREQ_HZ)[("aclMallocMemInner", "acl")]
    assert got == ["2758.599", "10", "275.86", "86.064", "1475.281", "167323.035"]


def test_begin_zero_call_prints_like_python() -> None:
    """A call that began before profiling (raw begin 0) lasts the whole counter: e-notation variance."""
    rows = [("0", "acl", 8526006095555), ("0", "acl", 108)]
    got = ours(rows, FREQ_HZ)[("0", "acl")]
    assert got == msprof_python(rows, FREQ_HZ)[("0", "acl")]
    assert "e+" in got[5]


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(-1e16, 1e16, allow_nan=False),
                 st.integers(-10**9, 10**9).map(lambda k: (k + 0.5) / 1000),  # ties at the third decimal
                 st.floats(1e12, 1e22)))
def test_py_round_is_pythons_round(x: float) -> None:
    assert py_round(np.array([x]))[0] == round(x, 3)


def test_cpp_rule_population_variance() -> None:
    ns = np.array([1000, 3000], np.int64)
    f = api_stats_frame(np.array(["acl", "acl"], dtype=object), np.array(["a", "a"], dtype=object), ns)
    assert (f["total"].iloc[0], f["avg"].iloc[0], f["var"].iloc[0]) == (4.0, 2.0, 1.0)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(-1e13, 1e13, allow_nan=False), st.integers(-10**6, 10**6).map(lambda k: k / 997)))
def test_py_round_square_is_pythons(x: float) -> None:
    assert py_round_square(np.array([x]))[0] == round(x ** 2, 3)


TEXTS = st.sampled_from(["acl", "node", "b", "B", "a b", "ä", "10", "9", "N/A"])


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(TEXTS, TEXTS), min_size=1, max_size=30), as_categorical=st.booleans(),
       sort_path=st.booleans())
def test_group_keys_equal_sorted_groupby(rows: list[tuple[str, str]], as_categorical: bool, sort_path: bool) -> None:
    # the groups of (name, level) and their order as a sorted pandas groupby of the strings gives
    # them; categoricals (with an unused category) group by their texts
    import pandas as pd

    import msprof_py.export.api_stats as api_stats

    name = np.array([r[0] for r in rows], dtype=object)
    level = np.array([r[1] for r in rows], dtype=object)
    want = pd.DataFrame({"n": name, "l": level}).groupby(["n", "l"], sort=True).ngroup().to_numpy()
    args = (name, level)
    if as_categorical:
        args = tuple(pd.Categorical.from_codes(pd.factorize(a)[0], categories=pd.Index(list(pd.unique(a)) + ["zz"]))
                     for a in (name, level))
    old = api_stats.DENSE_LIMIT
    api_stats.DENSE_LIMIT = -1 if sort_path else old  # -1: groups by sorting unless 4 x rows >= pairs
    try:
        keys, names, levels = api_stats.group_keys(*args)
    finally:
        api_stats.DENSE_LIMIT = old
    assert keys.tolist() == want.tolist()
    assert list(zip(names, levels)) == sorted(set(rows))

"""The advice's shared views (analyse/advise/base.py): text masks per category equal the
per-row ``astype(str)`` they replace, and every rule finds the same with its views shared
(:func:`shared_views`, as ``run_rules`` runs them) as computed alone."""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import msprof_py
from msprof_py.analyse.advise import RULES, run_rules
from msprof_py.analyse.advise.base import memo, merge_intervals, overlap_ns, shared_views, text_in, texts_of, top, us
from msprof_py.analyse.advise.pmu import KEY, pmu_rows
from msprof_py.analyse.advise.schedule import CAUSES, gap_parts, idle_gaps

VALUES = st.one_of(st.sampled_from(["a", "b", "N/A", "nan", "dynamic", "1"]), st.integers(0, 3), st.none())


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(VALUES, max_size=30), wanted=st.lists(st.sampled_from(["a", "N/A", "nan", "1", "x"]),
                                                             max_size=3),
       categorical=st.booleans())
def test_text_masks_equal_astype_str(rows, wanted, categorical) -> None:
    col = pd.Series(rows, dtype="category" if categorical else object)
    col = col.cat.add_categories(["unused"]) if categorical else col  # a category no row uses
    assert text_in(col, wanted).tolist() == col.astype(str).isin(wanted).tolist()
    for some in (col, col[: len(col) // 2]):
        got, want = texts_of(some), set(some.astype(str))
        assert {x for x in got if x == x} == {x for x in want if x == x}  # NaN != NaN
        assert any(x != x for x in got) == any(x != x for x in want)


def test_memo_only_inside_a_scope() -> None:
    session, calls = object(), []

    def make() -> int:
        calls.append(1)
        return len(calls)

    assert memo(session, "k", make) == 1 and memo(session, "k", make) == 2  # no scope: derived each time
    with shared_views(session):
        assert memo(session, "k", make) == 3 and memo(session, "k", make) == 3
        with shared_views(session):  # nested: the same views
            assert memo(session, "k", make) == 3
        assert memo(object(), "k", make) == 4  # another session
    assert memo(session, "k", make) == 5


def test_memo_scopes_are_per_thread() -> None:
    """A scope entered on one thread is not seen, nor closed, by another."""
    import threading

    a, b = object(), object()
    entered, leave, seen = threading.Event(), threading.Event(), []

    def other() -> None:
        with shared_views(b):
            entered.set()
            leave.wait(5)
            seen.append(memo(b, "k", object) is memo(b, "k", object))

    with shared_views(a):
        th = threading.Thread(target=other)
        th.start()
        entered.wait(5)
        assert memo(b, "k", object) is not memo(b, "k", object)  # b's scope is the other thread's
        leave.set()
        th.join()
        assert memo(a, "k", object) is memo(a, "k", object)  # still inside a's scope
    assert seen == [True]


def test_rules_find_the_same_with_shared_views(runs) -> None:
    for name in ("sync_each", "dynamic_recompile", "aicpu"):
        s = msprof_py.load(runs[name])
        alone = {rule: RULES[rule](s) for rule in RULES}
        shared, failed = run_rules(s)
        assert not failed and shared == alone and any(alone.values())


def test_idle_gaps_frame_matches_its_arrays(runs) -> None:
    for name, cause in (("sync_each", "sync"), ("host_work", "launch")):
        s = msprof_py.load(runs[name])
        g, parts = idle_gaps(s, 0), gap_parts(s, 0)
        assert cause in set(g["cause"])
        for c in CAUSES:
            sub = g[g["cause"] == c].reset_index(drop=True)
            frame = parts.frame(c, s, 0, next_op=True)
            pd.testing.assert_frame_equal(frame, sub[frame.columns.tolist()], check_dtype=False)
        assert np.array_equal(g["dur_ns"].to_numpy(), parts.end_ns - parts.start_ns)


def _merge_rows(t: pd.DataFrame, pmu: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The left join pmu_rows stands for, by pandas."""
    right = pmu.drop_duplicates(KEY).assign(_row=lambda p: p.index)
    row = t[KEY].merge(right[KEY + ["_row"]], on=KEY, how="left")["_row"].to_numpy(np.float64)
    hit = ~np.isnan(row)
    return hit, np.where(hit, row, 0).astype(np.int64)


KEYS = st.tuples(st.integers(0, 1), st.integers(0, 2), st.integers(0, 3), st.integers(0, 1), st.integers(0, 12))


@settings(max_examples=300, deadline=None)
@given(tasks=st.lists(KEYS, max_size=25), rows=st.lists(KEYS, min_size=1, max_size=25), sort=st.booleans())
def test_pmu_rows_is_the_left_join(tasks, rows, sort) -> None:
    t = pd.DataFrame(tasks or np.zeros((0, 5), np.int64), columns=KEY).astype(np.int64)
    pmu = pd.DataFrame(rows, columns=KEY).astype(np.int64)
    if sort:  # the parser's layout (strictly increasing starts): the searchsorted path
        pmu = pmu.drop_duplicates("start_ns").sort_values("start_ns", ignore_index=True)
    hit, idx = pmu_rows(t, pmu)
    want_hit, want_idx = _merge_rows(t, pmu)
    assert hit.tolist() == want_hit.tolist() and idx.tolist() == want_idx.tolist()


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.integers(0, 60), min_size=0, max_size=120), n=st.integers(1, 12))
def test_top_is_the_sorted_head(values, n) -> None:
    s = pd.Series(np.array(values, np.int64), index=np.arange(len(values), dtype=np.int64) * 7 + 3)
    head = s.sort_values(ascending=False).head(n)
    assert top(s, n) == ([str(i) for i in head.index], [us(v) for v in head.to_numpy()])


def _merge_ref(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """merge_intervals as it was (argsort, reduceat)."""
    if len(start) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    o = np.argsort(start, kind="stable")
    s, e = np.asarray(start, np.int64)[o], np.asarray(end, np.int64)[o]
    run_end = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > run_end[:-1]]
    idx = np.flatnonzero(new)
    return s[idx], np.maximum.reduceat(e, idx)


def _overlap_ref(a0, a1, b0, b1) -> int:
    a0, a1 = _merge_ref(a0, a1)
    b0, b1 = _merge_ref(b0, b1)
    if not len(a0) or not len(b0):
        return 0
    lo, hi = np.searchsorted(b1, a0, side="right"), np.searchsorted(b0, a1, side="left")
    total = 0
    for i in np.flatnonzero(hi > lo):  # overlap_ns as it was: a loop per a-interval
        j = slice(lo[i], hi[i])
        total += int(np.clip(np.minimum(b1[j], a1[i]) - np.maximum(b0[j], a0[i]), 0, None).sum())
    return total


INTERVALS = st.lists(st.tuples(st.integers(0, 40), st.integers(-3, 12)), max_size=20)


@settings(max_examples=300, deadline=None)
@given(a=INTERVALS, b=INTERVALS, sort=st.booleans())
def test_merge_and_overlap_equal_the_plain_forms(a, b, sort) -> None:
    if sort:
        a = sorted(a)
    a0, a1 = (np.array([s for s, _ in a], np.int64), np.array([s + d for s, d in a], np.int64))
    b0, b1 = (np.array([s for s, _ in b], np.int64), np.array([s + d for s, d in b], np.int64))
    for got, want in zip(merge_intervals(a0, a1), _merge_ref(a0, a1)):
        assert got.tolist() == want.tolist()
    assert overlap_ns(a0, a1, b0, b1) == _overlap_ref(a0, a1, b0, b1)

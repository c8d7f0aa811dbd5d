"""The host side's per-row arithmetic computed in chunks (``cpp_time.by_chunks``, the call tree's
``_containers`` / ``point_ancestors``, ``level_rank``'s lookup): the same values as one pass over
the whole arrays, at chunk edges too."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from msprof_py.parse import calltree, cpp_time
from msprof_py.parse.calltree import CallTree, level_rank
from msprof_py.parse.meta import Ticks
from msprof_py.raw.common import LEVEL_ACL, LEVEL_HCCL, LEVEL_MODEL, LEVEL_NODE, LEVEL_RUNTIME


@pytest.mark.parametrize("mhz", [Fraction(50), Fraction(1000, 3), Fraction(96, 5)])
def test_conversions_by_chunks(monkeypatch, mhz):
    rng = np.random.default_rng(7)
    start = rng.integers(0, 2**45, 5003).astype(np.uint64)
    start[::97] = 2**44 - rng.integers(0, 10**6, len(start[::97])).astype(np.uint64)  # before cnt0 too
    end = start + rng.integers(0, 2**20, len(start)).astype(np.uint64)
    args = (2**44, 10**12, mhz, 17)
    whole_point = cpp_time.point_ns(start, *args)
    whole_task = cpp_time.task_ns(start, end, *args)
    ticks = Ticks(mhz, 2**44, 10**12, 17)
    whole_exact = ticks.to_local_ns(start)
    for chunk in (1, 64, 1000, 5002):
        monkeypatch.setattr(cpp_time, "CHUNK", chunk)
        assert np.array_equal(cpp_time.point_ns(start, *args), whole_point)
        for got, want in zip(cpp_time.task_ns(start, end, *args), whole_task):
            assert got.dtype == want.dtype == np.int64 and np.array_equal(got, want)
        got = ticks.to_local_ns(start)
        assert got.dtype == np.int64 and np.array_equal(got, whole_exact)
    assert cpp_time.point_ns(start[:0], *args).shape == (0,)


def _tree_input(rng, n):
    levels = np.array([LEVEL_ACL, LEVEL_MODEL, LEVEL_NODE, LEVEL_HCCL, LEVEL_RUNTIME, 20000], np.uint16)
    lv = levels[rng.integers(0, len(levels), n)]
    thread = rng.integers(0, 3, n)
    start = rng.integers(0, 10_000, n).astype(np.int64)
    end = start + rng.integers(0, 3_000, n)
    return thread, start, end, lv


def test_call_tree_by_chunks(monkeypatch):
    rng = np.random.default_rng(3)
    thread, start, end, lv = _tree_input(rng, 3001)
    pt = rng.integers(0, 3, 2500)
    pts = rng.integers(0, 13_000, 2500)
    whole = CallTree(thread, start, end, lv)
    want = [whole.point_ancestors(lvl, pt, pts) for lvl in (LEVEL_NODE, LEVEL_RUNTIME, LEVEL_HCCL)]
    for chunk in (1, 7, 512, 3000):
        monkeypatch.setattr(calltree, "CHUNK", chunk)
        t = CallTree(thread, start, end, lv)
        assert np.array_equal(t.parent, whole.parent)
        assert all(np.array_equal(t.ancestors[k], whole.ancestors[k]) for k in whole.ancestors)
        for lvl, (own, anc) in zip((LEVEL_NODE, LEVEL_RUNTIME, LEVEL_HCCL), want):
            o, a = t.point_ancestors(lvl, pt, pts)
            assert np.array_equal(o, own) and all(np.array_equal(a[k], anc[k]) for k in anc)


def test_level_rank_lookup():
    lv = np.arange(0, 65536, dtype=np.uint16)
    loop = level_rank(lv.astype(np.int64))  # (the comparison per level)
    assert np.array_equal(level_rank(lv), loop) and level_rank(lv).dtype == np.int64
    assert np.array_equal(level_rank(lv.astype(np.uint8)), level_rank(lv.astype(np.uint8).astype(np.int64)))


def test_ancestors_at_walks_the_parents():
    rng = np.random.default_rng(11)
    thread, start, end, lv = _tree_input(rng, 4000)
    t = CallTree(thread, start, end, lv)
    rows = np.r_[rng.integers(-1, len(lv), 3000), np.arange(len(lv)), -1]
    got = t.ancestors_at(rows)
    full = t.ancestors  # (the per-level arrays of every API, rank by rank)
    for k, a in full.items():
        want = np.where(rows >= 0, a[np.maximum(rows, 0)], -1)
        assert got[k].dtype == np.int64 and np.array_equal(got[k], want), k
    assert all(len(v) == 0 for v in t.ancestors_at(np.zeros(0, np.int64)).values())

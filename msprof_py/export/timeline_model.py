"""The timeline as columns: :class:`Timeline` holds one file's M events, X slices, flows and
counters (integer columns, text rendered lazily) and streams its bytes chunk by chunk."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.export.base import ExportContext
from msprof_py.export.trace_events import Counters, Flows, Meta, Slices
from msprof_py.export.validate import flow_problems, id_problems, nesting, nesting_problems, viewer_durations


@dataclass
class RenderedSlices:
    """A layer an earlier file of the same export rendered (``ExportContext.rendered[cache_key]``):
    only its event count is known; its bytes are copied from the scratch file, and it was checked
    with that file."""

    cache_key: tuple[Any, ...]
    count: int

    def __len__(self) -> int:
        return self.count


@dataclass
class Timeline:
    meta: Meta = field(default_factory=Meta)
    slices: list[Slices | RenderedSlices] = field(default_factory=list)
    flows: list[Flows] = field(default_factory=list)
    counters: list[Counters] = field(default_factory=list)  # C events (AI Core frequency, ...)

    def __bool__(self) -> bool:
        return any(len(s) for s in self.slices) or any(len(f) for f in self.flows) \
            or any(len(c) for c in self.counters)

    def slice_count(self) -> int:
        return sum(len(s) for s in self.slices)

    def check(self, skip: set[tuple[Any, ...]] | frozenset[tuple[Any, ...]] = frozenset()) -> tuple[list[str], int]:
        """Problems (nesting, flow pairing, id ranges: empty when the file will load cleanly) and
        the viewer fitting: the written ``dur`` of children that end (within the viewer's 0.25 µs
        grid) at their parent's end is adjusted so they stay nested when a viewer reads ``ts`` as
        a double (:func:`~msprof_py.export.validate.viewer_durations`).  Returns (problems, how
        many durations changed).  Slices whose ``cache_key`` is in ``skip`` were checked already.
        The slices are concatenated, sorted and walked once for both."""
        live = [s for s in self.slices if isinstance(s, Slices) and len(s)
                and (s.cache_key is None or s.cache_key not in skip)]
        out: list[str] = []
        changed = 0
        if live:
            bounds = np.cumsum([0] + [len(s) for s in live])

            def name_of(i: int) -> str:
                k = int(np.searchsorted(bounds, i, side="right") - 1)
                return str(_label_names(live[k])[i - bounds[k]])

            pid, tid = np.concatenate([s.pid for s in live]), np.concatenate([s.tid for s in live])
            start, dur = np.concatenate([s.start_ns for s in live]), np.concatenate([s.dur_ns for s in live])
            pid, tid, start, dur = (np.asarray(a, np.int64) for a in (pid, tid, start, dur))
            nest = nesting(pid, tid, start, start + dur)
            out += nesting_problems(pid, tid, start, dur, name_of=name_of, nest=nest)
            fitted, changed = viewer_durations(pid, tid, start, dur, nest=nest)
            if changed:
                pos = 0
                for s in live:
                    s.dur_ns = fitted[pos:pos + len(s)]
                    pos += len(s)
        for f in self.flows:
            # s and f come from one table of pairs, so only duplicates and the id range can be wrong
            out += flow_problems(f.ids, f.ids) + id_problems("flow id", f.ids)
        return out, changed

    def chunks(self, ctx: ExportContext | None = None) -> Iterator[bytes]:
        yield self.meta.to_bytes()
        for s in self.slices:
            if len(s):
                yield from _slice_chunks(s, ctx)
        for f in self.flows:
            if len(f):
                yield from f.rows("s").chunks()
                yield from f.rows("f").chunks()
        for c in self.counters:
            if len(c):
                yield from c.rows().chunks()


def _slice_chunks(s: Slices | RenderedSlices, ctx: ExportContext | None) -> Iterator[bytes]:
    """Render ``s``, or replay its bytes when the same layer was rendered for an earlier file."""
    if isinstance(s, RenderedSlices) and (ctx is None or s.cache_key not in ctx.rendered):
        raise ValueError(f"layer {s.cache_key} was not rendered by this export")
    if ctx is None or ctx.scratch is None or s.cache_key is None:
        yield from s.rows().chunks()
        return
    done = ctx.rendered.get(s.cache_key)
    if done is not None:
        with open(done, "rb") as fp:
            while block := fp.read(1 << 22):
                yield block
        return
    path = ctx.scratch / f"layer{len(ctx.rendered)}.part"
    with open(path, "wb") as tee:
        for c in s.rows().chunks():
            tee.write(c)
            yield c
    ctx.rendered[s.cache_key] = path


def _label_names(s: Slices) -> np.ndarray:
    if isinstance(s.name, str):
        return np.full(len(s), s.name, dtype=object)
    return np.asarray(pd.Series(s.name).astype(object).astype(str).to_numpy(), dtype=object)

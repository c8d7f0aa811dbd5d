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
from msprof_py.export.validate import flow_problems, id_problems, nesting_problems, viewer_durations


@dataclass
class Timeline:
    meta: Meta = field(default_factory=Meta)
    slices: list[Slices] = field(default_factory=list)
    flows: list[Flows] = field(default_factory=list)
    counters: list[Counters] = field(default_factory=list)  # C events (AI Core frequency, ...)

    def __bool__(self) -> bool:
        return any(len(s) for s in self.slices) or any(len(f) for f in self.flows) \
            or any(len(c) for c in self.counters)

    def slice_count(self) -> int:
        return sum(len(s) for s in self.slices)

    def problems(self, skip: set[tuple[Any, ...]] | frozenset[tuple[Any, ...]] = frozenset()) -> list[str]:
        """Nesting, flow pairing and id-range problems (empty when the file will load cleanly).
        Slices whose ``cache_key`` is in ``skip`` were checked already."""
        live = [s for s in self.slices if len(s) and (s.cache_key is None or s.cache_key not in skip)]
        out: list[str] = []
        if live:
            bounds = np.cumsum([0] + [len(s) for s in live])

            def name_of(i: int) -> str:
                k = int(np.searchsorted(bounds, i, side="right") - 1)
                return str(_label_names(live[k])[i - bounds[k]])

            out += nesting_problems(np.concatenate([s.pid for s in live]), np.concatenate([s.tid for s in live]),
                                    np.concatenate([s.start_ns for s in live]),
                                    np.concatenate([s.dur_ns for s in live]), name_of=name_of)
        for f in self.flows:
            # s and f come from one table of pairs, so only duplicates and the id range can be wrong
            out += flow_problems(f.ids, f.ids) + id_problems("flow id", f.ids)
        return out

    def fit_viewer(self, skip: set[tuple[Any, ...]] | frozenset[tuple[Any, ...]] = frozenset()) -> int:
        """Adjust the written ``dur`` of children that end (within the viewer's 0.25 µs grid) at
        their parent's end, so they stay nested when a viewer reads ``ts`` as a double
        (:func:`~msprof_py.export.validate.viewer_durations`).  Returns how many changed."""
        live = [s for s in self.slices if len(s) and (s.cache_key is None or s.cache_key not in skip)]
        if not live:
            return 0
        dur, changed = viewer_durations(np.concatenate([s.pid for s in live]), np.concatenate([s.tid for s in live]),
                                        np.concatenate([s.start_ns for s in live]),
                                        np.concatenate([s.dur_ns for s in live]))
        if changed:
            pos = 0
            for s in live:
                s.dur_ns = dur[pos:pos + len(s)]
                pos += len(s)
        return changed

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


def _slice_chunks(s: Slices, ctx: ExportContext | None) -> Iterator[bytes]:
    """Render ``s``, or replay its bytes when the same layer was rendered for an earlier file."""
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

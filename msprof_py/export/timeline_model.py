"""The timeline as columns: :class:`Timeline` holds one file's M events, X slices, flows and
counters (integer columns, text rendered lazily) and streams its bytes chunk by chunk."""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.export.base import ExportContext
from msprof_py.export.table_writer import _chunk_rows
from msprof_py.export.trace_events import Counters, Flows, Meta, Slices, const
from msprof_py.export.validate import (flow_problems, id_problems, negative_message, nesting, overlap_message,
                                       overlap_order)
from msprof_py.export.viewer_time import viewer_durations


@dataclass
class RenderedSlices:
    """A layer an earlier file of the same export rendered (``ExportContext.rendered[cache_key]``):
    only its event count is known; its bytes are copied from the byte range of the output file
    that wrote it (``FileRange``), and it was checked with that file."""

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

    def check(self, skip: set[tuple[Any, ...]] | frozenset[tuple[Any, ...]] = frozenset(),
              limit: int = 5) -> tuple[list[str], int]:
        """Problems (nesting, flow pairing, id ranges: empty when the file will load cleanly) and
        the viewer fitting: the written ``dur`` of children that end (within the viewer's 0.25 µs
        grid) at their parent's end is adjusted so they stay nested when a viewer reads ``ts`` as
        a double (:func:`~msprof_py.export.viewer_time.viewer_durations`).  Returns (problems, how
        many durations changed).  Slices whose ``cache_key`` is in ``skip`` were checked already.

        Slices are checked in groups that share no thread (a layer, or the layers drawn on the
        same threads), each sorted and walked once for both results, so the check holds one
        group's sort keys at a time, not the whole timeline's; the problems come out in the
        order one pass over all slices would give."""
        live = [s for s in self.slices if isinstance(s, Slices) and len(s)
                and (s.cache_key is None or s.cache_key not in skip)]
        out = _negative_durations(live, limit)
        keys: list[np.ndarray] = []  # overlap sort keys, index = position in the concatenation
        changed = 0
        bounds = np.cumsum([0] + [len(s) for s in live])
        for group in _thread_groups(live):
            parts = [live[k] for k in group]
            pid, tid, start, dur = (_column(parts, c) for c in ("pid", "tid", "start_ns", "dur_ns"))
            end = start + dur
            nest = nesting(pid, tid, start, end)
            if len(nest.bad):
                local = np.cumsum([0] + [len(s) for s in parts])

                def whole(i: np.ndarray) -> np.ndarray:  # group positions -> timeline positions
                    k = np.searchsorted(local, i, side="right") - 1
                    return i - local[k] + bounds[np.asarray(group)[k]]

                key = overlap_order(nest, start, end)
                key[1], key[4] = whole(key[1]), whole(key[4])
                keys.append(key)
            # (end: the fitting's buffer, its values no longer read; one 34 MB mapping fewer at 4.2 M slices)
            fitted, n = viewer_durations(pid, tid, start, dur, nest=nest, scratch=end)
            del pid, tid, nest, end
            if n:
                changed += n
                pos = 0
                for s in parts:
                    s.dur_ns = fitted[pos:pos + len(s)]
                    pos += len(s)
        if keys and not out:
            out = _overlap_messages(live, bounds, np.concatenate(keys, axis=1), limit)
        for f in self.flows:
            # s and f come from one table of pairs, so only duplicates and the id range can be wrong
            out += flow_problems(f.ids, f.ids) + id_problems("flow id", f.ids)
        return out, changed

    def chunks(self, ctx: ExportContext | None = None,
               layers: list[tuple[tuple[Any, ...], int, int]] | None = None) -> Iterator[Any]:
        """The events' bytes in file order (``bytes`` or 1-D uint8 arrays: buffers to write).  With ``ctx``, a layer an earlier file of the export
        wrote (``ctx.rendered``) comes as a :class:`FileRange` of that file (the writer copies
        it); when ``layers`` is given, each cacheable layer rendered here is appended to it as
        (cache key, offset of its bytes in this stream, length) for the writer to register."""
        pos = [0]  # bytes yielded so far (read by _slice_chunks before its first yield)
        for c in self._chunks(ctx, layers, pos):
            yield c
            pos[0] += c.length if isinstance(c, FileRange) else len(c)

    def copies_only(self, ctx: ExportContext) -> bool:
        """Whether :meth:`chunks` renders no event here: every layer is one an earlier file of the
        export wrote (its bytes copied), no flow, no counter (only the metadata events)."""
        slices = [s for s in self.slices if len(s)]
        return (ctx.scratch is not None and bool(slices) and all(s.cache_key in ctx.rendered for s in slices)
                and not any(len(f) for f in self.flows) and not any(len(c) for c in self.counters))

    def _chunks(self, ctx: ExportContext | None, layers: list[tuple[tuple[Any, ...], int, int]] | None,
                pos: list[int]) -> Iterator[bytes | FileRange]:
        yield self.meta.to_bytes()
        for s in self.slices:
            if len(s):
                yield from _slice_chunks(s, ctx, layers, pos)
        for f in self.flows:
            if len(f):
                yield from f.rows("s").chunks(raw=True)
                yield from f.rows("f").chunks(raw=True)
        for c in self.counters:
            if len(c):
                yield from c.rows().chunks(raw=True)


@dataclass(frozen=True)
class FileRange:
    """``length`` bytes at ``offset`` of an output file this export wrote: a rendered layer
    without its last event's ``,\\n`` (the file's last event has ``\\n]`` there instead).

    ``checked``: the check's (problems, durations fitted) when the layer was the only one its
    file checked, so a file that copies it reports what checking it again would report."""

    path: Path
    offset: int
    length: int
    checked: tuple[tuple[str, ...], int] | None = None


def content_key(s: Slices, tag: str) -> tuple[Any, ...] | None:
    """A cache key naming ``s``'s bytes by its content: a digest of every column (numeric
    columns' bytes, categoricals' codes and texts), so two layers built apart from the same rows
    share one rendering.  Only for a layer that is alone on its threads in its file (the
    viewer fitting of its durations then depends on nothing else).  None when a column is
    neither numeric nor categorical (its texts would be hashed one by one)."""
    h = hashlib.sha1()

    def add(v: Any) -> bool:
        if v is None or isinstance(v, str):
            h.update(b"N" if v is None else b"S" + v.encode("utf-8", "surrogatepass") + b"\0")
            return True
        if isinstance(v, pd.Series):
            v = v.array
        if isinstance(v, pd.Categorical):
            h.update(b"C" + "\0".join(map(str, v.categories.tolist())).encode("utf-8", "surrogatepass") + b"\1")
            v = v.codes
        a = np.asarray(v)
        if a.dtype.kind not in "iub":
            return False
        h.update(f"A{a.dtype.str}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).data)
        return True

    parts = [s.name, s.pid, s.tid, s.start_ns, s.dur_ns, s.cat]
    for a in s.args:
        parts += [a.key, a.kind, a.values]
    if not all(add(v) for v in parts):
        return None
    return (tag, len(s), h.hexdigest())


SEPARATOR = b",\n"  # what every rendered event ends with


def _slice_chunks(s: Slices | RenderedSlices, ctx: ExportContext | None,
                  layers: list[tuple[tuple[Any, ...], int, int]] | None = None,
                  pos: list[int] | None = None) -> Iterator[bytes | FileRange]:
    """Render ``s``, or point to its bytes when an earlier file of the export holds them.

    A cacheable layer (a ``cache_key``, an export with ``ctx.scratch``) rendered while
    ``layers`` is given is appended to it as (key, offset, length), the offset being ``pos[0]``
    (the bytes of the stream before it) when it starts."""
    if isinstance(s, RenderedSlices) and (ctx is None or s.cache_key not in ctx.rendered):
        raise ValueError(f"layer {s.cache_key} was not rendered by this export")
    if ctx is None or ctx.scratch is None or s.cache_key is None:
        yield from _rendered(s)
        return
    done = ctx.rendered.get(s.cache_key)
    if done is not None:
        yield done
        yield SEPARATOR
        return
    start, n = (pos[0] if pos else 0), 0
    for c in _rendered(s):
        n += len(c)
        yield c
    if layers is not None and n:
        layers.append((s.cache_key, start, n))


def _rendered(s: Slices) -> Iterator[Any]:
    """``s``'s rows rendered in chunks of about ``table_writer.CHUNK_BYTES`` per renderer thread
    (not the default 16 k rows: a device task's row is ~550 bytes of buffer, and the render
    buffers, their compacted copies and the chunks in flight were the top of A's peak memory)."""
    rb = s.rows()
    return rb.chunks(_chunk_rows(rb), raw=True)


def _column(parts: list[Slices], c: str) -> np.ndarray:
    """One int64 column of a group of layers (a layer's own array when the group is one layer:
    the check only reads it)."""
    cols = [np.asarray(getattr(s, c), np.int64) for s in parts]
    if len(cols) == 1:
        return cols[0]
    if all(v.strides == (0,) for v in cols) and len({int(v[0]) for v in cols if len(v)}) <= 1:
        return const(sum(len(v) for v in cols), int(cols[0][0]) if len(cols[0]) else 0)  # one pid: no copy
    return np.concatenate(cols)


def _label_names(s: Slices) -> np.ndarray:
    if isinstance(s.name, str):
        return np.full(len(s), s.name, dtype=object)
    return np.asarray(pd.Series(s.name).astype(object).astype(str).to_numpy(), dtype=object)


def _thread_groups(live: list[Slices]) -> list[list[int]]:
    """Indices of ``live`` grouped so that two groups never draw on the same (pid, tid) thread;
    each group in list order."""
    owner: dict[tuple[int, int], int] = {}  # thread -> group label
    label = list(range(len(live)))

    def find(k: int) -> int:
        while label[k] != k:
            k = label[k]
        return k

    for k, s in enumerate(live):
        pid = np.asarray(s.pid, np.int64)
        tid = np.asarray(s.tid, np.int64)
        if pid.min() == pid.max():  # one process (the usual layer): its distinct tids
            threads = [(int(pid[0]), t) for t in pd.unique(tid).tolist()]
        else:
            pairs = pd.DataFrame({"p": pid, "t": tid}).drop_duplicates()
            threads = list(zip(pairs["p"].tolist(), pairs["t"].tolist()))
        for thread in threads:
            other = owner.setdefault(thread, k)
            a, b = find(other), find(k)
            if a != b:
                label[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for k in range(len(live)):
        groups.setdefault(find(k), []).append(k)
    return list(groups.values())


def _negative_durations(live: list[Slices], limit: int) -> list[str]:
    """The first ``limit`` slices with a negative duration, in timeline order."""
    out: list[str] = []
    for s in live:
        for i in np.flatnonzero(np.asarray(s.dur_ns, np.int64) < 0)[:limit - len(out)].tolist():
            out.append(negative_message(int(s.pid[i]), int(s.tid[i]), int(s.start_ns[i])))
        if len(out) >= limit:
            break
    return out


def _overlap_messages(live: list[Slices], bounds: np.ndarray, keys: np.ndarray, limit: int) -> list[str]:
    """Messages for the first ``limit`` overlapping slices in :func:`overlap_order`."""
    order = np.lexsort(keys[::-1])[:limit]
    out = []
    for g in keys[4][order].tolist():
        k = int(np.searchsorted(bounds, g, side="right") - 1)
        s, i = live[k], g - int(bounds[k])
        out.append(overlap_message(int(s.pid[i]), int(s.tid[i]), int(s.start_ns[i]), int(s.dur_ns[i]),
                                   str(_label_names(s)[i])))
    return out

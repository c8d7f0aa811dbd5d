"""``msprof[_{model}_{iter}].pftrace``: the timeline in Perfetto's native protobuf format.

The content is the same :class:`~msprof_py.export.timeline.Timeline` that ``msprof_{device}.json``
is written from (:func:`~msprof_py.export.timeline.build_timeline`), for every device of the PROF
dir in one file:

* one thread track per (pid, tid) of the JSON, with msprof's process / thread names, process
  labels and sort indices (``ProcessDescriptor`` / ``ThreadDescriptor``); pids are msprof's
  formatted pids (``(pid << 10) | (sortIndex << 5) | deviceId``), wrapped to int32 as the
  protobuf field requires;
* every X event as a ``TYPE_SLICE_BEGIN`` / ``TYPE_SLICE_END`` pair at integer-nanosecond
  timestamps (no "shorten by up to 1 µs" adjustment: nothing here goes through doubles), its
  ``cat`` as an interned category, its args as debug annotations (ints as ints, µs values as
  doubles, strings interned);
* every HostToDevice flow as ``flow_ids`` on the launch slice and ``terminating_flow_ids`` on the
  device task (or HCCL op) slice starting at the flow's ``f`` timestamp on its thread;
* every C event series as a process counter track named ``"{name} {key}"`` (the JSON importer's
  naming), with double values.

How it is written: the descriptors and the interned names go through the ``perfetto`` package's
:class:`TraceProtoBuilder` (few packets); the millions of event packets are encoded column-wise
by :mod:`msprof_py.export.protowire` (the builder costs ~1.7 s per million bare slices, more with
args), in time order on one packet sequence, so the trace processor needs no re-sorting and
same-timestamp begin/end pairs keep their nesting.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.atomic import atomic_open
from msprof_py.export.base import ExportContext, Naming, register
from msprof_py.export.perfetto_events import BlockEncoder, Interner, encode_counter_values, slice_end_packets
from msprof_py.export.protowire import interleave
from msprof_py.export.rows import WORKERS
from msprof_py.export.session_access import device_ids
from msprof_py.export.timeline import build_timeline
from msprof_py.export.timeline_model import Timeline
from msprof_py.parse.session import Session

SEQ = 1  # the one trusted_packet_sequence_id of every packet
DELTA_CLOCK = 64  # a sequence-scoped clock id (64..127): incremental, in ns
BOOTTIME = 6  # the default trace clock; the snapshot maps DELTA_CLOCK onto it with offset 0
CHUNK_EVENTS = 1 << 16
BEGIN, END, COUNT = 0, 1, 2


def all_devices_timeline(session: Session, ctx: ExportContext) -> Timeline:
    """The per-device timelines of ``msprof_{d}.json`` for every device, as one timeline (each
    host thread's calls belong to exactly one device's file, so nothing is doubled; shared
    process/thread metadata is kept once)."""
    out = Timeline()
    seen: set[tuple[Any, ...]] = set()
    for dev in device_ids(session):
        tl = build_timeline(session, dev, ctx)
        for e in tl.meta.events:
            key = (e["name"], e["pid"], e["tid"])
            if key not in seen:
                seen.add(key)
                out.meta.events.append(e)
        out.slices += [s for s in tl.slices if len(s)]
        out.flows += [f for f in tl.flows if len(f)]
        out.counters += [c for c in tl.counters if len(c)]
    return out


def _int32(v: int) -> int:
    return ((int(v) + (1 << 31)) % (1 << 32)) - (1 << 31)


def _pairs(pid: np.ndarray, tid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (pid, tid) of a block (cheap when the block is on one process)."""
    pid, tid = np.asarray(pid, np.int64), np.asarray(tid, np.int64)
    if len(pid) and pid.min() == pid.max():
        t = pd.unique(tid)
        return np.full(len(t), pid[0], np.int64), np.asarray(t, np.int64)
    df = pd.DataFrame({"p": pid, "t": tid}).drop_duplicates()
    return df["p"].to_numpy(np.int64), df["t"].to_numpy(np.int64)


class Tracks:
    """Track uuids: one per process, per (pid, tid) thread and per counter series."""

    def __init__(self, tl: Timeline) -> None:
        pairs = [_pairs(s.pid, s.tid) for s in tl.slices]
        for f in tl.flows:
            pairs += [_pairs(f.s_pid, f.s_tid), _pairs(f.f_pid, f.f_tid)]
        for e in tl.meta.events:
            if e["name"].startswith("thread_"):
                pairs.append((np.array([e["pid"]], np.int64), np.array([e["tid"]], np.int64)))
        pt = pd.DataFrame({"pid": np.concatenate([p for p, _ in pairs]) if pairs else np.array([], np.int64),
                           "tid": np.concatenate([t for _, t in pairs]) if pairs else np.array([], np.int64)})
        pt = pt.drop_duplicates().sort_values(["pid", "tid"], kind="stable").reset_index(drop=True)
        self.threads = pd.MultiIndex.from_arrays([pt["pid"].to_numpy(), pt["tid"].to_numpy()])
        self._pid_col, self._tid_col = pt["pid"].to_numpy(np.int64), pt["tid"].to_numpy(np.int64)
        procs = sorted(set(pt["pid"].tolist()) | {int(c.pid) for c in tl.counters}
                       | {int(e["pid"]) for e in tl.meta.events})
        self.process_uuid = {p: i + 1 for i, p in enumerate(procs)}
        self.thread_base = len(procs) + 1
        self.counter_uuid: dict[tuple[int, str], int] = {}
        nxt = self.thread_base + len(self.threads)
        for c in tl.counters:
            for key in c.series:
                k = (int(c.pid), f"{c.name} {key}")
                if k not in self.counter_uuid:
                    self.counter_uuid[k] = nxt
                    nxt += 1

    def thread_uuids(self, pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
        pid, tid = np.asarray(pid, np.int64), np.asarray(tid, np.int64)
        if len(pid) and pid.min() == pid.max():  # one process (most layers): a sorted lookup
            lo, hi = np.searchsorted(self._pid_col, [pid[0], pid[0] + 1])
            return (lo + np.searchsorted(self._tid_col[lo:hi], tid) + self.thread_base).astype(np.uint64)
        idx = self.threads.get_indexer(pd.MultiIndex.from_arrays([np.asarray(pid, np.int64),
                                                                  np.asarray(tid, np.int64)]))
        return (idx + self.thread_base).astype(np.uint64)

    def descriptor_packets(self, tl: Timeline, builder: Any) -> None:
        proc_meta: dict[int, dict[str, Any]] = {}
        thread_meta: dict[tuple[int, int], dict[str, Any]] = {}
        for e in tl.meta.events:
            kind, arg = e["name"], next(iter(e["args"].values()))
            if kind.startswith("process_"):
                proc_meta.setdefault(int(e["pid"]), {})[kind] = arg
            else:
                thread_meta.setdefault((int(e["pid"]), int(e["tid"])), {})[kind] = arg
        for pid, uuid in self.process_uuid.items():
            td = builder.add_packet().track_descriptor
            td.uuid = uuid
            td.process.pid = _int32(pid)
            m = proc_meta.get(pid, {})
            if "process_name" in m:
                td.process.process_name = str(m["process_name"])
            if "process_labels" in m:
                td.process.process_labels.append(str(m["process_labels"]))
            if "process_sort_index" in m:
                td.process.legacy_sort_index = int(m["process_sort_index"])
        for i, (pid, tid) in enumerate(self.threads):
            td = builder.add_packet().track_descriptor
            td.uuid = self.thread_base + i
            td.parent_uuid = self.process_uuid[int(pid)]
            td.thread.pid = _int32(pid)
            td.thread.tid = int(tid)
            m = thread_meta.get((int(pid), int(tid)), {})
            if "thread_name" in m:
                td.thread.thread_name = str(m["thread_name"])
            if "thread_sort_index" in m:
                td.thread.legacy_sort_index = int(m["thread_sort_index"])
        for (pid, name), uuid in self.counter_uuid.items():
            td = builder.add_packet().track_descriptor
            td.uuid = uuid
            td.parent_uuid = self.process_uuid[pid]
            td.name = name
            td.counter.SetInParent()


def _event_table(tl: Timeline, slice_tracks: list[np.ndarray],
                 counter_tracks: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group code, row, timestamp) of every begin, end and counter event, in the order written.

    Order: by timestamp; on one track at one timestamp, slice ends first (innermost, i.e.
    shortest, first), then begins (outermost, i.e. longest, first), then the ends of zero-length
    slices opened there.  Events of different tracks need no relative order at one timestamp,
    so: a (class, track) key sorted first (small ints), a stable sort by timestamp (the tracks
    are sorted runs), then only the events sharing timestamp, class and track are ordered by
    duration -- few, unlike the events merely sharing a timestamp (a task's end is often the
    next task's start, or a Computing interval's).
    """
    ts, dur, cls, trk, grp, row = [], [], [], [], [], []
    for k, s in enumerate(tl.slices):
        start = np.asarray(s.start_ns, np.int64)
        d = np.maximum(np.asarray(s.dur_ns, np.int64), 0)
        n = len(s)
        r = np.arange(n, dtype=np.int32)
        u = np.asarray(slice_tracks[k], np.int32)
        ts += [start, start + d]
        dur += [d, d]
        cls += [np.ones(n, np.int8), np.where(d > 0, 0, 2).astype(np.int8)]
        trk += [u, u]
        grp += [np.full(n, 3 * k + BEGIN, np.int32), np.full(n, 3 * k + END, np.int32)]
        row += [r, r]
    base = 3 * len(tl.slices)
    for k, c in enumerate(tl.counters):
        n = len(c)
        ts.append(np.asarray(c.ts_ns, np.int64))
        dur.append(np.zeros(n, np.int64))
        cls.append(np.ones(n, np.int8))
        trk.append(np.full(n, counter_tracks[k][0] if counter_tracks[k] else 0, np.int32))
        grp.append(np.full(n, base + k, np.int32))
        row.append(np.arange(n, dtype=np.int32))
    if not ts:
        e = np.array([], np.int64)
        return e.astype(np.int32), e, e
    t = np.concatenate(ts)
    tk = np.concatenate(trk)
    key = np.concatenate(cls).astype(np.int64) * (int(tk.max()) + 1) + tk
    pre = np.argsort(key.astype(np.int16) if key.max() < 1 << 15 else key, kind="stable")
    order = pre[np.argsort(t[pre], kind="stable")]
    t, key = t[order], key[order]
    same = (t[1:] == t[:-1]) & (key[1:] == key[:-1])
    if same.any():
        tie = np.zeros(len(t), bool)
        tie[1:] |= same
        tie[:-1] |= same
        at = np.flatnonzero(tie)
        sub = order[at]
        run = np.cumsum(np.concatenate([[0], ~same[at[:-1]]]))  # a new run where the pair differs
        c = np.concatenate(cls)[sub].astype(np.int64)
        d = np.concatenate(dur)[sub]
        # begins: longest first; ends: shortest first (the later-started, inner slice)
        order[at] = sub[np.lexsort((np.where(c == 1, -d, d), run))]
    return np.concatenate(grp)[order], np.concatenate(row)[order], t


def ordered_map(fn: Callable[[int], bytes], items: Iterable[int], workers: int = WORKERS) -> Iterator[bytes]:
    """``fn`` over ``items`` on a small thread pool (numpy releases the GIL for most of the
    encoding), results in order, only a few in flight."""
    if workers <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: deque[Future[bytes]] = deque()
        for it in items:
            pending.append(pool.submit(fn, it))
            if len(pending) > 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _without_negative_times(tl: Timeline, ctx: ExportContext | None) -> Timeline:
    """Trace timestamps are unsigned: events before 0 ns (unknown times) are left out, with a
    warning, instead of wrapping around."""
    from msprof_py.export.timeline_slices import take_counters, take_slices

    def bad(start: np.ndarray, dur: np.ndarray | None = None) -> np.ndarray:
        start = np.asarray(start, np.int64)
        return (start < 0) | ((start + np.asarray(dur, np.int64)) < 0 if dur is not None else False)

    n_bad = sum(int(bad(s.start_ns, s.dur_ns).sum()) for s in tl.slices) + \
        sum(int(bad(c.ts_ns).sum()) for c in tl.counters)
    if not n_bad:
        return tl
    if ctx is not None:
        ctx.warnings.warn(f"native trace: {n_bad} events with a negative timestamp (unknown time) left out")
    out = Timeline(meta=tl.meta, flows=tl.flows)
    out.slices = [take_slices(s, np.flatnonzero(~bad(s.start_ns, s.dur_ns))) for s in tl.slices]
    out.counters = [take_counters(c, np.flatnonzero(~bad(c.ts_ns))) for c in tl.counters]
    return out


def trace_chunks(tl: Timeline, ctx: ExportContext | None = None) -> Iterator[bytes]:
    """The whole ``.pftrace`` as byte chunks (a ``perfetto.protos.Trace``)."""
    from perfetto.trace_builder.proto_builder import TraceProtoBuilder

    tl = _without_negative_times(tl, ctx)
    tracks = Tracks(tl)
    uuids = [tracks.thread_uuids(s.pid, s.tid) for s in tl.slices]
    counter_tracks = [[tracks.counter_uuid[(int(c.pid), f"{c.name} {key}")] for key in c.series]
                      for c in tl.counters]
    with ThreadPoolExecutor(max_workers=1) as pool:  # the event order is sorted meanwhile
        table = pool.submit(_event_table, tl, uuids, counter_tracks)
        interner = Interner()
        encoders = [BlockEncoder(s, u, interner) for s, u in zip(tl.slices, uuids)]
        dropped = BlockEncoder.attach_flows(encoders, tl.flows)
        grp, row, ts = table.result()
    if dropped and ctx is not None:
        ctx.warnings.warn(f"native trace: {dropped} flows have no slice starting at one of their ends "
                          "on its thread and were left out")
    t0 = int(ts[0]) if len(ts) else 0
    head = TraceProtoBuilder()
    p = head.add_packet()
    p.trusted_packet_sequence_id = SEQ
    p.sequence_flags = 1  # SEQ_INCREMENTAL_STATE_CLEARED
    p.first_packet_on_sequence = True
    interner.fill(p.interned_data)
    # every event timestamp is a delta on the sequence's incremental clock (1-3 bytes instead of 9)
    p.trace_packet_defaults.timestamp_clock_id = DELTA_CLOCK
    p = head.add_packet()
    p.trusted_packet_sequence_id = SEQ
    for clock_id, incremental in ((DELTA_CLOCK, True), (BOOTTIME, False)):
        c = p.clock_snapshot.clocks.add()
        c.clock_id, c.timestamp = clock_id, t0
        if incremental:
            c.is_incremental = True
    tracks.descriptor_packets(tl, head)
    yield head.serialize()
    delta = np.diff(ts, prepend=t0)

    def render(a: int) -> bytes:
        g, r, t = grp[a:a + CHUNK_EVENTS], row[a:a + CHUNK_EVENTS], delta[a:a + CHUNK_EVENTS]
        parts = []
        for code in np.unique(g).tolist():
            pos = np.flatnonzero(g == code)
            if code >= 3 * len(tl.slices):
                k = code - 3 * len(tl.slices)
                msgs = encode_counter_values(tl.counters[k], counter_tracks[k], r[pos], t[pos], SEQ)
            else:
                enc = encoders[code // 3]
                msgs = enc.begin_packets(r[pos], t[pos], SEQ) if code % 3 == BEGIN \
                    else slice_end_packets(enc.uuids[r[pos]], t[pos], SEQ)
            mat, mask = msgs.matrix()
            parts.append((pos, mat, mask))
        return interleave(parts, len(g))

    yield from ordered_map(render, range(0, len(grp), CHUNK_EVENTS))


def write_trace(tl: Timeline, path: Path, ctx: ExportContext) -> Path:
    with atomic_open(path) as fp:
        for c in trace_chunks(tl, ctx):
            fp.write(c)
    return path


class PerfettoTrace:
    name = "msprof"
    kind = "trace"
    per_device = False
    describe = ("native Perfetto trace of every device: the msprof_*.json layers as protobuf track events "
                "(integer ns timestamps, flows, counter tracks); open it in ui.perfetto.dev")

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        tl = all_devices_timeline(session, ctx)
        if not tl:
            return []
        return [write_trace(tl, out_dir / naming.file("msprof", "pftrace", device=False), ctx)]


register(PerfettoTrace())

"""Track-event packets of the native trace, encoded column-wise (see :mod:`protowire`).

Field numbers are those of ``perfetto/trace/perfetto_trace.proto`` (the ``perfetto`` package's
``perfetto_trace_pb2``; tests decode every trace with it):

* ``Trace.packet`` = 1; ``TracePacket``: timestamp 8, trusted_packet_sequence_id 10,
  track_event 11, sequence_flags 13;
* ``TrackEvent``: category_iids 3, debug_annotations 4, type 9 (1 begin, 2 end, 4 counter),
  name_iid 10, track_uuid 11, double_counter_value 44, flow_ids 47, terminating_flow_ids 48;
* ``DebugAnnotation``: name_iid 1, int_value 4, double_value 5, string_value_iid 17.

Names, categories, annotation names and string values are interned once in the first packet
(:class:`Interner`), so an event carries small integer ids only.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from msprof_py.export.protowire import Messages, tag, varint_block, varint_bytes
from msprof_py.export.trace_events import Counters, Flows, Slices

SEQ_NEEDS_INCREMENTAL_STATE = 2
ARGS_NONE = "N/A"


class Interner:
    """Interned strings of one packet sequence: event names, categories, annotation names and
    annotation string values, each table with its own iids from 1."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, int]] = {"names": {}, "cats": {}, "keys": {}, "values": {}}

    def ids(self, table: str, strings: list[str]) -> np.ndarray:
        t = self.tables[table]
        return np.array([t.setdefault(s, len(t) + 1) for s in strings], dtype=np.uint64)

    def fill(self, interned: Any) -> None:
        """Write every table into an ``InternedData`` message."""
        for s, i in self.tables["names"].items():
            e = interned.event_names.add()
            e.iid, e.name = i, s
        for s, i in self.tables["cats"].items():
            e = interned.event_categories.add()
            e.iid, e.name = i, s
        for s, i in self.tables["keys"].items():
            e = interned.debug_annotation_names.add()
            e.iid, e.name = i, s
        for s, i in self.tables["values"].items():
            e = interned.debug_annotation_string_values.add()
            e.iid, e.str = i, s.encode()


def codes_of(values: Any, n: int) -> tuple[np.ndarray, list[str]]:
    """(codes, strings) of a name/arg column: a str (same for all), categorical or per-row
    values; missing values read "N/A" as in the JSON."""
    if isinstance(values, str):
        return np.zeros(n, np.int64), [values]
    if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype) or isinstance(values, pd.Categorical):
        cat = pd.Categorical(values)
        codes = np.asarray(cat.codes, np.int64)
        strings = [str(c) for c in cat.categories.tolist()]
    else:
        codes, uniques = pd.factorize(pd.Series(np.asarray(values, dtype=object), dtype=object), sort=False)
        codes = np.asarray(codes, np.int64)
        strings = [str(u) for u in uniques]
    if (codes < 0).any():
        codes = np.where(codes < 0, len(strings), codes)
        strings.append(ARGS_NONE)
    return codes, strings


def _us_text(ns: np.ndarray) -> list[str]:
    return [f"{v // 1000}.{v % 1000:03d}" if v >= 0 else f"-{-v // 1000}.{-v % 1000:03d}" for v in ns.tolist()]


class _Annotation:
    """One args key as debug-annotation columns: int, double or interned string (per row)."""

    def __init__(self, key_iid: int, kind: str, values: Any, n: int, interner: Interner) -> None:
        self.key_iid = key_iid
        self.ints = self.doubles = self.strings = None
        self.has_double = self.has_string = None
        self.int_field = 3 if kind == "u64" else 4  # DebugAnnotation uint_value / int_value
        if kind in ("int", "u64"):  # a uint64 as its 64 bits (the same varint)
            self.ints = np.asarray(values, np.int64)
        elif kind == "us":
            self.doubles = np.asarray(values, np.int64) / 1000.0
        elif kind == "tsstr":
            uniq, inv = np.unique(np.asarray(values, np.int64), return_inverse=True)
            self.strings = interner.ids("values", _us_text(uniq))[inv.reshape(-1)]
        elif kind == "str":
            codes, strings = codes_of(values, n)
            self.strings = interner.ids("values", strings)[codes]
        elif kind == "raw":  # preformatted JSON: numbers stay numbers, "null" is left out
            codes, strings = codes_of(values, n)
            num = np.array([_is_number(s) for s in strings], dtype=bool)
            val = np.array([float(s) if ok else 0.0 for s, ok in zip(strings, num)], dtype=np.float64)
            text = [s for s, ok in zip(strings, num)]
            is_null = np.array([s == "null" for s in strings], dtype=bool)
            self.doubles, self.has_double = val[codes], num[codes]
            self.strings = interner.ids("values", text)[codes]
            self.has_string = (~num & ~is_null)[codes]
        else:
            raise ValueError(kind)

    def add_to(self, te: Messages, rows: np.ndarray) -> None:
        head = tag(1, 0) + varint_bytes(self.key_iid)
        if self.ints is not None:
            te.small_message(4, head, self.int_field, self.ints[rows])
            return
        if self.doubles is not None:
            te.small_message(4, head, 5, self.doubles[rows], None if self.has_double is None else self.has_double[rows])
        if self.strings is not None:
            te.small_message(4, head, 17, self.strings[rows], None if self.has_string is None else self.has_string[rows])


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return s not in ("nan", "inf", "-inf", "NaN")


class BlockEncoder:
    """Begin packets of one :class:`Slices` block: names, category, args and flow ends resolved
    once for the whole block, packets encoded for any subset of its rows."""

    def __init__(self, s: Slices, uuids: np.ndarray, interner: Interner) -> None:
        n = len(s)
        self.s, self.uuids = s, uuids
        codes, names = codes_of(s.name, n)
        self.name_iids = interner.ids("names", names)[codes]
        self.cat_iid = int(interner.ids("cats", [s.cat])[0]) if s.cat is not None else None
        self.args = [_Annotation(int(interner.ids("keys", [a.key])[0]), a.kind, a.values, n, interner)
                     for a in s.args]
        self.flows_out: list[tuple[np.ndarray, np.ndarray]] = []  # (present mask, id) per rank
        self.flows_in: list[tuple[np.ndarray, np.ndarray]] = []

    @staticmethod
    def attach_flows(encoders: list["BlockEncoder"], flows: list[Flows]) -> int:
        """Put each flow's id on the slice starting at its ``s`` end (the launch) and at its ``f``
        end (the device task), on the same thread; the longest such slice when several start
        there.  Returns how many flows found no slice at an end (left out)."""
        flows = [f for f in flows if len(f)]
        if not flows or not encoders:
            return sum(len(f) for f in flows)
        end_pids = np.unique(np.concatenate([np.concatenate([f.s_pid, f.f_pid]) for f in flows]).astype(np.int64))
        # only blocks on a process some flow ends in (not the overlap or step-trace layers)
        cand = [k for k, e in enumerate(encoders)
                if np.isin(np.unique(np.asarray(e.s.pid, np.int64)), end_pids).any()]
        keys = pd.DataFrame({
            "pid": np.concatenate([np.asarray(encoders[k].s.pid, np.int64) for k in cand]),
            "tid": np.concatenate([np.asarray(encoders[k].s.tid, np.int64) for k in cand]),
            "ns": np.concatenate([np.asarray(encoders[k].s.start_ns, np.int64) for k in cand]),
            "dur": np.concatenate([np.asarray(encoders[k].s.dur_ns, np.int64) for k in cand]),
            "block": np.concatenate([np.full(len(encoders[k].s), k, np.int64) for k in cand]),
            "row": np.concatenate([np.arange(len(encoders[k].s), dtype=np.int64) for k in cand])}) \
            if cand else pd.DataFrame({c: np.array([], np.int64) for c in ("pid", "tid", "ns", "dur", "block", "row")})
        s_at = [f.s_ns if f.s_slice_ns is None else f.s_slice_ns for f in flows]  # the slice an s binds to
        end_ns = np.concatenate([np.concatenate([s, f.f_ns]) for s, f in zip(s_at, flows)]).astype(np.int64)
        keys = keys[np.isin(keys["ns"].to_numpy(), end_ns)]  # a small table for the joins below
        ids = np.concatenate([np.asarray(f.ids, np.int64) for f in flows])
        if len(np.unique(ids)) != len(ids):  # two devices' files may reuse an id: renumber
            ids = np.arange(1, len(ids) + 1, dtype=np.int64)
        ends = {}
        for side in ("s", "f"):
            ends[side] = pd.DataFrame({
                "pid": np.concatenate([getattr(f, f"{side}_pid") for f in flows]).astype(np.int64),
                "tid": np.concatenate([getattr(f, f"{side}_tid") for f in flows]).astype(np.int64),
                "ns": np.concatenate(s_at if side == "s" else [f.f_ns for f in flows]).astype(np.int64),
                "id": ids}).merge(keys, on=["pid", "tid", "ns"], how="left")
            # several slices starting there (a parent and its first child): the longest one
            ends[side] = ends[side].sort_values(["id", "dur"], ascending=[True, False], kind="stable") \
                .drop_duplicates("id").sort_values("id", kind="stable").reset_index(drop=True)
        ok = ends["s"]["block"].notna().to_numpy() & ends["f"]["block"].notna().to_numpy()
        for side, attr in (("s", "flows_out"), ("f", "flows_in")):
            e = ends[side][ok]
            e = e.assign(block=e["block"].astype(np.int64), row=e["row"].astype(np.int64))
            e = e.assign(rank=e.groupby(["block", "row"]).cumcount())
            for (block, rank), grp in e.groupby(["block", "rank"]):
                enc = encoders[int(block)]
                present = np.zeros(len(enc.s), bool)
                fid = np.zeros(len(enc.s), np.uint64)
                r = grp["row"].to_numpy(np.int64)
                present[r] = True
                fid[r] = grp["id"].to_numpy(np.int64).astype(np.uint64)
                getattr(enc, attr).append((present, fid))
        return int((~ok).sum())

    def begin_packets(self, rows: np.ndarray, ts: np.ndarray, seq: int) -> Messages:
        n = len(rows)
        uuid, name = self.uuids[rows], self.name_iids[rows]
        te = Messages(n)
        if n and int(uuid.max()) < 128 and int(name.max()) < 128:  # type, track, name: one block
            head = np.empty((n, 6), dtype=np.uint8)
            head[:, :3] = np.frombuffer(tag(9, 0) + b"\x01" + tag(11, 0), dtype=np.uint8)  # TYPE_SLICE_BEGIN
            head[:, 3] = uuid
            head[:, 4] = tag(10, 0)[0]
            head[:, 5] = name
            te.blocks.append((head, None))
        else:
            te.const(tag(9, 0) + varint_bytes(1)).varint(11, uuid).varint(10, name)
        if self.cat_iid is not None:
            te.const(tag(3, 0) + varint_bytes(self.cat_iid))
        for a in self.args:
            a.add_to(te, rows)
        for present, fid in self.flows_out:
            te.fixed64(47, fid[rows], present[rows])
        for present, fid in self.flows_in:
            te.fixed64(48, fid[rows], present[rows])
        pkt = Messages(n).varint(8, ts).message(11, te)
        pkt.const(tag(10, 0) + varint_bytes(seq) + tag(13, 0) + varint_bytes(SEQ_NEEDS_INCREMENTAL_STATE))
        return Messages(n).message(1, pkt)


def slice_end_packets(uuids: np.ndarray, ts: np.ndarray, seq: int) -> Messages:
    n = len(uuids)
    u = np.asarray(uuids, np.uint64)
    if n and int(u.max()) < 128 and seq < 128:
        # the common case in one block and one varint: Trace.packet{timestamp, track_event{type,
        # track_uuid}, trusted_packet_sequence_id}; every length fits one byte
        tail = tag(11, 2) + b"\x04" + tag(9, 0) + b"\x02" + tag(11, 0)
        mat, lens = varint_block(ts, tag(1, 2) + b"\x00" + tag(8, 0))
        rest = np.empty((n, len(tail) + 1 + 2), dtype=np.uint8)
        rest[:, :len(tail)] = np.frombuffer(tail, dtype=np.uint8)
        rest[:, len(tail)] = u
        rest[:, len(tail) + 1:] = np.frombuffer(tag(10, 0) + bytes([seq]), dtype=np.uint8)
        mat[:, 1] = lens - 2 + rest.shape[1]
        out = Messages(n)
        out.blocks = [(mat, lens), (rest, None)]
        return out
    te = Messages(n).const(tag(9, 0) + varint_bytes(2)).varint(11, uuids)  # TYPE_SLICE_END
    pkt = Messages(n).varint(8, ts).message(11, te).const(tag(10, 0) + varint_bytes(seq))
    return Messages(n).message(1, pkt)


def encode_counter_values(c: Counters, uuids: list[int], rows: np.ndarray, ts: np.ndarray, seq: int) -> Messages:
    """One TYPE_COUNTER packet per series for each C event at ``rows``."""
    n = len(rows)
    out = Messages(n)
    for uuid, values in zip(uuids, c.series.values()):
        te = Messages(n).const(tag(9, 0) + varint_bytes(4) + tag(11, 0) + varint_bytes(uuid))
        te.fixed64(44, np.asarray(values, np.float64)[rows])
        pkt = Messages(n).varint(8, ts).message(11, te).const(tag(10, 0) + varint_bytes(seq))
        out.message(1, pkt)
    return out

"""Read a ``.pftrace`` back with the ``perfetto`` package's protos (no trace processor needed)
and a ``msprof_*.json`` into the same shape, so tests can compare the two event by event."""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import orjson
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb


def _ns(ts: str) -> int:
    whole, _, frac = ts.partition(".")
    return int(whole) * 1000 + int((frac + "000")[:3]) * (1 if not whole.startswith("-") else -1)


class Read:
    """slices: (pid, tid, name, start_ns, dur_ns, cat, args); flows: {((pid, tid, ns), (pid, tid, ns))};
    threads: {(pid, tid): name}; processes: {pid: (name, label, sort)}; counters: {(pid, track): [(ns, v)]}."""

    def __init__(self) -> None:
        self.slices: list[tuple[Any, ...]] = []
        self.flows: set[tuple[tuple[int, int, int], tuple[int, int, int]]] = set()
        self.threads: dict[tuple[int, int], str] = {}
        self.processes: dict[int, tuple[Any, ...]] = {}
        self.counters: dict[tuple[int, str], list[tuple[int, float]]] = defaultdict(list)
        self.problems: list[str] = []

    def keys(self) -> Counter:
        return Counter((s[0], s[1], s[2], s[3]) for s in self.slices)


def _i32(v: int) -> int:
    return ((v + (1 << 31)) % (1 << 32)) - (1 << 31)


def read_pftrace(path: Path) -> Read:
    trace = pb.Trace.FromString(Path(path).read_bytes())
    out = Read()
    names: dict[str, dict[int, str]] = {"n": {}, "c": {}, "k": {}, "v": {}}
    tracks: dict[int, Any] = {}
    clock_default, incremental, now = None, {}, 0
    stacks: dict[int, list[list[Any]]] = defaultdict(list)
    flow_out: dict[int, tuple[int, int, int]] = {}
    flow_in: dict[int, tuple[int, int, int]] = {}
    proc_pid: dict[int, int] = {}
    for p in trace.packet:
        if p.HasField("interned_data"):
            d = p.interned_data
            names["n"].update({e.iid: e.name for e in d.event_names})
            names["c"].update({e.iid: e.name for e in d.event_categories})
            names["k"].update({e.iid: e.name for e in d.debug_annotation_names})
            names["v"].update({e.iid: e.str.decode() for e in d.debug_annotation_string_values})
        if p.HasField("trace_packet_defaults"):
            clock_default = p.trace_packet_defaults.timestamp_clock_id
        if p.HasField("clock_snapshot"):
            for c in p.clock_snapshot.clocks:
                if c.is_incremental:
                    incremental[c.clock_id] = c.timestamp
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            if td.HasField("process"):
                proc_pid[td.uuid] = td.process.pid
                out.processes[td.process.pid] = (td.process.process_name,
                                                 list(td.process.process_labels), td.process.legacy_sort_index)
            if td.HasField("thread"):
                tracks[td.uuid] = ("thread", td.thread.pid, td.thread.tid)
                out.threads[(td.thread.pid, td.thread.tid)] = td.thread.thread_name
            elif td.HasField("counter"):
                tracks[td.uuid] = ("counter", td.parent_uuid, td.name)
        if not p.HasField("track_event"):
            continue
        clock = p.timestamp_clock_id or clock_default
        if clock in incremental:
            incremental[clock] += p.timestamp
            now = incremental[clock]
        else:
            now = p.timestamp
        te = p.track_event
        kind = tracks[te.track_uuid]
        if te.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            args = {}
            for a in te.debug_annotations:
                key = names["k"][a.name_iid]
                which = a.WhichOneof("value")
                args[key] = {"int_value": lambda: a.int_value, "uint_value": lambda: a.uint_value,
                             "double_value": lambda: a.double_value,
                             "string_value_iid": lambda: names["v"][a.string_value_iid]}[which]()
            cat = names["c"][te.category_iids[0]] if len(te.category_iids) else None
            rec = [kind[1], kind[2], names["n"][te.name_iid], now, None, cat, args]
            stacks[te.track_uuid].append(rec)
            for f in te.flow_ids:
                flow_out[f] = (kind[1], kind[2], now)
            for f in te.terminating_flow_ids:
                flow_in[f] = (kind[1], kind[2], now)
        elif te.type == pb.TrackEvent.TYPE_SLICE_END:
            if not stacks[te.track_uuid]:
                out.problems.append(f"end without begin on track {te.track_uuid} at {now}")
                continue
            rec = stacks[te.track_uuid].pop()
            rec[4] = now - rec[3]
            out.slices.append(tuple(rec[:6]) + (rec[6],))
        elif te.type == pb.TrackEvent.TYPE_COUNTER:
            _, parent, name = kind
            out.counters[(proc_pid[parent], name)].append((now, te.double_counter_value))
    for uuid, st in stacks.items():
        if st:
            out.problems.append(f"{len(st)} unclosed slices on track {uuid}")
    for f, src in flow_out.items():
        if f not in flow_in:
            out.problems.append(f"flow {f} has no end")
        else:
            out.flows.add((src, flow_in[f]))
    return out


def read_json(paths: list[Path]) -> Read:
    out = Read()
    for path in paths:
        events = orjson.loads(Path(path).read_bytes())
        s_end: dict[str, tuple[int, int, int]] = {}
        f_end: dict[str, tuple[int, int, int]] = {}
        for e in events:
            ph = e["ph"]
            if ph == "X":
                out.slices.append((_i32(e["pid"]), e["tid"], e["name"], _ns(e["ts"]), round(e["dur"] * 1000),
                                   e.get("cat"), e["args"]))
            elif ph == "s":
                s_end[e["id"]] = (_i32(e["pid"]), e["tid"], _ns(e["ts"]))
            elif ph == "f":
                f_end[e["id"]] = (_i32(e["pid"]), e["tid"], _ns(e["ts"]))
            elif ph == "C":
                for k, v in e["args"].items():
                    out.counters[(_i32(e["pid"]), f"{e['name']} {k}")].append((_ns(e["ts"]), float(v)))
            elif ph == "M":
                pid, arg = _i32(e["pid"]), next(iter(e["args"].values()))
                if e["name"] == "thread_name":
                    out.threads[(pid, e["tid"])] = arg
                elif e["name"].startswith("process_"):
                    cur = list(out.processes.get(pid, ("", [], 0)))
                    i = {"process_name": 0, "process_labels": 1, "process_sort_index": 2}[e["name"]]
                    cur[i] = [arg] if i == 1 else arg
                    out.processes[pid] = tuple(cur)
        starts = {(sl[0], sl[1], sl[3]) for sl in out.slices}
        for fid, src in s_end.items():
            out.flows.add((src if src in starts else _binding_slice(out.slices, src), f_end[fid]))
    return out


def _binding_slice(slices: list, end: tuple[int, int, int]) -> tuple[int, int, int]:
    """The slice a JSON ``s`` binds to in viewers: the one starting there, else the innermost slice
    of its thread enclosing it (msprof's Python path starts flows inside the launch call)."""
    pid, tid, ns = end
    inside = [s for s in slices if s[0] == pid and s[1] == tid and s[3] <= ns <= s[3] + s[4]]
    if not inside:
        return end
    return (pid, tid, max(inside, key=lambda s: s[3])[3])

"""The ``msprof_*.json`` timeline: tracks, hardware events and flows.

- ``timeline``: process names (with their label, e.g. ``NPU 0``) and sort indices
  (``process_sort_index``), thread names, and the number of events on every track (``X`` slices
  per thread, ``C`` samples per counter);
- ``timeline.hw``: every event of the ``Ascend Hardware`` process, keyed by (device, thread,
  stream, task, subtask, batch), its name, ``Task Type`` arg, ``ts`` (printed µs) and ``dur``
  (to 0.001 µs, msprof writes the full float); the device is the number in the process label
  (``NPU 0``), or the process's rank among the hardware processes when the label has none (msprof's
  Python path labels every device ``NPU``);
- ``timeline.flows``: complete flows (an id with an ``s`` and an ``f``) per category, each one's
  ends and id, and the ``connection_id`` of the CANN calls and hardware events
  (benchmarks/parity/links.py).
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from benchmarks.parity.allow import comparators
from benchmarks.parity.cells import Check, compare_keyed
from benchmarks.parity.csvs import files_by_kind
from benchmarks.parity.links import compare_links

HW_PROCESS = "Ascend Hardware"
HW_KEY = ["device", "thread", "Physic Stream Id", "Task Id", "Subtask Id", "Batch Id"]
HW_COLS = ["name", "Task Type", "ts", "dur"]


def load_events(paths: list[Path]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for p in paths:
        doc = orjson.loads(p.read_bytes())
        events += doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    return events


class Layout:
    """Process and thread names of one timeline, and its events per track."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.proc: dict[Any, str] = {}
        self.label: dict[Any, str] = {}
        self.sort: dict[Any, Any] = {}
        self.thread: dict[tuple, str] = {}
        for e in events:
            if e.get("ph") != "M":
                continue
            name, args = e.get("name"), e.get("args") or {}
            if name == "process_name":
                self.proc[e.get("pid")] = str(args.get("name"))
            elif name == "process_labels":
                self.label[e.get("pid")] = str(args.get("labels"))
            elif name == "process_sort_index":
                self.sort[e.get("pid")] = args.get("sort_index")
            elif name == "thread_name":
                self.thread[(e.get("pid"), e.get("tid"))] = str(args.get("name"))
        self.tracks: Counter = Counter()
        self.hw: list[dict[str, Any]] = []
        self.x_events: list[dict[str, Any]] = []
        self.flow_events: list[dict[str, Any]] = []
        self.flows: Counter = Counter()
        self.flow_ids: dict[tuple[str, str], set[str]] = {}
        for e in events:
            ph = e.get("ph")
            if ph == "X":
                self.tracks[(self.pname(e["pid"]), self.tname(e))] += 1
                self.x_events.append(e)
                if self.proc.get(e.get("pid")) == HW_PROCESS:
                    self.hw.append(e)
            elif ph == "C":
                self.tracks[(self.pname(e["pid"]), f"counter {e.get('name')}")] += 1
            elif ph in ("s", "f", "t"):
                self.flow_events.append(e)
                self.flows[(str(e.get("cat")), ph)] += 1
                self.flow_ids.setdefault((str(e.get("cat")), ph), set()).add(str(e.get("id")))

    def pairs(self) -> Counter:
        """Complete flows (an id with both an ``s`` and an ``f``) per category."""
        cats = {c for c, _ in self.flow_ids}
        return Counter({c: len(self.flow_ids.get((c, "s"), set()) & self.flow_ids.get((c, "f"), set()))
                        for c in cats})

    def pname(self, pid: Any) -> str:
        return f"{self.proc.get(pid, pid)} ({self.label.get(pid, '')})"

    def tname(self, e: dict[str, Any]) -> str:
        return self.thread.get((e.get("pid"), e.get("tid")), f"tid {e.get('tid')}")

    def processes(self) -> set[str]:
        return {self.pname(p) for p in self.proc}

    def sort_indices(self) -> dict[str, set]:
        """process (name and label) -> its sort indices (one per process with that name)."""
        out: dict[str, set] = {}
        for p in self.proc:
            out.setdefault(self.pname(p), set()).add(self.sort.get(p))
        return out

    def threads(self) -> set[tuple[str, str]]:
        return {(self.pname(p), t) for (p, _), t in self.thread.items()}

    def device(self, pid: Any) -> str:
        digits = re.findall(r"\d+", self.label.get(pid, ""))
        if digits:
            return digits[0]
        hw = sorted((p for p, n in self.proc.items() if n == HW_PROCESS), key=str)
        return str(hw.index(pid)) if pid in hw else "?"

    def hw_rows(self) -> list[list[str]]:
        rows = []
        devs = {pid: self.device(pid) for pid in {e["pid"] for e in self.hw}}
        for e in self.hw:
            a = e.get("args") or {}
            dur = e.get("dur")
            rows.append([devs[e["pid"]], self.tname(e)]
                        + [str(a.get(k, "")) for k in HW_KEY[2:]]
                        + [str(e.get("name")), str(a.get("Task Type", "")), str(e.get("ts")),
                           f"{float(dur):.3f}" if dur is not None else ""])
        return rows


def compare_timeline(exp_dir: Path, our_dir: Path) -> list[Check]:
    exp = files_by_kind(exp_dir, "json").get("msprof")
    if not exp:
        return [Check("timeline", skipped=True), Check("timeline.hw", skipped=True),
                Check("timeline.flows", skipped=True)]
    ours = files_by_kind(our_dir, "json").get("msprof")
    le = Layout(load_events(exp))
    if not ours:
        out = []
        for name, n in (("timeline", sum(le.tracks.values())), ("timeline.hw", len(le.hw)),
                        ("timeline.flows", sum(le.flows.values()))):
            c = Check(name, rows_expected=n, missing=n)
            c.notes.append("no file")
            out.append(c)
        return out
    return compare_layouts(le, Layout(load_events(ours)))


def compare_layouts(le: Layout, lo: Layout) -> list[Check]:
    """The timeline checks of msprof's layout ``le`` against ours ``lo``."""
    return [_tracks(le, lo), _hw(le, lo), _flows(le, lo)]


def _tracks(le: Layout, lo: Layout) -> Check:
    c = Check("timeline", rows_expected=sum(le.tracks.values()), rows_ours=sum(lo.tracks.values()))
    pe, po = le.processes(), lo.processes()
    c.notes += [f"no process {p}" for p in sorted(pe - po)] + [f"extra process {p}" for p in sorted(po - pe)]
    se, so = le.sort_indices(), lo.sort_indices()
    for p in sorted(pe & po):
        if se[p] != so[p]:
            c.cells["sort index"] += 1
            c.example(f"{p} process_sort_index: msprof {sorted(se[p], key=str)}, msprof_py {sorted(so[p], key=str)}")
    te, to = le.threads(), lo.threads()
    miss_t = sorted(t for t in te - to if t[0] in po)
    extra_t = sorted(t for t in to - te if t[0] in pe)
    if miss_t:
        c.notes.append(f"{len(miss_t)} thread(s) missing")
        c.example("missing threads: " + ", ".join(f"{p}/{t}" for p, t in miss_t[:4]))
    if extra_t:
        c.notes.append(f"{len(extra_t)} extra thread(s)")
        c.example("extra threads: " + ", ".join(f"{p}/{t}" for p, t in extra_t[:4]))
    for track in sorted(set(le.tracks) | set(lo.tracks)):
        ne, no = le.tracks.get(track, 0), lo.tracks.get(track, 0)
        if ne != no and track[0] in pe and track[0] in po:
            c.cells["events per track"] += 1
            c.example(f"{track[0]}/{track[1]}: msprof {ne} events, msprof_py {no}")
    return c


def _hw(le: Layout, lo: Layout) -> Check:
    c = Check("timeline.hw")
    compare_keyed(c, HW_KEY + HW_COLS, le.hw_rows(), HW_KEY + HW_COLS, lo.hw_rows(), HW_KEY, "ts", None,
                  comparators("timeline.hw"))
    return c


def _flows(le: Layout, lo: Layout) -> Check:
    """Complete flows per category must agree, each with its ends and id, and the connection ids
    (links.compare_links); msprof's halves without a partner (an ``s`` or an ``f`` alone, which a
    viewer cannot draw) are the deliberate difference ``flow-halves``."""
    pe, po = le.pairs(), lo.pairs()
    c = Check("timeline.flows", rows_expected=sum(pe.values()), rows_ours=sum(po.values()))
    for k in sorted(set(pe) | set(po)):
        if pe.get(k, 0) != po.get(k, 0):
            c.notes.append(f"{k} flows {po.get(k, 0)}/{pe.get(k, 0)}")
    compare_links(le, lo, c)
    if sum(le.flows.values()) != 2 * sum(pe.values()) and not c.notes:
        c.deliberate.add("flow-halves")
    return c

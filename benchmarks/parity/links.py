"""The timeline's links: connection ids (CANN calls, hardware events) and HostToDevice flows.

Checked as ``timeline.flows``:

- CANN ``connection_id``: the calls of each thread and name, in time order, carry the same ids.
  msprof's C++ analysis numbers every event it builds with one counter that its parser threads
  share (``++g_eventIDCnt``), so where its task-track parser ran first the API ids start past the
  task tracks' (``add_torch_b1``: 2114 ...) or interleave with them: allowed (``connection-id-race``)
  when one strictly increasing map takes our ids to msprof's; the hardware events and flow ids are
  then compared through that map.
- hardware ``connection_id``: per event (device, stream, task, subtask, batch), exactly.  A task
  launched outside every API call gets, in msprof's C++ analysis, the id of its thread's root tree
  node (a number past every call's that counts msprof's internal events); we write "none" (-1,
  printed as C++ prints a uint64): allowed as ``root-connection``.
- flows: every complete flow of msprof (an ``s`` and an ``f``) has ours with the same ends (process,
  thread, ts) and the same id.  msprof's Python analysis numbers its task flows
  ``device << 80 | stream << 64 | task << 48 | batch << 32 | context``, past 2**53; ours keep
  ``connection_id << 32`` (README): allowed as ``flow-id-python`` when msprof's id is exactly that
  number of the task it ends at and ours is the task's connection id << 32.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from benchmarks.parity.cells import Check

UINT64_NONE = 2**64 - 1
NONE_IDS = (-1, UINT64_NONE)
CANN_PROCESS = "CANN"
HW_PROCESS = "Ascend Hardware"


def _int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def cann_ids(layout: Any) -> dict[tuple, int]:
    """(thread, call name, occurrence in time order) -> connection_id of the CANN calls."""
    by: dict[tuple, list] = defaultdict(list)
    for e in layout.x_events:
        if layout.proc.get(e.get("pid")) != CANN_PROCESS:
            continue
        cid = _int((e.get("args") or {}).get("connection_id"))
        if cid is not None:
            by[(layout.tname(e), str(e.get("name")))].append((float(e.get("ts", 0)), cid))
    out = {}
    for k, v in by.items():
        for i, (_, cid) in enumerate(sorted(v)):
            out[k + (i,)] = cid
    return out


def id_map(ids_e: dict[tuple, int], ids_o: dict[tuple, int]) -> tuple[dict[int, int], str, list[str]]:
    """Our connection id -> msprof's, from the calls both have; the mode ("exact", "race" or
    "differ") and examples of disagreement."""
    pairs = {}
    bad: list[str] = []
    for k, o in ids_o.items():
        e = ids_e.get(k)
        if e is None:
            continue
        if pairs.setdefault(o, e) != e:
            bad.append(f"CANN {k[1]} (thread {k[0]}): msprof_py id {o} is msprof's {pairs[o]} and {e}")
    if all(o == e for o, e in pairs.items()):
        return pairs, "exact", bad
    ours = sorted(pairs)
    increasing = all(pairs[a] < pairs[b] for a, b in zip(ours, ours[1:]))
    if increasing and not bad:
        return pairs, "race", bad
    for o in ours:
        if pairs[o] != o and len(bad) < 3:
            bad.append(f"CANN connection_id: msprof {pairs[o]}, msprof_py {o}")
    return pairs, "differ", bad


def _hw_key(layout: Any, e: dict) -> tuple:
    a = e.get("args") or {}
    return (layout.device(e["pid"]), str(a.get("Physic Stream Id")), str(a.get("Task Id")),
            str(a.get("Subtask Id")), str(a.get("Batch Id")))


def _end(layout: Any, e: dict) -> tuple:
    return (layout.pname(e.get("pid")), str(e.get("tid")), str(e.get("ts")))


def complete_flows(layout: Any) -> dict[str, dict[str, tuple]]:
    """flow id -> {"s": end, "f": end} for the ids with both ends (the first of each phase)."""
    out: dict[str, dict[str, tuple]] = defaultdict(dict)
    for e in layout.flow_events:
        if e.get("ph") in ("s", "f"):
            out[str(e.get("id"))].setdefault(e["ph"], _end(layout, e))
    return {i: v for i, v in out.items() if "s" in v and "f" in v}


def python_flow_id(layout: Any, hw: dict) -> int | None:
    """msprof's Python-path flow id of a hardware event (HostToDevice.add_task_connection_data)."""
    a = hw.get("args") or {}
    parts = [_int(a.get(k)) for k in ("Physic Stream Id", "Task Id", "Batch Id", "Subtask Id")]
    device = _int(layout.device(hw["pid"]))
    if device is None or any(p is None for p in parts):
        return None
    stream, task, batch, ctx = parts
    return (device << 80) + (stream << 64) + (task << 48) + (batch << 32) + ctx


def compare_links(le: Any, lo: Any, c: Check) -> None:
    """Adds the connection id and flow comparisons to the ``timeline.flows`` check ``c``."""
    mapping, mode, bad = id_map(cann_ids(le), cann_ids(lo))
    if mode == "race":
        c.deliberate.add("connection-id-race")
    elif mode == "differ":
        c.cells["CANN connection_id"] += len(bad) or 1
        for b in bad:
            c.example(b)
    msprof_calls = set(cann_ids(le).values())

    def ours_in_msprof(v: int) -> int:
        return mapping.get(v, v) if mode == "race" else v

    # hardware events
    he = {_hw_key(le, e): e for e in le.hw}
    ho = {_hw_key(lo, e): e for e in lo.hw}
    for k, e in he.items():
        o = ho.get(k)
        if o is None:
            continue
        ve = _int((e.get("args") or {}).get("connection_id"))
        vo = _int((o.get("args") or {}).get("connection_id"))
        if ve is None and vo is None:
            continue
        if ve is not None and vo is not None and ve == ours_in_msprof(vo):
            continue
        if vo in NONE_IDS and ve is not None and ve not in NONE_IDS and ve not in msprof_calls:
            c.deliberate.add("root-connection")
            continue
        c.cells["hardware connection_id"] += 1
        c.example(f"hardware event {k}: connection_id msprof {ve}, msprof_py {vo}")

    # flows, matched on their ends
    fe, fo = complete_flows(le), complete_flows(lo)
    by_ends_o = {(v["s"], v["f"]): i for i, v in fo.items()}
    hw_at_e = {_end(le, e): e for e in le.hw}
    hw_at_o = {_end(lo, e): e for e in lo.hw}
    matched = set()
    for ide, ends in fe.items():
        ido = by_ends_o.get((ends["s"], ends["f"]))
        if ido is None:
            c.cells["flow ends"] += 1
            c.example(f"msprof flow {ide} {ends['s']} -> {ends['f']}: no flow of msprof_py with those ends")
            continue
        matched.add(ido)
        e_id, o_id = _int(ide), _int(ido)
        if e_id is not None and o_id is not None and e_id == (ours_in_msprof(o_id >> 32) << 32) + (o_id & 0xFFFFFFFF):
            continue
        hw_e, hw_o = hw_at_e.get(ends["f"]), hw_at_o.get(ends["f"])
        if hw_e is not None and hw_o is not None and e_id == python_flow_id(le, hw_e) and o_id is not None \
                and _int((hw_o.get("args") or {}).get("connection_id")) == o_id >> 32:
            c.deliberate.add("flow-id-python")
            continue
        c.cells["flow id"] += 1
        c.example(f"flow {ends['s']} -> {ends['f']}: id msprof {ide}, msprof_py {ido}")
    extra = [i for i in fo if i not in matched]
    if extra:
        c.cells["flow ends"] += len(extra)
        c.example(f"msprof_py flow {extra[0]} {fo[extra[0]]['s']} -> {fo[extra[0]]['f']}: not in msprof's")

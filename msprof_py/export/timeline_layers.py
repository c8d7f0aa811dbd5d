"""The layers of ``msprof_*.json`` built from one device's rows: CANN API slices, Ascend Hardware
tasks, Step Trace, Communication (see :mod:`msprof_py.export.timeline` for the layout)."""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.export.base import ExportContext
from msprof_py.export.session_access import api_of_device, device_ids, device_info, of_device
from msprof_py.export.timeline_model import RenderedSlices, Timeline
from msprof_py.export.trace_events import (HOST_DEVICE, LEGACY_SORTS, STEP_TRACE_TID_OFFSET, Arg, LayerSorts, Meta,
                                           Slices, const, format_pid)
from msprof_py.export.views import (api_ids, api_names, as_cat, cat_isin, cpp_export, display_names, is_level0,
                                    legacy_layout, npu_label, op_info, shown_rows, shown_task_types, shown_tasks,
                                    span_durations)
from msprof_py.parse.session import Session

LEVEL_NAMES = {"acl": "AscendCL", "model": "Model", "node": "Node", "communication": "Communication",
               "hccl": "Communication", "runtime": "Runtime"}


def i64(col: Any) -> np.ndarray:
    s = pd.Series(col)
    if s.dtype.kind in "iu":
        return s.to_numpy(dtype=np.int64)
    return pd.to_numeric(pd.Series(col), errors="coerce").fillna(-1).to_numpy(dtype=np.int64)


def layer_sorts(session: Session) -> LayerSorts:
    """The processes' sort indices: the 2024 msprof's on a :func:`legacy_layout` capture, else
    those of the msprof of CANN 9.0 (trace_events)."""
    return LEGACY_SORTS if legacy_layout(session) else LayerSorts()


# the last devices table's pids: each layer of a device's files asks for it (a weak reference:
# a table is never kept alive by this, and a new table is never answered from an old one)
_PIDS: list[tuple[weakref.ref, dict[int, int]]] = []


def device_pid(session: Session, device_id: int) -> int:
    dv = session.devices
    if not (_PIDS and _PIDS[0][0]() is dv):
        _PIDS[:] = [(weakref.ref(dv), {})]
    known = _PIDS[0][1]
    if device_id not in known:
        pid = device_info(session, device_id).get("pid")
        known[device_id] = int(pid) if pid is not None and not pd.isna(pid) else 0
    return known[device_id]



# the API columns :func:`cann_layer` reads: a caller that picks rows of the API table takes these
# alone (the other columns, five of them int64, were half the bytes of each copy)
CANN_COLUMNS = ["pid", "thread_id", "level", "struct_type", "name", "item_id", "start_ns", "end_ns",
                "before_profiling", "connection_id"]


def cann_layer(session: Session, device_id: int, tl: Timeline, api: pd.DataFrame | None = None,
               replay: ExportContext | None = None) -> pd.DataFrame:
    """CANN API slices of the host threads that belong to this device (or of ``api`` rows
    chosen by the caller); returns those API rows.  ``replay``: an export whose earlier file
    rendered this device's layer (``ctx.rendered``): the layer is then only described (its
    processes, threads and size) and its bytes are copied, not rebuilt."""
    key = ("cann", device_id) if api is None else None
    if api is None:
        api = api_of_device(session, device_id)
    # msprof's timelines leave out calls that began before profiling (raw begin 0: ApiDataViewModel
    # "where start > 0"; the C++ analysis drops them when it reads the data)
    if len(api):
        shown = (i64(api["start_ns"]) > 0) & ~api["before_profiling"].eq(True).to_numpy()
        api = api if shown.all() else api[shown]  # (a copy of every column only when rows go)
    if len(api) == 0:
        return api
    host_pid = i64(api["pid"])
    cann_sort = layer_sorts(session).cann
    fpid = (host_pid << 10) | (cann_sort << 5) | HOST_DEVICE
    tid = i64(api["thread_id"])
    for p in sorted(pd.unique(fpid).tolist()):
        tl.meta.process(int(p), "CANN", "CPU", cann_sort)
    if fpid.min() == fpid.max():  # one host process (the usual case): its distinct threads
        threads = [(int(fpid[0]), t) for t in np.sort(pd.unique(tid)).tolist()]
    else:
        pairs = pd.DataFrame({"p": fpid, "t": tid}).drop_duplicates().sort_values(["p", "t"])
        threads = list(zip(pairs["p"].tolist(), pairs["t"].tolist()))
    for p, t in threads:
        tl.meta.thread(int(p), int(t), f"Thread {t}", int(t))
    if key is not None and replay is not None and replay.scratch is not None and key in replay.rendered:
        tl.slices.append(RenderedSlices(key, len(api)))
        return api
    # "{Level}@{name}" per distinct (level, name) pair, not per row
    lvl, nm = as_cat(api["level"]), api_names(api)
    pair, first = pd.factorize(lvl.codes.astype(np.int64) * len(nm.categories) + nm.codes)
    lvl_c, nm_c = np.divmod(first.to_numpy() if hasattr(first, "to_numpy") else np.asarray(first),
                            len(nm.categories))
    texts = [f"{LEVEL_NAMES.get(str(lvl.categories[a]), 'Api')}@{nm.categories[b]}" for a, b in zip(lvl_c, nm_c)]
    names = pd.Categorical.from_codes(pair, categories=pd.Index(texts, dtype=object)) if len(set(texts)) == len(texts) \
        else pd.Categorical(np.asarray(texts, dtype=object)[pair])
    tl.slices.append(Slices(
        name=names, pid=fpid, tid=tid, start_ns=i64(api["start_ns"]),
        dur_ns=i64(api["end_ns"]) - i64(api["start_ns"]), label="CANN API", cache_key=key,
        args=[Arg("Thread Id", "int", tid), Arg("Mode", "str", api["struct_type"]),
              Arg("level", "str", api["level"]), Arg("id", "str", api_ids(api)),
              Arg("item_id", "str", api["item_id"]), Arg("connection_id", "int", i64(api["connection_id"]))]))
    return api


class DeviceTasks:
    """One device's shown tasks (:func:`~msprof_py.export.views.shown_tasks`: executed, in start
    order) and their timeline names, computed once and shared by the layers of one build (the
    Ascend Hardware layer, Overlap Analysis, the flows)."""

    def __init__(self, session: Session, device_id: int) -> None:
        self.table = shown_tasks(session, device_id)
        self._names: pd.Categorical | None = None
        self._info: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.table)

    def names(self) -> pd.Categorical:
        """:func:`~msprof_py.export.views.display_names` of every row (computed once)."""
        if self._names is None:
            self._names = display_names(self.table)
        return self._names

    def info(self) -> np.ndarray:
        """:func:`~msprof_py.export.views.op_info` of every row (computed once)."""
        if self._info is None:
            self._info = op_info(self.table)
        return self._info


def _pick(col: Any, idx: np.ndarray | None) -> Any:
    return col if idx is None else col[idx]


def narrow(v: np.ndarray) -> np.ndarray:
    """An int64 ``int`` argument column as the timeline model holds it until it is rendered: one
    value for every row -> a broadcast constant (no memory), values within int32 -> int32 (half
    the bytes), else as it is.  The text is the same (``RowBuilder.int`` writes int32 as it
    is and one value as a literal); a device's ids were ~16 MB of A's timeline model."""
    if len(v) == 0:
        return v
    lo, hi = int(v.min()), int(v.max())
    if lo == hi:
        return const(len(v), lo)
    return v.astype(np.int32) if -2**31 <= lo and hi < 2**31 else v


def hardware_layer(session: Session, device_id: int, tl: Timeline, tasks: DeviceTasks | None = None,
                   replay: ExportContext | None = None) -> pd.DataFrame:
    """One X per device task on its stream thread; returns the task rows shown.

    ``tasks``: the device's shown tasks when the caller has them.  ``replay``: an export whose
    earlier file rendered this device's layer (``ctx.rendered``): the layer is then only
    described (metadata and sizes, from a few columns) and its bytes are copied, not rebuilt."""
    if replay is not None and replay.scratch is not None and tasks is None:
        done = _replayed_layer(session, device_id, tl, replay)
        if done:
            return session.tasks.iloc[:0]
    shown = tasks if tasks is not None else DeviceTasks(session, device_id)
    t = shown.table
    if len(t) == 0:
        return t
    hw_sort = layer_sorts(session).hw
    hw_pid = format_pid(device_pid(session, device_id), hw_sort, device_id)
    stream = i64(t["stream_id"])
    _hw_process_meta(tl.meta, hw_pid, npu_label(session, device_id), hw_sort)
    for s in sorted(pd.unique(stream).tolist()):
        tl.meta.thread(hw_pid, int(s), f"Stream {s}", int(s))
    cpp = cpp_export(session)
    # msprof's C++ timeline writes MEMCPY_ASYNC tasks apart: Task Type the SQE type, plus the copy
    memcpy = cat_isin(as_cat(t["host_task_type"]), ["MEMCPY_ASYNC"]) if cpp else np.zeros(len(t), bool)
    # columns are computed once on all rows and indexed per part (no per-part copy of the table)
    names, start = shown.names(), i64(t["start_ns"])
    # dur: msprof's C++ analysis shows its double duration truncated (span_ns), its Python path the
    # float duration itself, whose nearest whole ns is op_summary's (dur_ns)
    dur = span_durations(t) if cpp else i64(t["dur_ns"])
    device_type = as_cat(t["device_task_type"])
    # msprof's Python path shows the device (SQE) type, its C++ analysis the task type
    task_type = shown_task_types(t, is_level0(session)) if cpp else device_type
    cols = {k: i64(t[k]) for k in ("model_id", "task_id", "batch_id", "context_id", "connection_id")}
    whole = not memcpy.any()
    for is_memcpy in (False, True):
        idx = None if whole and not is_memcpy else np.flatnonzero(memcpy == is_memcpy)
        n = len(t) if idx is None else len(idx)
        if n == 0:
            continue
        extra = _memcpy_args(session, t.take(idx)) if is_memcpy else []
        ptid = _pick(stream, idx)
        tl.slices.append(Slices(
            name=_pick(names, idx), pid=const(n, hw_pid), tid=ptid,
            start_ns=_pick(start, idx), dur_ns=_pick(dur, idx), label="device task",
            cache_key=_hw_key(device_id, is_memcpy),
            args=[Arg("Model Id", "int", narrow(_pick(cols["model_id"], idx))),
                  Arg("Task Type", "str", _pick(device_type if extra else task_type, idx)),
                  Arg("Physic Stream Id", "int", ptid), Arg("Task Id", "int", narrow(_pick(cols["task_id"], idx))),
                  Arg("Batch Id", "int", narrow(_pick(cols["batch_id"], idx))),
                  Arg("Subtask Id", "int", narrow(_pick(cols["context_id"], idx))),
                  # the C++ analysis prints the id as a uint64 (none: 18446744073709551615)
                  Arg("connection_id", "u64" if cpp else "int", _pick(cols["connection_id"], idx)), *extra]))
    return t


def _hw_key(device_id: int, memcpy: bool) -> tuple[Any, ...]:
    return ("hw.memcpy", device_id) if memcpy else ("hw", device_id)


def _replayed_layer(session: Session, device_id: int, tl: Timeline, ctx: ExportContext) -> bool:
    """The Ascend Hardware layer of a device whose slices ``ctx`` rendered already: its metadata
    from the stream ids, and a :class:`RenderedSlices` per part; False when a part is missing."""
    rows = shown_rows(session, device_id)
    if len(rows) == 0:
        return False
    t = session.tasks
    memcpy = cat_isin(as_cat(t["host_task_type"]), ["MEMCPY_ASYNC"])[rows] if cpp_export(session) \
        else np.zeros(len(rows), bool)
    parts = [(_hw_key(device_id, m), int(np.count_nonzero(memcpy == m))) for m in (False, True)]
    parts = [(k, n) for k, n in parts if n]
    if not all(k in ctx.rendered for k, _ in parts):
        return False
    hw_sort = layer_sorts(session).hw
    hw_pid = format_pid(device_pid(session, device_id), hw_sort, device_id)
    _hw_process_meta(tl.meta, hw_pid, npu_label(session, device_id), hw_sort)
    for s in sorted(pd.unique(i64(t["stream_id"].to_numpy()[rows])).tolist()):
        tl.meta.thread(hw_pid, int(s), f"Stream {s}", int(s))
    tl.slices += [RenderedSlices(k, n) for k, n in parts]
    return True


def _memcpy_args(session: Session, t: pd.DataFrame) -> list[Arg]:
    """``size(B)``, ``bandwidth(GB/s)`` (bytes per ns, printed like msprof's JSON doubles) and
    ``operation`` of MEMCPY_ASYNC tasks from their memcpy_info (msprof C++ MemcpyAsyncEvent);
    none without any memcpy_info; a task without one gets 0 and ``other``."""
    m = of_device(session.memcpy, int(t["device_id"].iloc[0])) if len(t) else pd.DataFrame()
    if len(m) == 0:
        return []
    key = ["stream_id", "task_id", "batch_id"]
    info = t[key].astype(np.int64).merge(m[key + ["size_bytes", "direction"]].astype({k: np.int64 for k in key})
                                         .drop_duplicates(key, keep="last"), on=key, how="left")
    size = info["size_bytes"].fillna(0).to_numpy(np.int64)
    dur = i64(t["dur_ns"]).astype(np.float64)
    bw = np.where(dur > 0, size / np.where(dur > 0, dur, 1.0), 0.0)
    uniq, inverse = np.unique(bw, return_inverse=True)
    texts = np.asarray([repr(float(f"{x:.15g}")) for x in uniq.tolist()], dtype=object)  # once per value
    return [Arg("size(B)", "int", size), Arg("bandwidth(GB/s)", "raw", texts[inverse]),
            Arg("operation", "str", info["direction"].fillna("other").astype(object).to_numpy())]


def step_trace_slices(session: Session, device_id: int, meta: Meta) -> list[Slices]:
    """Iteration / FP_BP / Iteration Refresh / Reduce slices on "Step Trace(Model ID:m)" threads."""
    st = of_device(session.steps, device_id)
    if len(st) == 0:
        return []
    hw_sort = layer_sorts(session).hw
    hw_pid = format_pid(device_pid(session, device_id), hw_sort, device_id)
    _hw_process_meta(meta, hw_pid, npu_label(session, device_id), hw_sort)
    model = i64(st["model_id"])
    tid = model + STEP_TRACE_TID_OFFSET
    for m in sorted(pd.unique(model).tolist()):
        meta.thread(hw_pid, int(m) + STEP_TRACE_TID_OFFSET, f"Step Trace(Model ID:{m})",
                    int(m) + STEP_TRACE_TID_OFFSET)
    start, end = i64(st["step_start_ns"]), i64(st["step_end_ns"])
    fp, bp = i64(st["fp_start_ns"]), i64(st["bp_end_ns"])
    idx = i64(st["index_id"])
    pid = np.full(len(st), hw_pid, np.int64)
    has = (fp > 0) & (bp > 0)
    na = pd.Series(np.full(len(st), "N/A"))
    fp_s = pd.Series(_ts_text(fp)).where(fp > 0, na).to_numpy()
    bp_s = pd.Series(_ts_text(bp)).where(bp > 0, na).to_numpy()
    out = [Slices(
        name=np.char.add("Iteration ", idx.astype(str)),
        pid=pid, tid=tid, start_ns=start, dur_ns=end - start, cat="Iteration Time", label="step trace",
        args=[Arg("Iteration ID", "int", idx), Arg("FP Start", "str", fp_s), Arg("BP End", "str", bp_s),
              Arg("Iteration End", "tsstr", end), Arg("Iteration Time(us)", "us", end - start)])]
    h = np.flatnonzero(has)
    if len(h):
        out.append(Slices(
            name=np.char.add("FP_BP Time ", idx[h].astype(str)), pid=pid[h], tid=tid[h], start_ns=fp[h],
            dur_ns=bp[h] - fp[h], cat="FP_BP Time", label="step trace FP_BP",
            args=[Arg("Iteration ID", "int", idx[h]), Arg("FP Start", "tsstr", fp[h]), Arg("BP End", "tsstr", bp[h]),
                  Arg("FP_BP Time(us)", "us", bp[h] - fp[h])]))
        out.append(Slices(
            name=np.char.add("Iteration Refresh ", idx[h].astype(str)), pid=pid[h], tid=tid[h], start_ns=bp[h],
            dur_ns=end[h] - bp[h], cat="Iteration Refresh", label="step trace refresh",
            args=[Arg("Iteration ID", "int", idx[h]), Arg("BP End", "tsstr", bp[h]), Arg("Iteration End", "tsstr", end[h]),
                  Arg("Iteration Refresh(us)", "us", end[h] - bp[h])]))
    ar = of_device(session.all_reduce, device_id)
    if len(ar):
        ar = ar.sort_values(["model_id", "index_id", "start_ns"], kind="stable")
        a_idx = i64(ar["index_id"])
        if cpp_export(session):
            # msprof's C++ StepTraceAssembler numbers the reduces with one running count over every
            # device's rows (device 0 first), not per iteration as its Python path does
            before = sum(len(of_device(session.all_reduce, d)) for d in device_ids(session) if d < device_id)
            k = before + np.arange(len(ar))
        else:
            k = ar.groupby(["model_id", "index_id"], sort=False).cumcount().to_numpy()
        a_s, a_e = i64(ar["start_ns"]), i64(ar["end_ns"])
        name = np.char.add(np.char.add(np.char.add("Reduce_", a_idx.astype(str)), "_"), k.astype(str))
        out.append(Slices(
            name=name, pid=np.full(len(ar), hw_pid, np.int64), tid=i64(ar["model_id"]) + STEP_TRACE_TID_OFFSET,
            start_ns=a_s, dur_ns=a_e - a_s, cat="Reduce", label="all-reduce",
            args=[Arg("Iteration ID", "int", a_idx), Arg("Reduce Start", "tsstr", a_s),
                  Arg("Reduce End", "tsstr", a_e)]))
    return out


def _hw_process_meta(meta: Meta, hw_pid: int, label: str, sort: int) -> None:
    if not any(e["pid"] == hw_pid and e["name"] == "process_name" for e in meta.events):
        meta.process(hw_pid, "Ascend Hardware", label, sort)


def _ts_text(ns: np.ndarray) -> np.ndarray:
    """ns -> "us.nnn" strings (small tables only: one per iteration)."""
    ns = np.asarray(ns, np.int64)
    return np.array([f"{v // 1000}.{v % 1000:03d}" for v in ns.tolist()], dtype=object)


def communication_layer(session: Session, device_id: int, tl: Timeline) -> pd.DataFrame:
    ops = of_device(session.communication, device_id)
    sub = of_device(session.comm_tasks, device_id)
    if len(ops) == 0 and len(sub) == 0:
        return ops
    comm_sort = layer_sorts(session).comm
    cpid = format_pid(device_pid(session, device_id), comm_sort, device_id)
    tl.meta.process(cpid, "Communication", npu_label(session, device_id), comm_sort)
    # each group's text once (factorized; str() of a unique is what astype(str) gives every row)
    op_g, op_names = _str_codes(ops["group_name"])
    sub_g, sub_names = _str_codes(sub["group_name"])
    groups = sorted(set(op_names) | set(sub_names))
    plane = i64(sub["plane_id"])
    pairs = np.unique(np.stack([sub_g.astype(np.int64), plane]), axis=1) if len(sub) else np.zeros((2, 0), np.int64)
    found: dict[str, set[int]] = {g: set() for g in groups}
    for c, p in zip(pairs[0].tolist(), pairs[1].tolist()):
        found[sub_names[c]].add(p)
    planes = {g: sorted(v) for g, v in found.items()}
    group_tid, nxt = {}, 0
    for g in groups:
        group_tid[g] = nxt
        tl.meta.thread(cpid, nxt, f"Group {g} Communication", nxt)
        for p in planes[g]:
            tl.meta.thread(cpid, nxt + p + 1, f"Plane {p}", nxt + p + 1)
        nxt += (max(planes[g]) + 2 if planes[g] else 1)
    if len(ops):
        order = _start_order(ops)
        ops = ops.take(order)
        tid = np.asarray([group_tid[g] for g in op_names], np.int64)[op_g[order]]
        tl.slices.append(Slices(
            name=ops["op_name"].astype(str).to_numpy(), pid=np.full(len(ops), cpid, np.int64), tid=tid,
            start_ns=i64(ops["start_ns"]), dur_ns=i64(ops["dur_ns"]), label="communication op",
            args=[Arg("rank_size", "int", i64(ops["rank_size"])), Arg("connection_id", "int", i64(ops["connection_id"])),
                  Arg("model id", "int", i64(ops["model_id"])), Arg("data_type", "str", ops["data_type"]),
                  Arg("alg_type", "str", ops["alg_type"]), Arg("count", "int", i64(ops["count"]))]))
    if len(sub):
        order = _start_order(sub)
        sub = sub.take(order)
        # a plane's thread: its group's thread + plane id + 1
        tid = np.asarray([group_tid[g] for g in sub_names], np.int64)[sub_g[order]] + plane[order] + 1
        tl.slices.append(Slices(
            name=sub["task_type"], pid=np.full(len(sub), cpid, np.int64), tid=tid,
            start_ns=i64(sub["start_ns"]), dur_ns=i64(sub["dur_ns"]), label="communication task",
            args=[Arg("notify_id", "int", i64(sub["notify_id"])),
                  Arg("duration estimated(us)", "raw", _num_text(sub["duration_estimated_us"])),
                  Arg("stream id", "int", i64(sub["stream_id"])), Arg("task id", "int", i64(sub["task_id"])),
                  Arg("context id", "int", i64(sub["context_id"])), Arg("task type", "str", sub["task_type"]),
                  Arg("src rank", "int", i64(sub["src_rank"])), Arg("dst rank", "int", i64(sub["dst_rank"])),
                  Arg("transport type", "str", sub["transport_type"]), Arg("size(Byte)", "int", i64(sub["size_bytes"])),
                  Arg("data type", "str", sub["data_type"]), Arg("link type", "str", sub["link_type"]),
                  Arg("bandwidth(GB/s)", "raw", _num_text(sub["bandwidth_gbps"]))]))
    return ops


def _start_order(t: pd.DataFrame) -> np.ndarray:
    """The positions ``t.sort_values("start_ns", kind="stable")`` puts the rows in."""
    return np.asarray(t["start_ns"].reset_index(drop=True).sort_values(kind="stable").index)


def _str_codes(col: pd.Series) -> tuple[np.ndarray, list[str]]:
    """``col.astype(str)`` as codes into its distinct texts (each converted once)."""
    codes, uniq = pd.factorize(col, use_na_sentinel=False)
    return np.asarray(codes), [str(u) for u in uniq]


def _num_text(col: pd.Series) -> pd.Categorical:
    """Each value as msprof's JSON double (``repr``), ``null`` where missing; formatted once per
    distinct bit pattern (so 0.0 and -0.0 keep their own texts)."""
    v = pd.to_numeric(col, errors="coerce").to_numpy(np.float64)
    bits, codes = np.unique(v.view(np.int64), return_inverse=True)
    texts = np.asarray(["null" if x != x else repr(x) for x in bits.view(np.float64).tolist()], dtype=object)
    return pd.Categorical(texts[codes.reshape(-1)])

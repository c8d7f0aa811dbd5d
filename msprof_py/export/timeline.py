"""``msprof_{device}[_{model}_{iter}].json``: msprof's timeline layout (reference §5.3).

Processes (pid = ``(pid << 10) | (sortIndex << 5) | deviceId``):

* CANN (sort 7, host device id 31; sort indices: :func:`layer_sorts`): one thread per OS thread, X events named
  ``{AscendCL|Model|Node|Communication|Runtime}@{api}`` with msprof's args.
* Ascend Hardware (sort 13): one thread per physical stream ("Stream {id}") with one X per
  device task; Step Trace threads (tid = model_id + 70000) in the same process.
* Communication (sort 15): "Group {g} Communication" threads for HCCL big ops and "Plane {p}"
  threads for their sub-tasks, when the session has communication.
* Overlap Analysis (sort 30): Computing / Communication / Communication(Not Overlapped) / Free,
  when the session has communication.
* HostToDevice flows: ``s`` at the Node launch on its CANN thread, ``f`` (``bp: "e"``) at the
  device task, ``id = str(connection_id << 32)`` as msprof writes it -- unless a connection id
  reaches 2**21, where the shifted id would pass 2**53 and viewers that read ids as doubles would
  merge neighbouring flows; the whole file then uses the plain connection id (still unique, still a
  string), see :func:`flow_ids`.  Only pairs whose two ends are both in the file
  are written (every flow has both ends), and a launch replayed N times (static graph) gets one
  flow, to its first execution.

Not written, on purpose: msprof's "Data_aug Bound" pseudo-flows (a ``t`` and an ``s`` sharing a
non-numeric id and no ``f``): they are not valid flows; the value is in step_trace_*.csv.
The layer order in the file is fixed (msprof's is nondeterministic).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.atomic import atomic_open
from msprof_py.export import intervals
from msprof_py.export import counter_export, pmu_export
from msprof_py.export.base import ExportContext, Naming, register
from msprof_py.export.session_access import api_of_device, device_ids, device_info, of_device
from msprof_py.export.trace_events import (HOST_DEVICE, LEGACY_SORTS, STEP_TRACE_TID_OFFSET, Arg, Counters,
                                           Flows, LayerSorts, Meta, Slices, format_pid)
from msprof_py.export.validate import flow_problems, id_problems, nesting_problems, viewer_durations
from msprof_py.export.views import (api_ids, api_names, as_cat, cat_isin, cpp_export, display_names, is_level0,
                                    legacy_layout, npu_label, op_info, shown_task_types, shown_tasks, span_durations,
                                    task_types)

from msprof_py.parse.session import Session

LEVEL_NAMES = {"acl": "AscendCL", "model": "Model", "node": "Node", "communication": "Communication",
               "hccl": "Communication", "runtime": "Runtime"}
PERFETTO_LIMIT_BYTES = 1 << 30


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


def _i64(col: Any) -> np.ndarray:
    s = pd.Series(col)
    if s.dtype.kind in "iu":
        return s.to_numpy(dtype=np.int64)
    return pd.to_numeric(pd.Series(col), errors="coerce").fillna(-1).to_numpy(dtype=np.int64)


def layer_sorts(session: Session) -> LayerSorts:
    """The processes' sort indices: the 2024 msprof's on a :func:`legacy_layout` capture, else
    those of the msprof of CANN 9.0 (trace_events)."""
    return LEGACY_SORTS if legacy_layout(session) else LayerSorts()


def _device_pid(session: Session, device_id: int) -> int:
    info = device_info(session, device_id)
    pid = info.get("pid")
    return int(pid) if pid is not None and not pd.isna(pid) else 0


# -- layers ---------------------------------------------------------------------------------
def cann_layer(session: Session, device_id: int, tl: Timeline, api: pd.DataFrame | None = None) -> pd.DataFrame:
    """CANN API slices of the host threads that belong to this device (or of ``api`` rows
    chosen by the caller); returns those API rows."""
    key = ("cann", device_id) if api is None else None
    if api is None:
        api = api_of_device(session, device_id)
    # msprof's timelines leave out calls that began before profiling (raw begin 0: ApiDataViewModel
    # "where start > 0"; the C++ analysis drops them when it reads the data)
    api = api[(_i64(api["start_ns"]) > 0) & ~api["before_profiling"].eq(True).to_numpy()] if len(api) else api
    if len(api) == 0:
        return api
    host_pid = _i64(api["pid"])
    cann_sort = layer_sorts(session).cann
    fpid = (host_pid << 10) | (cann_sort << 5) | HOST_DEVICE
    tid = _i64(api["thread_id"])
    # "{Level}@{name}" per distinct (level, name) pair, not per row
    lvl, nm = as_cat(api["level"]), api_names(api)
    pair, first = pd.factorize(lvl.codes.astype(np.int64) * len(nm.categories) + nm.codes)
    lvl_c, nm_c = np.divmod(first.to_numpy() if hasattr(first, "to_numpy") else np.asarray(first),
                            len(nm.categories))
    texts = [f"{LEVEL_NAMES.get(str(lvl.categories[a]), 'Api')}@{nm.categories[b]}" for a, b in zip(lvl_c, nm_c)]
    names = pd.Categorical.from_codes(pair, categories=pd.Index(texts, dtype=object)) if len(set(texts)) == len(texts) \
        else pd.Categorical(np.asarray(texts, dtype=object)[pair])
    for p in sorted(pd.unique(fpid).tolist()):
        tl.meta.process(int(p), "CANN", "CPU", cann_sort)
    threads = pd.DataFrame({"p": fpid, "t": tid}).drop_duplicates().sort_values(["p", "t"])
    for p, t in zip(threads["p"].tolist(), threads["t"].tolist()):
        tl.meta.thread(int(p), int(t), f"Thread {t}", int(t))
    tl.slices.append(Slices(
        name=names, pid=fpid, tid=tid, start_ns=_i64(api["start_ns"]),
        dur_ns=_i64(api["end_ns"]) - _i64(api["start_ns"]), label="CANN API", cache_key=key,
        args=[Arg("Thread Id", "int", tid), Arg("Mode", "str", api["struct_type"]),
              Arg("level", "str", api["level"]), Arg("id", "str", api_ids(api)),
              Arg("item_id", "str", api["item_id"]), Arg("connection_id", "int", _i64(api["connection_id"]))]))
    return api


def hardware_layer(session: Session, device_id: int, tl: Timeline) -> pd.DataFrame:
    """One X per device task on its stream thread; returns the task rows shown."""
    t = shown_tasks(session, device_id)
    if len(t) == 0:
        return t
    hw_sort = layer_sorts(session).hw
    hw_pid = format_pid(_device_pid(session, device_id), hw_sort, device_id)
    stream = _i64(t["stream_id"])
    _hw_process_meta(tl.meta, hw_pid, npu_label(session, device_id), hw_sort)
    for s in sorted(pd.unique(stream).tolist()):
        tl.meta.thread(hw_pid, int(s), f"Stream {s}", int(s))
    cpp = cpp_export(session)
    # msprof's C++ timeline writes MEMCPY_ASYNC tasks apart: Task Type the SQE type, plus the copy
    memcpy = cat_isin(as_cat(t["host_task_type"]), ["MEMCPY_ASYNC"]) if cpp else np.zeros(len(t), bool)
    for part, extra in ((t[~memcpy], []), (t[memcpy], _memcpy_args(session, t[memcpy]))):
        if len(part) == 0:
            continue
        ptid = _i64(part["stream_id"])
        tl.slices.append(Slices(
            name=display_names(part), pid=np.full(len(part), hw_pid, np.int64), tid=ptid,
            # dur: msprof's C++ analysis shows its double duration truncated (span_ns), its Python
            # path the float duration itself, whose nearest whole ns is op_summary's (dur_ns)
            start_ns=_i64(part["start_ns"]), dur_ns=span_durations(part) if cpp else _i64(part["dur_ns"]),
            label="device task",
            cache_key=("hw", device_id) if not extra else ("hw.memcpy", device_id),
            args=[Arg("Model Id", "int", _i64(part["model_id"])),
                  # msprof's Python path shows the device (SQE) type, its C++ analysis the task type
                  Arg("Task Type", "str", shown_task_types(part, is_level0(session)) if cpp and not extra
                      else as_cat(part["device_task_type"])),
                  Arg("Physic Stream Id", "int", ptid), Arg("Task Id", "int", _i64(part["task_id"])),
                  Arg("Batch Id", "int", _i64(part["batch_id"])), Arg("Subtask Id", "int", _i64(part["context_id"])),
                  # the C++ analysis prints the id as a uint64 (none: 18446744073709551615)
                  Arg("connection_id", "u64" if cpp else "int", _i64(part["connection_id"])), *extra]))
    return t


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
    dur = _i64(t["dur_ns"]).astype(np.float64)
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
    hw_pid = format_pid(_device_pid(session, device_id), hw_sort, device_id)
    _hw_process_meta(meta, hw_pid, npu_label(session, device_id), hw_sort)
    model = _i64(st["model_id"])
    tid = model + STEP_TRACE_TID_OFFSET
    for m in sorted(pd.unique(model).tolist()):
        meta.thread(hw_pid, int(m) + STEP_TRACE_TID_OFFSET, f"Step Trace(Model ID:{m})",
                    int(m) + STEP_TRACE_TID_OFFSET)
    start, end = _i64(st["step_start_ns"]), _i64(st["step_end_ns"])
    fp, bp = _i64(st["fp_start_ns"]), _i64(st["bp_end_ns"])
    idx = _i64(st["index_id"])
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
        a_idx = _i64(ar["index_id"])
        if cpp_export(session):
            # msprof's C++ StepTraceAssembler numbers the reduces with one running count over every
            # device's rows (device 0 first), not per iteration as its Python path does
            before = sum(len(of_device(session.all_reduce, d)) for d in device_ids(session) if d < device_id)
            k = before + np.arange(len(ar))
        else:
            k = ar.groupby(["model_id", "index_id"], sort=False).cumcount().to_numpy()
        a_s, a_e = _i64(ar["start_ns"]), _i64(ar["end_ns"])
        name = np.char.add(np.char.add(np.char.add("Reduce_", a_idx.astype(str)), "_"), k.astype(str))
        out.append(Slices(
            name=name, pid=np.full(len(ar), hw_pid, np.int64), tid=_i64(ar["model_id"]) + STEP_TRACE_TID_OFFSET,
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
    cpid = format_pid(_device_pid(session, device_id), comm_sort, device_id)
    tl.meta.process(cpid, "Communication", npu_label(session, device_id), comm_sort)
    groups = sorted(set(ops["group_name"].astype(str)) | set(sub["group_name"].astype(str)))
    planes = {g: sorted(set(_i64(sub.loc[sub["group_name"].astype(str) == g, "plane_id"]).tolist()))
              for g in groups}
    group_tid, plane_tid, nxt = {}, {}, 0
    for g in groups:
        group_tid[g] = nxt
        tl.meta.thread(cpid, nxt, f"Group {g} Communication", nxt)
        for p in planes[g]:
            plane_tid[(g, p)] = nxt + p + 1
            tl.meta.thread(cpid, nxt + p + 1, f"Plane {p}", nxt + p + 1)
        nxt += (max(planes[g]) + 2 if planes[g] else 1)
    if len(ops):
        ops = ops.sort_values("start_ns", kind="stable")
        tid = ops["group_name"].astype(str).map(group_tid).to_numpy(np.int64)
        tl.slices.append(Slices(
            name=ops["op_name"].astype(str).to_numpy(), pid=np.full(len(ops), cpid, np.int64), tid=tid,
            start_ns=_i64(ops["start_ns"]), dur_ns=_i64(ops["dur_ns"]), label="communication op",
            args=[Arg("rank_size", "int", _i64(ops["rank_size"])), Arg("connection_id", "int", _i64(ops["connection_id"])),
                  Arg("model id", "int", _i64(ops["model_id"])), Arg("data_type", "str", ops["data_type"]),
                  Arg("alg_type", "str", ops["alg_type"]), Arg("count", "int", _i64(ops["count"]))]))
    if len(sub):
        sub = sub.sort_values("start_ns", kind="stable")
        keys = list(zip(sub["group_name"].astype(str), _i64(sub["plane_id"]).tolist()))
        tid = np.array([plane_tid[k] for k in keys], dtype=np.int64) if len(keys) < 100_000 else \
            pd.Series(keys).map(plane_tid).to_numpy(np.int64)
        tl.slices.append(Slices(
            name=sub["task_type"], pid=np.full(len(sub), cpid, np.int64), tid=tid,
            start_ns=_i64(sub["start_ns"]), dur_ns=_i64(sub["dur_ns"]), label="communication task",
            args=[Arg("notify_id", "int", _i64(sub["notify_id"])),
                  Arg("duration estimated(us)", "raw", _num_text(sub["duration_estimated_us"])),
                  Arg("stream id", "int", _i64(sub["stream_id"])), Arg("task id", "int", _i64(sub["task_id"])),
                  Arg("context id", "int", _i64(sub["context_id"])), Arg("task type", "str", sub["task_type"]),
                  Arg("src rank", "int", _i64(sub["src_rank"])), Arg("dst rank", "int", _i64(sub["dst_rank"])),
                  Arg("transport type", "str", sub["transport_type"]), Arg("size(Byte)", "int", _i64(sub["size_bytes"])),
                  Arg("data type", "str", sub["data_type"]), Arg("link type", "str", sub["link_type"]),
                  Arg("bandwidth(GB/s)", "raw", _num_text(sub["bandwidth_gbps"]))]))
    return ops


def _num_text(col: pd.Series) -> pd.Categorical:
    v = pd.to_numeric(col, errors="coerce")
    return pd.Categorical(v.map(lambda x: "null" if pd.isna(x) else repr(float(x))))


OVERLAP_NO_EXTENT = ["KERNEL_AICORE", "KERNEL_AIVEC", "FFTS_PLUS", "KERNEL_MIX_AIC", "KERNEL_MIX_AIV",
                     "PROFILING_ENABLE", "PROFILING_DISABLE"]
COMM_KERNEL_SUFFIXES = ("AicpuKernel", "AivKernel")


def overlap_layer(session: Session, device_id: int, tasks: pd.DataFrame, comm_ops: pd.DataFrame,
                  tl: Timeline) -> None:
    """msprof's Overlap Analysis (OverlapAnalysisProcessor), whenever the device ran tasks:
    Computing = union of the compute tasks (a TaskInfo; not the HCCL ``AicpuKernel`` /
    ``AivKernel`` ones), Communication = union of the HCCL ops, Not Overlapped = Communication minus
    Computing, Free = the gaps of both inside [first, last] executed task that is not a kernel or a
    profiling marker (extended by Computing / Communication).  msprof's Python analysis
    (PipelineOverlapViewer) numbers the threads Computing, Communication, Not Overlapped, Free and
    writes nothing without Computing and Communication; on a ``legacy_layout`` capture Free is only
    the gaps between busy sections (no leading / trailing Free, as that msprof wrote it)."""
    if len(tasks) == 0 and len(comm_ops) == 0:
        return
    names = np.asarray(display_names(tasks), dtype=object) if len(tasks) else np.array([], dtype=object)
    comm_kernel = np.array([str(n).endswith(COMM_KERNEL_SUFFIXES) for n in names], dtype=bool)
    comp = tasks[op_info(tasks) & ~comm_kernel & ~cat_isin(task_types(tasks), ["COMMUNICATION", "HCCL_AI_CPU"])] \
        if len(tasks) else tasks
    c_s = _i64(comp["start_ns"]) if len(comp) else np.array([], np.int64)
    c_e = c_s + (_i64(comp["dur_ns"]) if len(comp) else 0)
    computing = intervals.union(c_s, c_e)
    m_s = _i64(comm_ops["start_ns"]) if len(comm_ops) else np.array([], np.int64)
    communication = intervals.union(m_s, m_s + (_i64(comm_ops["dur_ns"]) if len(comm_ops) else 0))
    not_overlapped = intervals.difference(communication, computing)
    if not cpp_export(session) and not len(computing[0]) and not len(communication[0]):
        return  # the Python analysis: "Both task data and hccl data are missing", no process at all
    busy = intervals.union(np.concatenate([computing[0], communication[0]]),
                           np.concatenate([computing[1], communication[1]]))
    ext = tasks[~cat_isin(as_cat(tasks["host_task_type"]), OVERLAP_NO_EXTENT)
                & ~cat_isin(as_cat(tasks["device_task_type"]), ["UNKNOWN"])] if len(tasks) else tasks
    lo = [a.min() for a in (_i64(ext["start_ns"]) if len(ext) else None, busy[0]) if a is not None and len(a)]
    hi = [a.max() for a in ((_i64(ext["start_ns"]) + _i64(ext["dur_ns"])) if len(ext) else None, busy[1])
          if a is not None and len(a)]
    free = (np.array([], np.int64), np.array([], np.int64))
    if legacy_layout(session):  # that msprof's Free: only the gaps between busy sections
        lo, hi = [busy[0].min()] if len(busy[0]) else [], [busy[1].max()] if len(busy[1]) else []
    if lo and hi and max(hi) > min(lo):
        free = intervals.difference((np.array([min(lo)], np.int64), np.array([max(hi)], np.int64)), busy)
    overlap_sort = layer_sorts(session).overlap
    opid = format_pid(_device_pid(session, device_id), overlap_sort, device_id)
    tl.meta.process(opid, "Overlap Analysis", npu_label(session, device_id), overlap_sort)
    layers = [("Communication", communication), ("Communication(Not Overlapped)", not_overlapped),
              ("Computing", computing), ("Free", free)]
    if not cpp_export(session):  # the Python analysis numbers them by its OverlapType: Computing first
        layers = [layers[2], layers[0], layers[1], layers[3]]
    for tid, (label, iv) in enumerate(layers):
        tl.meta.thread(opid, tid, label, tid)
        keep = iv[1] > iv[0]
        if keep.any():
            st, en = iv[0][keep], iv[1][keep]
            tl.slices.append(Slices(name=label, pid=np.full(len(st), opid, np.int64),
                                    tid=np.full(len(st), tid, np.int64), start_ns=st,
                                    dur_ns=en - st, label=f"overlap {label}"))


ACL_EVENT_APIS = ["aclrtRecordEvent", "aclrtStreamWaitEvent"]


def host_to_device_flows(api: pd.DataFrame, tasks: pd.DataFrame, comm_ops: pd.DataFrame,
                         hw_pid: int, comm_pid: int, comm_tid: dict[str, int] | None = None,
                         cann_sort: int = LayerSorts().cann, python: bool = False) -> Flows | None:
    """HostToDevice flows as msprof's C++ timeline selects them (CannAssembler::GenerateConnectionTrace,
    AscendHardwareAssembler::GenerateTaskConnectionTrace): a start at every Node launch,
    ``aclrtRecordEvent`` / ``aclrtStreamWaitEvent`` call and call that issued a MEMCPY_ASYNC task; an
    end at every device task with a TaskInfo or issued by such an event call, every memcpy task,
    and every HCCL op; one flow per connection id that has both (msprof also writes the halves
    without a partner; a viewer draws nothing for those, so we leave them out).  ``python``: msprof's
    Python analysis (HostToDevice.add_task_connection_data) starts a device task's flow at its launch
    (the task_track record: its thread, ``launch_ns``) rather than at the Node call, and numbers it
    ``device << 80 | stream << 64 | task << 48 | batch << 32 | context``; we keep ``connection_id <<
    32`` there (ids past 2**53 are not exact in viewers reading them as doubles: README)."""
    if len(api) == 0:
        return None
    lv = api["level"].astype(object).astype(str).to_numpy()
    nm = api["name"].astype(object).astype(str).to_numpy()
    conn_all = _i64(api["connection_id"])
    memcpy_conn = _i64(tasks.loc[cat_isin(as_cat(tasks["host_task_type"]), ["MEMCPY_ASYNC"]), "connection_id"]) \
        if len(tasks) else np.array([], np.int64)
    event_api = np.isin(nm, ACL_EVENT_APIS)
    src = api[np.isin(lv, ["node", "communication", "hccl"]) | event_api | np.isin(conn_all, memcpy_conn)]
    if len(src) == 0:
        return None
    src_conn = _i64(src["connection_id"])
    ends = []
    if len(tasks):
        tconn = _i64(tasks["connection_id"])
        sel = op_info(tasks) | np.isin(tconn, conn_all[event_api]) | np.isin(tconn, memcpy_conn)
        tk = tasks[sel]
        ends.append(pd.DataFrame({"conn": _i64(tk["connection_id"]), "pid": hw_pid,
                                  "tid": _i64(tk["stream_id"]), "ns": _i64(tk["start_ns"]),
                                  "launch_tid": _i64(tk["thread_id"]) if python else -1,
                                  "launch_ns": _i64(tk["launch_ns"]) if python else -1}))
    if len(comm_ops) and comm_tid is not None:
        ends.append(pd.DataFrame({"conn": _i64(comm_ops["connection_id"]), "pid": comm_pid,
                                  "tid": comm_ops["group_name"].astype(str).map(comm_tid).to_numpy(np.int64),
                                  "ns": _i64(comm_ops["start_ns"]), "launch_tid": -1, "launch_ns": -1}))
    if not ends:
        return None
    e = pd.concat(ends, ignore_index=True)
    e = e[e["conn"] >= 0].sort_values(["conn", "ns"], kind="stable").drop_duplicates("conn")
    s = pd.DataFrame({"conn": src_conn, "pid": (_i64(src["pid"]) << 10) | (cann_sort << 5) | HOST_DEVICE,
                      "tid": _i64(src["thread_id"]), "ns": _i64(src["start_ns"])})
    s = s.sort_values(["conn", "ns"], kind="stable").drop_duplicates("conn")
    pair = s.merge(e, on="conn", suffixes=("_s", "_f"))
    at_launch = pair["launch_ns"].to_numpy(np.int64) >= 0
    if at_launch.any():  # the Python path: from the launch record
        pair["tid_s"] = np.where(at_launch, pair["launch_tid"].to_numpy(np.int64), pair["tid_s"].to_numpy(np.int64))
        pair["ns_s"] = np.where(at_launch, pair["launch_ns"].to_numpy(np.int64), pair["ns_s"].to_numpy(np.int64))
    pair = pair.sort_values("ns_s", kind="stable")
    ids = flow_ids(pair["conn"].to_numpy(np.int64))
    return Flows("HostToDevice", "HostToDevice", ids, pair["pid_s"].to_numpy(np.int64), pair["tid_s"].to_numpy(np.int64),
                 pair["ns_s"].to_numpy(np.int64), pair["pid_f"].to_numpy(np.int64), pair["tid_f"].to_numpy(np.int64),
                 pair["ns_f"].to_numpy(np.int64))


def flow_ids(conn: np.ndarray) -> np.ndarray:
    """msprof's flow id ``connection_id << 32``, or the plain connection id for the whole file when
    any shifted id would reach 2**53 (collections with more than 2,097,151 API calls)."""
    conn = np.asarray(conn, dtype=np.int64)
    if len(conn) and int(conn.max()) >= 1 << 21:
        return conn.copy()
    return conn << 32


def build_timeline(session: Session, device_id: int, ctx: ExportContext) -> Timeline:
    tl = Timeline()
    if ctx.layer_on("msproftx") and device_id != counter_export.HOST_DEVICE_ID:  # host-only: msprof_tx.json
        tl.slices += counter_export.tx_layer(session, tl.meta)
    api = cann_layer(session, device_id, tl) if ctx.layer_on("cann") else session.api.iloc[:0]
    tasks = hardware_layer(session, device_id, tl) if ctx.layer_on("ascend") else shown_tasks(session, device_id).iloc[:0]
    if ctx.layer_on("step_trace"):
        tl.slices += step_trace_slices(session, device_id, tl.meta)
    comm_ops = communication_layer(session, device_id, tl) if ctx.layer_on("communication") \
        else session.communication.iloc[:0]
    if ctx.layer_on("overlap_analyse"):
        all_tasks = shown_tasks(session, device_id)
        overlap_layer(session, device_id, all_tasks, of_device(session.communication, device_id), tl)
    srt = layer_sorts(session)
    dpid = _device_pid(session, device_id)
    if ctx.layer_on("freq"):
        tl.counters += pmu_export.freq_counters(session, device_id, tl.meta, dpid, srt.hw)
    comm_tid = None
    if len(comm_ops):
        names = [e for e in tl.meta.events if e["name"] == "thread_name"
                 and e["pid"] == format_pid(dpid, srt.comm, device_id)]
        comm_tid = {e["args"]["name"][len("Group "):-len(" Communication")]: e["tid"]
                    for e in names if e["args"]["name"].startswith("Group ")}
    flows = host_to_device_flows(api, tasks, comm_ops, format_pid(dpid, srt.hw, device_id),
                                 format_pid(dpid, srt.comm, device_id), comm_tid, srt.cann, not cpp_export(session))
    if flows is not None and len(flows):
        tl.flows.append(flows)
    return tl


def json_array(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """``[`` + events (each ending ``,\\n``) + ``]``: the last separator becomes the bracket."""
    yield b"[\n"
    prev = b""
    for c in chunks:
        if not c:
            continue
        if prev:
            yield prev
        prev = c
    yield (prev[:-2] + b"\n]\n") if prev else b"]\n"


def check_timeline(tl: Timeline, path: Path, ctx: ExportContext) -> None:
    """Warn about events viewers would drop, and fit nested durations to the viewers' grid."""
    for p in tl.problems(skip=set(ctx.rendered)):
        ctx.warnings.warn(f"{path.name}: {p} (viewers drop or misdraw such events)")
    changed = tl.fit_viewer(skip=set(ctx.rendered))
    if changed:
        ctx.notes.append(f"{path.name}: {changed} slices end within 1 us of their parent's end or their next "
                         "sibling's start; their dur was written up to 1 us shorter so they stay nested in viewers "
                         "that read ts as doubles (0.25 us resolution at epoch times); exact durations are in the "
                         "summaries")


def write_timeline(tl: Timeline, path: Path, ctx: ExportContext, what: str) -> Path:
    check_timeline(tl, path, ctx)
    size = 0
    with atomic_open(path) as fp:
        for c in json_array(tl.chunks(ctx)):
            fp.write(c)
            size += len(c)
    if size > PERFETTO_LIMIT_BYTES:
        ctx.warnings.warn(f"{path} is {size / 2**30:.2f} GB: the Perfetto UI cannot open {what} files over 1 GB; "
                          "export less with --model-id N --iteration-id N")
    return path


class MsprofTimeline:
    name = "msprof"
    kind = "timeline"
    per_device = True
    describe = "timeline of all layers: CANN APIs, Ascend Hardware tasks, step trace, communication, flows"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        tl = build_timeline(session, naming.device_id or 0, ctx)
        if not tl:
            return []
        path = out_dir / naming.file("msprof", "json")
        if ctx.slice_bytes:
            from msprof_py.export.timeline_slices import write_sliced

            check_timeline(tl, path, ctx)
            return write_sliced(tl, path, ctx, ctx.slice_bytes)
        from msprof_py.export.timeline_slices import remove_stale

        out = write_timeline(tl, path, ctx, "timeline")
        remove_stale(path, [out])
        return [out]


register(MsprofTimeline())

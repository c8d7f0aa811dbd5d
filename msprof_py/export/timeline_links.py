"""Layers that link others: msprof's Overlap Analysis (from the device's tasks and HCCL ops) and
the HostToDevice flows (CANN launch -> device task / HCCL op)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from msprof_py.export import intervals
from msprof_py.export.timeline_layers import DeviceTasks, device_pid, i64, layer_sorts
from msprof_py.export.timeline_model import Timeline
from msprof_py.export.trace_events import HOST_DEVICE, Flows, LayerSorts, Slices, const, format_pid
from msprof_py.export.views import (as_cat, cat_isin, cpp_export, is_in, legacy_layout, npu_label, op_info,
                                    task_types)
from msprof_py.parse.session import Session


OVERLAP_NO_EXTENT = ["KERNEL_AICORE", "KERNEL_AIVEC", "FFTS_PLUS", "KERNEL_MIX_AIC", "KERNEL_MIX_AIV",
                     "PROFILING_ENABLE", "PROFILING_DISABLE"]
COMM_KERNEL_SUFFIXES = ("AicpuKernel", "AivKernel")


def overlap_layer(session: Session, device_id: int, tasks: DeviceTasks, comm_ops: pd.DataFrame,
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
    t = tasks.table
    start = i64(t["start_ns"]) if len(t) else np.array([], np.int64)
    end = start + (i64(t["dur_ns"]) if len(t) else 0)
    names = tasks.names() if len(t) else None
    # the HCCL kernels, told by name: one test per distinct name, not per task
    comm_kernel = np.asarray([str(c).endswith(COMM_KERNEL_SUFFIXES) for c in names.categories], dtype=bool)[
        names.codes] if names is not None else np.zeros(0, bool)
    comp = tasks.info() & ~comm_kernel & ~cat_isin(task_types(t), ["COMMUNICATION", "HCCL_AI_CPU"]) \
        if len(t) else np.zeros(0, bool)
    computing = intervals.union(start[comp], end[comp])
    m_s = i64(comm_ops["start_ns"]) if len(comm_ops) else np.array([], np.int64)
    communication = intervals.union(m_s, m_s + (i64(comm_ops["dur_ns"]) if len(comm_ops) else 0))
    not_overlapped = intervals.difference(communication, computing)
    if not cpp_export(session) and not len(computing[0]) and not len(communication[0]):
        return  # the Python analysis: "Both task data and hccl data are missing", no process at all
    ext = ~cat_isin(as_cat(t["host_task_type"]), OVERLAP_NO_EXTENT) \
        & ~cat_isin(as_cat(t["device_task_type"]), ["UNKNOWN"]) if len(t) else np.zeros(0, bool)
    # the extent's ends without a copy of the rows (masked reductions), and the task columns
    # dropped before the busy union and Free are built (A's peak of the timeline's build)
    lo = [int(np.min(start, where=ext, initial=np.iinfo(np.int64).max))] if ext.any() else []
    hi = [int(np.max(end, where=ext, initial=np.iinfo(np.int64).min))] if ext.any() else []
    del start, end, ext, comp, comm_kernel
    busy = intervals.union_of(computing, communication)
    lo += [busy[0].min()] if len(busy[0]) else []
    hi += [busy[1].max()] if len(busy[1]) else []
    free = (np.array([], np.int64), np.array([], np.int64))
    if legacy_layout(session):  # that msprof's Free: only the gaps between busy sections
        lo, hi = [busy[0].min()] if len(busy[0]) else [], [busy[1].max()] if len(busy[1]) else []
    if lo and hi and max(hi) > min(lo):
        free = intervals.difference((np.array([min(lo)], np.int64), np.array([max(hi)], np.int64)), busy)
    overlap_sort = layer_sorts(session).overlap
    opid = format_pid(device_pid(session, device_id), overlap_sort, device_id)
    tl.meta.process(opid, "Overlap Analysis", npu_label(session, device_id), overlap_sort)
    layers = [("Communication", communication), ("Communication(Not Overlapped)", not_overlapped),
              ("Computing", computing), ("Free", free)]
    if not cpp_export(session):  # the Python analysis numbers them by its OverlapType: Computing first
        layers = [layers[2], layers[0], layers[1], layers[3]]
    for tid, (label, iv) in enumerate(layers):
        tl.meta.thread(opid, tid, label, tid)
        dur = iv[1] - iv[0]
        keep = dur > 0
        if keep.any():
            st = iv[0]
            if not keep.all():
                st, dur = st[keep], dur[keep]
            tl.slices.append(Slices(name=label, pid=const(len(st), opid), tid=const(len(st), tid), start_ns=st,
                                    dur_ns=dur, label=f"overlap {label}"))


ACL_EVENT_APIS = ["aclrtRecordEvent", "aclrtStreamWaitEvent"]


def host_to_device_flows(api: pd.DataFrame, tasks: pd.DataFrame, comm_ops: pd.DataFrame,
                         hw_pid: int, comm_pid: int, comm_tid: dict[str, int] | None = None,
                         cann_sort: int = LayerSorts().cann, python: bool = False,
                         task_info: np.ndarray | None = None) -> Flows | None:
    """HostToDevice flows as msprof's C++ timeline selects them (CannAssembler::GenerateConnectionTrace,
    AscendHardwareAssembler::GenerateTaskConnectionTrace): a start at every Node launch,
    ``aclrtRecordEvent`` / ``aclrtStreamWaitEvent`` call and call that issued a MEMCPY_ASYNC task; an
    end at every device task with a TaskInfo or issued by such an event call, every memcpy task,
    and every HCCL op; one flow per connection id that has both (msprof also writes the halves
    without a partner; a viewer draws nothing for those, so we leave them out).  ``python``: msprof's
    Python analysis (HostToDevice.add_task_connection_data) starts a device task's flow at its launch
    (the task_track record: its thread, ``launch_ns``) rather than at the Node call, and numbers it
    ``device << 80 | stream << 64 | task << 48 | batch << 32 | context``; we keep ``connection_id <<
    32`` there (ids past 2**53 are not exact in viewers reading them as doubles: README).  ``task_info``: :func:`~msprof_py.export.views.op_info`
    of ``tasks`` when the caller has it."""
    if len(api) == 0:
        return None
    conn_all = i64(api["connection_id"])
    memcpy_conn = i64(tasks.loc[cat_isin(as_cat(tasks["host_task_type"]), ["MEMCPY_ASYNC"]), "connection_id"]) \
        if len(tasks) else np.array([], np.int64)
    # texts compared per category, the starts' columns taken as arrays (no copy of the API rows)
    event_api = is_in(api["name"], ACL_EVENT_APIS)
    src = is_in(api["level"], ["node", "communication", "hccl"]) | event_api | np.isin(conn_all, memcpy_conn)
    if not src.any():
        return None
    src_rows = np.flatnonzero(src)
    src_conn, src_ns = conn_all[src_rows], i64(api["start_ns"])[src_rows]
    # the end candidates (tasks, then HCCL ops) as two columns; the others are read for the pairs only
    e_conn: list[np.ndarray] = []
    e_ns: list[np.ndarray] = []
    sel = np.zeros(0, np.int64)
    if len(tasks):
        tconn = i64(tasks["connection_id"])
        info = op_info(tasks) if task_info is None else task_info
        sel = np.flatnonzero(info | np.isin(tconn, conn_all[event_api]) | np.isin(tconn, memcpy_conn))
        e_conn.append(tconn[sel])
        e_ns.append(i64(tasks["start_ns"])[sel])
        del tconn
    comm_tids = None
    if len(comm_ops) and comm_tid is not None:
        comm_tids = comm_ops["group_name"].astype(str).map(comm_tid).to_numpy(np.int64)
        e_conn.append(i64(comm_ops["connection_id"]))
        e_ns.append(i64(comm_ops["start_ns"]))
    if not e_conn:
        return None
    ec, en = (np.concatenate(e_conn), np.concatenate(e_ns)) if len(e_conn) > 1 else (e_conn[0], e_ns[0])
    del e_conn, e_ns
    kept = None
    if not (ec >= 0).all():
        kept = np.flatnonzero(ec >= 0)
        ec, en = ec[kept], en[kept]
    sp, ep = _first_per_conn(src_conn, src_ns), _first_per_conn(ec, en)
    s_conn, e_first = src_conn[sp], ec[ep]
    # the pairs: connection ids with both ends (each side is sorted by its unique ids)
    at = np.searchsorted(e_first, s_conn)
    both = at < len(e_first)
    both[both] = e_first[at[both]] == s_conn[both]
    si, ei = np.flatnonzero(both), ep[at[both]]  # si: into sp; ei: into the kept candidates
    f_ns = en[ei]
    g = ei if kept is None else kept[ei]  # into the candidates: tasks (rows sel) then HCCL ops
    is_task = g < len(sel)
    task_row = sel[g[is_task]]
    f_pid = np.where(is_task, hw_pid, comm_pid).astype(np.int64)
    f_tid = np.empty(len(g), np.int64)
    f_tid[is_task] = i64(tasks["stream_id"])[task_row] if len(task_row) else 0
    if comm_tids is not None:
        f_tid[~is_task] = comm_tids[g[~is_task] - len(sel)]
    rows = src_rows[sp[si]]  # the starts' API rows
    s_pid = (i64(api["pid"])[rows] << 10) | (cann_sort << 5) | HOST_DEVICE
    s_tid = i64(api["thread_id"])[rows]
    ns_s = slice_ns = src_ns[sp[si]]
    # the Python path: from the launch record (on the launch call's thread, inside that call)
    at_launch = np.zeros(len(g), bool)
    if python and len(task_row):
        launch_ns = np.full(len(g), -1, np.int64)
        launch_tid = np.full(len(g), -1, np.int64)
        launch_ns[is_task] = i64(tasks["launch_ns"])[task_row]
        launch_tid[is_task] = i64(tasks["thread_id"])[task_row]
        at_launch = (launch_ns >= 0) & (launch_tid == s_tid)
        if at_launch.any():
            ns_s = np.where(at_launch, launch_ns, ns_s)
    # by start, pairs starting together by connection id (a stable sort); the columns as they are
    # when they are in that order already (connection ids numbered in start order: the single-op
    # million's 1 M flows, eight columns not copied again)
    order = None if _nondecreasing(ns_s) else np.argsort(ns_s, kind="stable")

    def put(a: np.ndarray) -> np.ndarray:
        return a if order is None else a[order]
    return Flows("HostToDevice", "HostToDevice", flow_ids(put(s_conn[si])), put(s_pid), put(s_tid),
                 put(ns_s), put(f_pid), put(f_tid), put(f_ns), put(slice_ns) if at_launch.any() else None)


def _nondecreasing(a: np.ndarray) -> bool:
    return bool(np.all(a[1:] >= a[:-1]))


def _first_per_conn(conn: np.ndarray, ns: np.ndarray) -> np.ndarray:
    """Positions of the earliest row per connection id (ties: the first given), ordered by
    connection id: a stable sort by (conn, ns) and the first row of each id (no sort, nor a
    reordered copy of the ids, when the rows are in that order already)."""
    if _lexsorted(conn, ns):
        c, order = conn, None
    else:
        order = np.lexsort((ns, conn))
        c = conn[order]
    first = np.ones(len(c), bool)
    first[1:] = c[1:] != c[:-1]
    return np.flatnonzero(first) if order is None else order[first]


def _lexsorted(conn: np.ndarray, ns: np.ndarray) -> bool:
    """Whether the rows are ordered by (conn, ns): a stable sort by them leaves every row where it is."""
    if not _nondecreasing(conn):
        return False
    same = conn[1:] == conn[:-1]
    return not same.any() or bool(np.all(ns[1:][same] >= ns[:-1][same]))


def flow_ids(conn: np.ndarray) -> np.ndarray:
    """msprof's flow id ``connection_id << 32``, or the plain connection id for the whole file when
    any shifted id would reach 2**53 (collections with more than 2,097,151 API calls)."""
    conn = np.asarray(conn, dtype=np.int64)
    if len(conn) and int(conn.max()) >= 1 << 21:
        return conn.copy()
    return conn << 32

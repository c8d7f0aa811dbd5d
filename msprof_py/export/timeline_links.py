"""Layers that link others: msprof's Overlap Analysis (from the device's tasks and HCCL ops) and
the HostToDevice flows (CANN launch -> device task / HCCL op)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from msprof_py.export import intervals
from msprof_py.export.timeline_layers import DeviceTasks, device_pid, i64, layer_sorts
from msprof_py.export.timeline_model import Timeline
from msprof_py.export.trace_events import HOST_DEVICE, Flows, LayerSorts, Slices, format_pid
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
    busy = intervals.union(np.concatenate([computing[0], communication[0]]),
                           np.concatenate([computing[1], communication[1]]))
    ext = ~cat_isin(as_cat(t["host_task_type"]), OVERLAP_NO_EXTENT) \
        & ~cat_isin(as_cat(t["device_task_type"]), ["UNKNOWN"]) if len(t) else np.zeros(0, bool)
    lo = [a.min() for a in (start[ext], busy[0]) if len(a)]
    hi = [a.max() for a in (end[ext], busy[1]) if len(a)]
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
        keep = iv[1] > iv[0]
        if keep.any():
            st, en = iv[0][keep], iv[1][keep]
            tl.slices.append(Slices(name=label, pid=np.full(len(st), opid, np.int64),
                                    tid=np.full(len(st), tid, np.int64), start_ns=st,
                                    dur_ns=en - st, label=f"overlap {label}"))


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
    src_conn = conn_all[src]
    ends: list[dict[str, np.ndarray]] = []  # columns of the end candidates, tasks then HCCL ops
    if len(tasks):
        tconn = i64(tasks["connection_id"])
        info = op_info(tasks) if task_info is None else task_info
        sel = np.flatnonzero(info | np.isin(tconn, conn_all[event_api]) | np.isin(tconn, memcpy_conn))
        ends.append({"conn": tconn[sel], "pid": np.full(len(sel), hw_pid, np.int64),
                     "tid": i64(tasks["stream_id"])[sel], "ns": i64(tasks["start_ns"])[sel],
                     "launch_tid": i64(tasks["thread_id"])[sel] if python else np.full(len(sel), -1, np.int64),
                     "launch_ns": i64(tasks["launch_ns"])[sel] if python else np.full(len(sel), -1, np.int64)})
    if len(comm_ops) and comm_tid is not None:
        n = len(comm_ops)
        ends.append({"conn": i64(comm_ops["connection_id"]), "pid": np.full(n, comm_pid, np.int64),
                     "tid": comm_ops["group_name"].astype(str).map(comm_tid).to_numpy(np.int64),
                     "ns": i64(comm_ops["start_ns"]), "launch_tid": np.full(n, -1, np.int64),
                     "launch_ns": np.full(n, -1, np.int64)})
    if not ends:
        return None
    e = {k: np.concatenate([x[k] for x in ends]) for k in ends[0]}
    keep = np.flatnonzero(e["conn"] >= 0)
    e = {k: v[keep] for k, v in e.items()}
    s_cols = {"conn": src_conn, "pid": (i64(api["pid"])[src] << 10) | (cann_sort << 5) | HOST_DEVICE,
              "tid": i64(api["thread_id"])[src], "ns": i64(api["start_ns"])[src]}
    s, e = _first_per_conn(s_cols), _first_per_conn(e)
    # the pairs: connection ids with both ends (each side is sorted by its unique ids)
    at = np.searchsorted(e["conn"], s["conn"])
    both = at < len(e["conn"])
    both[both] = e["conn"][at[both]] == s["conn"][both]
    si, ei = np.flatnonzero(both), at[both]
    ns_s, slice_ns = s["ns"][si], s["ns"][si]
    # the Python path: from the launch record (on the launch call's thread, inside that call)
    at_launch = (e["launch_ns"][ei] >= 0) & (e["launch_tid"][ei] == s["tid"][si])
    if at_launch.any():
        ns_s = np.where(at_launch, e["launch_ns"][ei], ns_s)
    order = np.argsort(ns_s, kind="stable")  # by start, pairs starting together by connection id
    si, ei = si[order], ei[order]
    return Flows("HostToDevice", "HostToDevice", flow_ids(s["conn"][si]), s["pid"][si], s["tid"][si], ns_s[order],
                 e["pid"][ei], e["tid"][ei], e["ns"][ei], slice_ns[order] if at_launch.any() else None)


def _first_per_conn(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per connection id the earliest row (ties: the first given), ordered by connection id:
    a stable sort by (conn, ns) and the first row of each id."""
    order = np.lexsort((cols["ns"], cols["conn"]))
    c = cols["conn"][order]
    first = np.ones(len(c), bool)
    first[1:] = c[1:] != c[:-1]
    pick = order[first]
    return {k: v[pick] for k, v in cols.items()}


def flow_ids(conn: np.ndarray) -> np.ndarray:
    """msprof's flow id ``connection_id << 32``, or the plain connection id for the whole file when
    any shifted id would reach 2**53 (collections with more than 2,097,151 API calls)."""
    conn = np.asarray(conn, dtype=np.int64)
    if len(conn) and int(conn.max()) >= 1 << 21:
        return conn.copy()
    return conn << 32

"""What links the timeline's layers: msprof's Overlap Analysis process (computing, communication,
not overlapped and free time of a device, from its task and HCCL op rows) and the HostToDevice
flows from the CANN calls to the device tasks / HCCL ops they launched.  Used by
:func:`msprof_py.export.timeline.build_timeline`; times are int64 local ns."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from msprof_py.export import intervals
from msprof_py.export.session_access import device_info
from msprof_py.export.trace_events import HOST_DEVICE, SORT_CANN, SORT_OVERLAP, Flows, Slices, format_pid
from msprof_py.export.views import as_cat, cat_isin, display_names, op_info, task_types
from msprof_py.parse.session import Session

if TYPE_CHECKING:
    from msprof_py.export.timeline import Timeline


def _i64(col: Any) -> np.ndarray:
    s = pd.Series(col)
    if s.dtype.kind in "iu":
        return s.to_numpy(dtype=np.int64)
    return pd.to_numeric(pd.Series(col), errors="coerce").fillna(-1).to_numpy(dtype=np.int64)


def _device_pid(session: Session, device_id: int) -> int:
    info = device_info(session, device_id)
    pid = info.get("pid")
    return int(pid) if pid is not None and not pd.isna(pid) else 0


OVERLAP_NO_EXTENT = ["KERNEL_AICORE", "KERNEL_AIVEC", "FFTS_PLUS", "KERNEL_MIX_AIC", "KERNEL_MIX_AIV",
                     "PROFILING_ENABLE", "PROFILING_DISABLE"]
COMM_KERNEL_SUFFIXES = ("AicpuKernel", "AivKernel")


def overlap_layer(session: Session, device_id: int, tasks: pd.DataFrame, comm_ops: pd.DataFrame,
                  tl: Timeline) -> None:
    """msprof's Overlap Analysis (OverlapAnalysisProcessor), whenever the device ran tasks:
    Computing = union of the compute tasks (a TaskInfo; not the HCCL ``AicpuKernel`` /
    ``AivKernel`` ones), Communication = union of the HCCL ops, Not Overlapped = Communication minus
    Computing, Free = the gaps of both inside [first, last] executed task that is not a kernel or a
    profiling marker (extended by Computing / Communication)."""
    if len(tasks) == 0 and len(comm_ops) == 0:
        return
    names = display_names(tasks) if len(tasks) else as_cat(np.array([], dtype=object))
    # per distinct name, not per row
    comm_kernel = np.array([str(n).endswith(COMM_KERNEL_SUFFIXES) for n in names.categories], dtype=bool)[
        np.asarray(names.codes, dtype=np.intp)] if len(names) else np.zeros(0, bool)
    comp = tasks[op_info(tasks) & ~comm_kernel & ~cat_isin(task_types(tasks), ["COMMUNICATION", "HCCL_AI_CPU"])] \
        if len(tasks) else tasks
    c_s = _i64(comp["start_ns"]) if len(comp) else np.array([], np.int64)
    c_e = c_s + (_i64(comp["dur_ns"]) if len(comp) else 0)
    computing = intervals.union(c_s, c_e)
    m_s = _i64(comm_ops["start_ns"]) if len(comm_ops) else np.array([], np.int64)
    communication = intervals.union(m_s, m_s + (_i64(comm_ops["dur_ns"]) if len(comm_ops) else 0))
    not_overlapped = intervals.difference(communication, computing)
    busy = intervals.union(np.concatenate([computing[0], communication[0]]),
                           np.concatenate([computing[1], communication[1]]))
    ext = tasks[~cat_isin(as_cat(tasks["host_task_type"]), OVERLAP_NO_EXTENT)
                & ~cat_isin(as_cat(tasks["device_task_type"]), ["UNKNOWN"])] if len(tasks) else tasks
    lo = [a.min() for a in (_i64(ext["start_ns"]) if len(ext) else None, busy[0]) if a is not None and len(a)]
    hi = [a.max() for a in ((_i64(ext["start_ns"]) + _i64(ext["dur_ns"])) if len(ext) else None, busy[1])
          if a is not None and len(a)]
    free = (np.array([], np.int64), np.array([], np.int64))
    if lo and hi and max(hi) > min(lo):
        free = intervals.difference((np.array([min(lo)], np.int64), np.array([max(hi)], np.int64)), busy)
    opid = format_pid(_device_pid(session, device_id), SORT_OVERLAP, device_id)
    tl.meta.process(opid, "Overlap Analysis", f"NPU {device_id}", SORT_OVERLAP)
    for tid, (label, iv) in enumerate([("Communication", communication),
                                       ("Communication(Not Overlapped)", not_overlapped), ("Computing", computing),
                                       ("Free", free)]):
        tl.meta.thread(opid, tid, label, tid)
        keep = iv[1] > iv[0]
        if keep.any():
            st, en = iv[0][keep], iv[1][keep]
            tl.slices.append(Slices(name=label, pid=np.full(len(st), opid, np.int64),
                                    tid=np.full(len(st), tid, np.int64), start_ns=st,
                                    dur_ns=en - st, label=f"overlap {label}"))


ACL_EVENT_APIS = ["aclrtRecordEvent", "aclrtStreamWaitEvent"]


def host_to_device_flows(api: pd.DataFrame, tasks: pd.DataFrame, comm_ops: pd.DataFrame,
                         hw_pid: int, comm_pid: int, comm_tid: dict[str, int] | None = None) -> Flows | None:
    """HostToDevice flows as msprof's C++ timeline selects them (CannAssembler::GenerateConnectionTrace,
    AscendHardwareAssembler::GenerateTaskConnectionTrace): a start at every Node launch,
    ``aclrtRecordEvent`` / ``aclrtStreamWaitEvent`` call and call that issued a MEMCPY_ASYNC task; an
    end at every device task with a TaskInfo or issued by such an event call, every memcpy task,
    and every HCCL op; one flow per connection id that has both (msprof also writes the halves
    without a partner; a viewer draws nothing for those, so we leave them out)."""
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
                                  "tid": _i64(tk["stream_id"]), "ns": _i64(tk["start_ns"])}))
    if len(comm_ops) and comm_tid is not None:
        ends.append(pd.DataFrame({"conn": _i64(comm_ops["connection_id"]), "pid": comm_pid,
                                  "tid": comm_ops["group_name"].astype(str).map(comm_tid).to_numpy(np.int64),
                                  "ns": _i64(comm_ops["start_ns"])}))
    if not ends:
        return None
    e = pd.concat(ends, ignore_index=True)
    e = e[e["conn"] >= 0].sort_values(["conn", "ns"], kind="stable").drop_duplicates("conn")
    s = pd.DataFrame({"conn": src_conn, "pid": (_i64(src["pid"]) << 10) | (SORT_CANN << 5) | HOST_DEVICE,
                      "tid": _i64(src["thread_id"]), "ns": _i64(src["start_ns"])})
    s = s.sort_values(["conn", "ns"], kind="stable").drop_duplicates("conn")
    pair = s.merge(e, on="conn", suffixes=("_s", "_f"))
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

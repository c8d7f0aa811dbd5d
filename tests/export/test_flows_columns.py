"""HostToDevice flows: the pairs computed on two columns (connection id, time) with the other
columns read for the pairs only give the flows of the formulation that carried every column of
every candidate (kept here as the reference), on random launches, tasks and HCCL ops: both
analyses' paths, ids without an end, negative ids, ties in time."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from msprof_py.export.timeline_layers import i64
from msprof_py.export.timeline_links import ACL_EVENT_APIS, host_to_device_flows
from msprof_py.export.trace_events import HOST_DEVICE, Flows, LayerSorts
from msprof_py.export.timeline_links import flow_ids
from msprof_py.export.views import as_cat, cat_isin, is_in, op_info


def _reference_flows(api: pd.DataFrame, tasks: pd.DataFrame, comm_ops: pd.DataFrame,
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
    s, e = _reference_first(s_cols), _reference_first(e)
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


def _reference_first(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    order = np.lexsort((cols["ns"], cols["conn"]))
    c = cols["conn"][order]
    first = np.ones(len(c), bool)
    first[1:] = c[1:] != c[:-1]
    pick = order[first]
    return {k: v[pick] for k, v in cols.items()}


def _tables(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    n_api, n_task, n_comm = rng.integers(0, 60, 3)
    conn = lambda n: rng.integers(-2, 40, n)  # repeats (replays), negatives, ids without a partner
    api = pd.DataFrame({
        "connection_id": conn(n_api), "pid": rng.integers(100, 102, n_api),
        "thread_id": rng.integers(1, 4, n_api), "start_ns": rng.integers(0, 50, n_api) * 10,
        "name": pd.Categorical(rng.choice(["launch", *ACL_EVENT_APIS, "other"], n_api)),
        "level": pd.Categorical(rng.choice(["node", "acl", "communication", "runtime"], n_api))})
    tasks = pd.DataFrame({
        "connection_id": conn(n_task), "stream_id": rng.integers(0, 5, n_task),
        "start_ns": rng.integers(0, 50, n_task) * 10, "thread_id": rng.integers(1, 4, n_task),
        "launch_ns": rng.integers(-1, 50, n_task) * 10,
        "host_task_type": pd.Categorical(rng.choice(["KERNEL_AICORE", "MEMCPY_ASYNC", "EVENT_RECORD"], n_task))})
    comm = pd.DataFrame({"connection_id": conn(n_comm), "start_ns": rng.integers(0, 50, n_comm) * 10,
                         "group_name": rng.choice(["g1", "g2"], n_comm)})
    return api, tasks, comm, rng.random(n_task) < 0.7


def _assert_same_flows(api: pd.DataFrame, tasks: pd.DataFrame, comm: pd.DataFrame, info: np.ndarray,
                       python: bool) -> None:
    """host_to_device_flows gives what the all-columns reference gives, column by column."""
    args = (api, tasks, comm, 5 << 10, 6 << 10, {"g1": 0, "g2": 3}, 7, python, info)
    new, ref = host_to_device_flows(*args), _reference_flows(*args)
    assert (new is None) == (ref is None)
    if new is None:
        return
    for k in ("ids", "s_pid", "s_tid", "s_ns", "f_pid", "f_tid", "f_ns"):
        assert np.array_equal(getattr(new, k), getattr(ref, k)), k
    assert (new.s_slice_ns is None) == (ref.s_slice_ns is None)
    if new.s_slice_ns is not None:
        assert np.array_equal(new.s_slice_ns, ref.s_slice_ns)


@pytest.mark.parametrize("python", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_flows_equal_the_all_columns_formulation(seed: int, python: bool) -> None:
    api, tasks, comm, info = _tables(seed)
    _assert_same_flows(api, tasks, comm, info, python)


def _ordered_tables(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, np.ndarray]:
    """A single-op run's shape: API rows in start order, connection ids numbered in that order
    (the flows' columns come out in order: no sort), with a few ids repeated or out of order
    when ``seed`` is odd (the sort again)."""
    api, tasks, comm, info = _tables(seed)
    n = len(api)
    api["start_ns"] = np.arange(n, dtype=np.int64) * 10
    api["connection_id"] = np.arange(n, dtype=np.int64)
    tasks["connection_id"] = np.sort(np.random.default_rng(seed).integers(0, max(n, 1), len(tasks)))
    tasks["start_ns"] = tasks["connection_id"].to_numpy() * 10 + 5
    if seed % 2 and n > 3:
        api.loc[2, "connection_id"] = 1  # a repeated id (the later row a second candidate)
        api.loc[3, "start_ns"] = 0  # a start out of order
    return api, tasks, comm, info


@pytest.mark.parametrize("python", [False, True])
@pytest.mark.parametrize("seed", range(20))
def test_flows_in_order_already_equal_the_formulation(seed: int, python: bool) -> None:
    api, tasks, comm, info = _ordered_tables(seed)
    _assert_same_flows(api, tasks, comm, info, python)


@pytest.mark.parametrize("case", ["empty", "one", "sorted", "ties", "equal ids, times out of order", "unsorted",
                                  "descending"])
def test_first_per_conn_with_and_without_the_sort(case: str) -> None:
    from msprof_py.export.timeline_links import _first_per_conn
    rng = np.random.default_rng(3)
    conn, ns = {
        "empty": (np.zeros(0, np.int64), np.zeros(0, np.int64)),
        "one": (np.array([4]), np.array([9])),
        "sorted": (np.arange(50) * 2, np.arange(50)),
        "ties": (np.repeat(np.arange(10), 3), np.repeat(np.arange(10), 3)),
        "equal ids, times out of order": (np.array([1, 1, 2, 2, 2]), np.array([5, 3, 1, 1, 0])),
        "unsorted": (rng.integers(0, 20, 60), rng.integers(0, 5, 60)),
        "descending": (np.arange(30)[::-1].copy(), np.arange(30)),
    }[case]
    order = np.lexsort((ns, conn))
    c = conn[order]
    first = np.ones(len(c), bool)
    first[1:] = c[1:] != c[:-1]
    assert _first_per_conn(conn, ns).tolist() == order[first].tolist()

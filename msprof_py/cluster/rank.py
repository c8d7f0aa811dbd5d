"""Per-rank work: parse one rank's PROF dir and reduce it to the small tables the cluster needs.

This runs in a worker (a local process or a Dask worker next to the data); only the returned
:class:`RankTables` travels back, a few rows per iteration and communication op, never the
rank's task table.  Times are int64 ns on the rank's own local clock (not yet aligned across
hosts); sizes in bytes.

Tables (pandas, one row per ...):

- ``steps``: iteration (``step`` = the device's iter_id): ``start_ns``, ``end_ns`` (the window
  runs to the next iteration's start, so host time between iterations counts as Free),
  ``computing_ns``, ``comm_not_overlapped_ns``, ``overlapped_ns``, ``communication_ns``,
  ``free_ns``, ``bubble_ns`` (hcom_receive ops: waiting for the previous pipeline stage),
  ``compute_busy_ns`` (sum of compute task durations, the slow-rank figure), ``tasks`` (device
  tasks starting in the window: the timeline's size).
- ``ops``: communication op execution: ``step``, ``op_name``, ``group_name``, ``rank_size``,
  ``alg_type``, ``start_ns``, ``elapse_ns``, ``transit_ns``, ``wait_ns``, ``sync_ns``,
  ``local_rank`` (the rank's position in the communicator).
- ``links``: data moved per (step, op, src, dst, transport, link): ``src``/``dst`` are ranks
  inside the communicator, ``size_bytes``, ``time_ns``, ``tasks``.
- ``sizes``: transit tasks per (step, op, transport key, size): ``count``, ``time_ns``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.export.intervals import difference, union

COMPUTE_TASK_TYPES = ("AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV", "AI_CPU")
TRANSIT_TASKS = ("Memcpy", "Reduce_Inline", "RDMASend", "Reduce_TBE")
WAIT_TASKS = ("Notify_Wait",)
RECEIVE_PREFIX = "hcom_receive"


@dataclass
class RankTables:
    """What one rank contributes (see the module docstring)."""

    prof: str
    rank_id: int
    host: str
    device_id: int
    pid: int
    steps: pd.DataFrame
    ops: pd.DataFrame
    links: pd.DataFrame
    sizes: pd.DataFrame
    warnings: list[str] = field(default_factory=list)
    error: str | None = None  # the rank could not be read (one line, names the file)


def analyze_rank(prof: str | os.PathLike[str], use_cache: bool = True) -> RankTables:
    """Parse ``prof`` (one rank's PROF dir) and reduce it; never raises for bad data (``error``)."""
    from msprof_py.errors import MsprofError
    from msprof_py.parse.session import load_prof

    prof = str(prof)
    try:
        s = load_prof(Path(prof), use_cache)
        return reduce_session(s, prof)
    except MsprofError as err:
        return _failed(prof, str(err))
    except Exception as err:  # noqa: BLE001  one rank's bad data must not stop the other ranks
        return _failed(prof, f"{prof}: cannot be analysed ({type(err).__name__}: {err})")


def reduce_session(s: Any, prof: str) -> RankTables:
    """The small tables of one parsed session (a PROF dir with one device)."""
    dev = s.devices[s.devices["device_id"] != 64]
    warnings = list(s.warnings)
    if dev.empty:
        return _failed(prof, f"{prof}: no device data (no device_*/ dir with info.json)")
    if len(dev) > 1:
        warnings.append(f"{prof}: {len(dev)} devices in one PROF dir; the cluster analysis uses device "
                        f"{int(dev['device_id'].iloc[0])} (one rank per PROF dir)")
    row = dev.iloc[0]
    device_id = int(row["device_id"])
    rank_id = int(row["rank_id"]) if pd.notna(row["rank_id"]) else -1
    host = str(row["hostname"]) if pd.notna(row["hostname"]) else "N/A"
    pid = int(row["pid"]) if pd.notna(row["pid"]) else -1
    tasks = s.tasks[(s.tasks["device_id"] == device_id) & (s.tasks["start_ns"] >= 0)]
    steps = s.steps[s.steps["device_id"] == device_id]
    comm = s.communication[s.communication["device_id"] == device_id]
    ctasks = s.comm_tasks[s.comm_tasks["device_id"] == device_id]
    if steps.empty:
        warnings.append(f"{prof}: no complete iteration in the step trace; rank {rank_id} has no step times")
    win_start, win_end, step_ids = _windows(steps, tasks)
    return RankTables(prof, rank_id, host, device_id, pid,
                      _step_table(tasks, comm, win_start, win_end, step_ids),
                      _op_table(comm, ctasks, win_start, win_end, step_ids),
                      *_link_tables(comm, ctasks, win_start, win_end, step_ids), warnings=warnings)


def _failed(prof: str, msg: str) -> RankTables:
    empty = pd.DataFrame()
    return RankTables(prof, -1, "N/A", -1, -1, empty, empty, empty, empty, error=msg)


def _windows(steps: pd.DataFrame, tasks: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Iteration windows ``[start_k, start_{k+1})`` by iter_id; the last one ends at its step end."""
    st = steps.groupby("iter_id")[["step_start_ns", "step_end_ns"]].agg({"step_start_ns": "min",
                                                                         "step_end_ns": "max"})
    start = st["step_start_ns"].to_numpy(np.int64)
    end = np.append(start[1:], st["step_end_ns"].to_numpy(np.int64)[-1:]) if len(st) else start
    return start, end, st.index.to_numpy(np.int64)


def _step_of(t: np.ndarray, win_start: np.ndarray, win_end: np.ndarray) -> np.ndarray:
    """Index of the window holding each time, -1 outside every window."""
    i = np.searchsorted(win_start, t, side="right") - 1
    ok = (i >= 0) & (t < win_end[np.clip(i, 0, None)]) if len(win_start) else np.zeros(len(t), bool)
    return np.where(ok, i, -1)


def _covered_before(iv: tuple[np.ndarray, np.ndarray], t: np.ndarray) -> np.ndarray:
    """Length of the interval set before each time ``t`` (ns)."""
    s, e = iv
    if len(s) == 0:
        return np.zeros(len(t), np.int64)
    cum = np.concatenate(([0], np.cumsum(e - s)))
    i = np.searchsorted(s, t, side="right") - 1
    inside = np.where(i >= 0, np.minimum(t, e[np.clip(i, 0, None)]) - s[np.clip(i, 0, None)], 0)
    return cum[np.clip(i, 0, None)] * (i >= 0) + np.maximum(inside, 0)


def _in_windows(iv, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _covered_before(iv, b) - _covered_before(iv, a)


def _step_table(tasks, comm, win_start, win_end, step_ids) -> pd.DataFrame:
    is_compute = tasks["task_type"].isin(COMPUTE_TASK_TYPES).to_numpy()
    cs = tasks["start_ns"].to_numpy(np.int64)[is_compute]
    ce = cs + tasks["dur_ns"].to_numpy(np.int64)[is_compute]
    compute = union(cs, ce)
    ms = comm["start_ns"].to_numpy(np.int64)
    me = ms + comm["dur_ns"].to_numpy(np.int64)
    communication = union(ms, me)
    recv = comm["op_name"].astype(str).str.startswith(RECEIVE_PREFIX).to_numpy()
    bubble = union(ms[recv], me[recv])
    exposed = difference(communication, compute)
    span = win_end - win_start
    computing = _in_windows(compute, win_start, win_end)
    commu = _in_windows(communication, win_start, win_end)
    not_ov = _in_windows(exposed, win_start, win_end)
    busy = np.zeros(len(win_start), np.int64)
    k = _step_of(cs, win_start, win_end)
    np.add.at(busy, k[k >= 0], (ce - cs)[k >= 0])
    n_tasks = np.zeros(len(win_start), np.int64)
    kt = _step_of(tasks["start_ns"].to_numpy(np.int64), win_start, win_end)
    np.add.at(n_tasks, kt[kt >= 0], 1)
    return pd.DataFrame({
        "step": step_ids, "start_ns": win_start, "end_ns": win_end,
        "computing_ns": computing, "comm_not_overlapped_ns": not_ov, "overlapped_ns": commu - not_ov,
        "communication_ns": commu, "free_ns": span - computing - not_ov,
        "bubble_ns": _in_windows(bubble, win_start, win_end), "compute_busy_ns": busy, "tasks": n_tasks,
    })


def _task_step_cols(ctasks: pd.DataFrame) -> dict[str, np.ndarray]:
    kind = ctasks["task_type"].astype(str).to_numpy()
    return {"transit": np.isin(kind, TRANSIT_TASKS), "wait": np.isin(kind, WAIT_TASKS)}


def _op_instances(comm: pd.DataFrame, ctasks: pd.DataFrame) -> np.ndarray:
    """For every comm sub-task, the row of ``comm`` (op execution) holding it, -1 if none."""
    out = np.full(len(ctasks), -1, np.int64)
    if comm.empty or ctasks.empty:
        return out
    c = comm.reset_index(drop=True)
    names = c["op_name"].astype(str).to_numpy()
    t = ctasks["start_ns"].to_numpy(np.int64)
    tn = ctasks["op_name"].astype(str).to_numpy()
    for name in np.unique(names):  # a handful of distinct ops; rows are vectorised
        rows = np.flatnonzero(names == name)
        o = rows[np.argsort(c["start_ns"].to_numpy()[rows])]
        s = c["start_ns"].to_numpy(np.int64)[o]
        e = s + c["dur_ns"].to_numpy(np.int64)[o]
        mine = np.flatnonzero(tn == name)
        i = np.searchsorted(s, t[mine], side="right") - 1
        ok = (i >= 0) & (t[mine] <= e[np.clip(i, 0, None)])
        out[mine[ok]] = o[i[ok]]
    return out


def _op_table(comm, ctasks, win_start, win_end, step_ids) -> pd.DataFrame:
    c = comm.reset_index(drop=True)
    n = len(c)
    start = c["start_ns"].to_numpy(np.int64)
    k = _step_of(start, win_start, win_end)
    inst = _op_instances(c, ctasks)
    cols = _task_step_cols(ctasks)
    dur = ctasks["dur_ns"].to_numpy(np.int64)
    transit = np.zeros(n, np.int64)
    wait = np.zeros(n, np.int64)
    ok = inst >= 0
    np.add.at(transit, inst[ok & cols["transit"]], dur[ok & cols["transit"]])
    np.add.at(wait, inst[ok & cols["wait"]], dur[ok & cols["wait"]])
    # synchronisation: the waits before the op's first transit (the handshake with the peers)
    first_transit = np.full(n, np.iinfo(np.int64).max, np.int64)
    ts = ctasks["start_ns"].to_numpy(np.int64)
    np.minimum.at(first_transit, inst[ok & cols["transit"]], ts[ok & cols["transit"]])
    sync = np.zeros(n, np.int64)
    pre = ok & cols["wait"]
    pre_idx = np.flatnonzero(pre)
    before = ts[pre_idx] < first_transit[inst[pre_idx]]
    np.add.at(sync, inst[pre_idx[before]], dur[pre_idx[before]])
    local = np.full(n, -1, np.int64)
    src = ctasks["src_rank"].to_numpy(np.int64)
    dst = ctasks["dst_rank"].to_numpy(np.int64)
    role_src = ok & cols["transit"]
    local[inst[role_src]] = src[role_src]
    out = pd.DataFrame({
        "step": np.where(k >= 0, step_ids[np.clip(k, 0, None)] if len(step_ids) else -1, -1),
        "op_name": c["op_name"].astype(str).to_numpy(), "group_name": c["group_name"].astype(str).to_numpy(),
        "rank_size": c["rank_size"].to_numpy(np.int64), "alg_type": c["alg_type"].astype(str).to_numpy(),
        "start_ns": start, "elapse_ns": c["dur_ns"].to_numpy(np.int64), "transit_ns": transit, "wait_ns": wait,
        "sync_ns": sync, "local_rank": local,
    })
    del dst
    return out[out["step"] >= 0].reset_index(drop=True)


def bandwidth_key(transport: np.ndarray, link: np.ndarray) -> np.ndarray:
    """msprof-analyze's bandwidth buckets: RDMA transfers, else the link they crossed (HCCS, PCIE, SIO)."""
    return np.where(transport == "RDMA", "RDMA", np.where(link == "ON_CHIP", "SDMA", link))


def _link_tables(comm, ctasks, win_start, win_end, step_ids) -> tuple[pd.DataFrame, pd.DataFrame]:
    cols = _task_step_cols(ctasks)
    t = ctasks[cols["transit"] & (ctasks["size_bytes"].to_numpy() > 0)]
    k = _step_of(t["start_ns"].to_numpy(np.int64), win_start, win_end)
    t = t[k >= 0]
    step = step_ids[k[k >= 0]] if len(step_ids) else np.zeros(0, np.int64)
    transport = t["transport_type"].astype(str).to_numpy()
    link = t["link_type"].astype(str).to_numpy()
    df = pd.DataFrame({"step": step, "op_name": t["op_name"].astype(str).to_numpy(),
                       "group_name": t["group_name"].astype(str).to_numpy(),
                       "src": t["src_rank"].to_numpy(np.int64), "dst": t["dst_rank"].to_numpy(np.int64),
                       "transport": transport, "link": link, "key": bandwidth_key(transport, link),
                       "size_bytes": t["size_bytes"].to_numpy(np.int64), "time_ns": t["dur_ns"].to_numpy(np.int64)})
    links = (df.groupby(["step", "op_name", "group_name", "src", "dst", "transport", "link", "key"], sort=True)
             .agg(size_bytes=("size_bytes", "sum"), time_ns=("time_ns", "sum"), tasks=("time_ns", "size"))
             .reset_index())
    sizes = (df.groupby(["step", "op_name", "group_name", "key", "size_bytes"], sort=True)
             .agg(count=("time_ns", "size"), time_ns=("time_ns", "sum")).reset_index())
    return links, sizes

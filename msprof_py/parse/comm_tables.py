"""Communication tables of one PROF dir: ``communication`` (one row per HCCL op run per device
and iteration, schema.COMMUNICATION_COLUMNS) and ``comm_tasks`` (its sub-tasks with ranks, sizes
and bandwidth, schema.COMM_TASK_COLUMNS), built from the host's HCCL records and the joined tasks."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from msprof_py.parse import schema
from msprof_py.parse.cats import frame
from msprof_py.parse.empty_tables import object_frame
from msprof_py.parse.host import HostData

def communication_tables(host: HostData | None, tasks: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(communication, comm_tasks) of the joined ``tasks`` (times ns, bandwidth bytes/ns = GB/s)."""
    if host is None or host.comm_ops.empty:
        return object_frame(schema.COMMUNICATION_COLUMNS), object_frame(schema.COMM_TASK_COLUMNS)
    # one big op per Node launch: HCCL reports an HCCL-level API per sub-task (msprof keys an API's
    # hccl_info records by context id), so the APIs under one launch are one op, named by the first
    ops = host.comm_ops
    first = ops.groupby("node_api")["hccl_api"].transform("min")
    op_of = pd.Series(np.where(ops["node_api"] >= 0, first, ops["hccl_api"]), index=ops["hccl_api"].to_numpy())
    ops = ops[ops["hccl_api"].to_numpy() == op_of.to_numpy()]
    dev = tasks[(tasks["hccl_api"] >= 0) & (tasks["start_ns"] >= 0)]
    dev = dev.assign(hccl_op=dev["hccl_api"].map(op_of).fillna(-1).astype(np.int64))
    g = dev.assign(end=dev["start_ns"] + dev["dur_ns"]).groupby(["device_id", "hccl_op", "iter_id"], sort=False)
    spans = g.agg(start_ns=("start_ns", "min"), end=("end", "max"), index_id=("index_id", "max")).reset_index()
    infos = host.hccl_infos.assign(hccl_op=host.hccl_infos["hccl_api"].map(op_of).fillna(-1).astype(np.int64))
    ranks = infos.groupby("hccl_op")["rank_size"].max() if len(infos) else pd.Series(dtype=np.int64)
    comm = spans.rename(columns={"hccl_op": "hccl_api"}).merge(ops, on="hccl_api", how="left")
    comm["dur_ns"] = comm["end"] - comm["start_ns"]
    comm["rank_size"] = comm["hccl_api"].map(ranks).fillna(-1).astype(np.int64)
    for c, d in (("group_name", "N/A"), ("data_type", "N/A"), ("alg_type", "N/A"), ("group_hash", "N/A"),
                 ("node_type", "N/A")):
        comm[c] = comm[c].fillna(d).astype(object)
    # node_basic_info's type of the Node launch ("HcomAllReduce"), else the name without its numbers
    comm["op_type"] = comm["node_type"].where(comm["node_type"] != "N/A",
                                              comm["op_name"].astype(str).map(lambda s: re.sub(r"(_\d+)+$", "", s)))
    comm["op_name"] = msprof_comm_names(comm)
    comm["count"] = comm["count"].fillna(-1).astype(np.int64)
    comm = comm.sort_values(["device_id", "start_ns"], kind="stable").reset_index(drop=True)
    communication = comm[schema.COMMUNICATION_COLUMNS]

    # sub-tasks: k-th hccl_info under an HCCL API <-> k-th task_track under it (time order)
    hi = host.hccl_infos[host.hccl_infos["hccl_api"] >= 0].sort_values(["hccl_api", "timestamp"], kind="stable")
    hi = hi.assign(k=hi.groupby("hccl_api").cumcount())
    ht = host.host_tasks[(host.host_tasks["hccl_api"] >= 0)].drop_duplicates("host_row")
    ht = ht.sort_values(["hccl_api", "timestamp"], kind="stable")
    ht = ht.assign(k=ht.groupby("hccl_api").cumcount())[["hccl_api", "k", "host_row"]]
    pairs = hi.merge(ht, on=["hccl_api", "k"], how="inner")
    rows = dev.merge(pairs, on=["host_row"], how="inner", suffixes=("", "_info"))
    if rows.empty:
        return communication, object_frame(schema.COMM_TASK_COLUMNS)
    rows = rows.merge(comm[["device_id", "hccl_api", "iter_id", "op_name"]].rename(
        columns={"op_name": "big_op", "hccl_api": "hccl_op"}), on=["device_id", "hccl_op", "iter_id"], how="left")
    src = np.where(rows["role"] == 1, rows["local_rank"], rows["remote_rank"])
    dst = np.where(rows["role"] == 1, rows["remote_rank"], rows["local_rank"])
    dur = rows["dur_ns"].to_numpy(np.float64)
    ct = frame({
        "device_id": rows["device_id"], "op_name": rows["big_op"].astype(object),
        "group_name": rows["group_name_info"] if "group_name_info" in rows else rows["group_name"],
        "plane_id": rows["plane_id"], "task_type": rows["name"], "stream_id": rows["stream_id"],
        "task_id": rows["task_id"], "context_id": rows["context_id"], "start_ns": rows["start_ns"],
        "dur_ns": rows["dur_ns"], "src_rank": src, "dst_rank": dst, "transport_type": rows["transport_type"],
        "size_bytes": rows["data_size"], "data_type": rows["data_type_info"] if "data_type_info" in rows else rows["data_type"],
        "link_type": rows["link_type"],
        "bandwidth_gbps": np.where(dur > 0, rows["data_size"].to_numpy(np.float64) / np.maximum(dur, 1), 0.0),
        "notify_id": rows["notify_id"], "duration_estimated_us": rows["duration_estimated_us"],
    })
    return communication, ct.sort_values(["device_id", "start_ns"], kind="stable").reset_index(drop=True)


def msprof_comm_names(comm: pd.DataFrame) -> pd.Series:
    """msprof's name of a communication op run: ``{op}_{group}_{index}_{iteration}``.

    ``group``: the last 3 characters of the op's group name as msprof keeps it (the hash
    number from hccl_op_info); ``index``: 0, 1, ... over the distinct HCCL calls (by host start)
    of that group on that device, counted apart for AI CPU ("AicpuKernel") ops; ``iteration``:
    the run's iter_id.  E.g. ``hcom_allReduce__673_0_1`` in group ...107, second call, iteration
    2 -> ``hcom_allReduce__673_0_1_107_1_2`` (msprof's hccl_calculator, Python and C++ alike).
    """
    raw = comm["op_name"].astype(str)
    group = comm["group_hash"].astype(str)
    aicpu = raw.str.contains("AicpuKernel", regex=False)
    index = comm["first_ns"].groupby([comm["device_id"], group, aicpu]).rank(method="dense").astype(np.int64) - 1
    return raw + "_" + group.str[-3:] + "_" + index.astype(str) + "_" + comm["iter_id"].astype(np.int64).astype(str)

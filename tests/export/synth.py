"""A synthetic parsed session (schema.py tables) with known truth, for exporter tests and the
export benchmark.  Deterministic for a given argument set; fully vectorised so 1,000,000 tasks
take about a second.

Shape of the data (per device ``d``, model 1, iterations 1..K, ``ops`` ops per iteration):
  host thread 3000+d:  AscendCL@aclmdlExecute  ⊃  Model@ModelExecute  ⊃  per op:
                       Node@launch [2 us]  ⊃  Runtime@LaunchKernel [1 us]
  device: each op runs on stream 2 (AI_CPU ops on stream 3) after its launch; task ids wrap at
          65536 with batch ids; one allReduce per iteration on stream 10 (when ``comm``).
  steps:  one row per iteration; FP at the first op, BP at the last op's end.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from msprof_py.parse.session import Session

BASE_NS = 1_763_730_000_000_000_000  # 2025-11-21 12:40:00 UTC
OP_TYPES = ["Conv2D", "Relu", "Add", "MatMulV2", "TransData", "BNTrainingUpdate"]
TASK_TYPES = ["AI_CORE", "AI_VECTOR_CORE", "AI_VECTOR_CORE", "MIX_AIV", "AI_CORE", "AI_CPU"]
HOST_TYPES = {"AI_CORE": "KERNEL_AICORE", "AI_VECTOR_CORE": "KERNEL_AIVEC", "MIX_AIV": "KERNEL_MIX_AIV",
              "AI_CPU": "KERNEL_AICPU"}


def _cat(values, categories=None) -> pd.Categorical:
    return pd.Categorical(values, categories=categories)


def make_session(ops: int = 6, iterations: int = 2, devices: int = 1, comm: bool = False,
                 pid: int = 4242, dynamic_every: int = 3, static: bool = False) -> Session:
    """Build the session.  Total device op tasks = ops * iterations * devices.

    ``static=True``: a loaded graph -- ops are launched (Node/Runtime calls) in the first
    iteration only and replayed in the others (their tasks keep the first launch's connection id).
    """
    api_parts, task_parts, step_parts, comm_parts, ctask_parts, dev_rows = [], [], [], [], [], []
    conn_next = 0
    iter_len = ops * 10_000 + 200_000  # ns
    for d in range(devices):
        tid = 3000 + d
        n = ops * iterations
        it = np.repeat(np.arange(1, iterations + 1), ops)  # index_id per op
        k = np.tile(np.arange(ops), iterations)
        it_start = BASE_NS + 1_000_000 + (np.arange(iterations) * iter_len)
        it_end = it_start + iter_len - 50_000
        op_h = it_start[it - 1] + 20_000 + k * 10_000  # Node launch start
        type_i = k % len(OP_TYPES)
        op_type = np.array(OP_TYPES)[type_i]
        task_type = np.array(TASK_TYPES)[type_i]
        op_name = np.char.add(np.char.add(op_type.astype(str), "_"), k.astype(str))
        # connection ids: per iteration [acl, model, (node, runtime) * ops]
        per_iter = 2 + 2 * ops
        conn0 = conn_next + (it - 1) * per_iter
        node_conn = conn0 + 2 + 2 * k
        rt_conn = node_conn + 1
        acl_conn = conn_next + np.arange(iterations) * per_iter
        conn_next += iterations * per_iter

        # ---- api rows (acl, model, node, runtime), parents by row index within this device
        base_row = sum(len(p) for p in api_parts)
        n_acl = iterations
        acl = pd.DataFrame({
            "level": "acl", "struct_type": "ACL_MODEL", "name": "aclmdlExecute", "item_id": "0",
            "start_ns": it_start + 5_000, "end_ns": it_end - 5_000, "connection_id": acl_conn,
            "request_id": -1, "parent": -1, "device_id": d})
        model = pd.DataFrame({
            "level": "model", "struct_type": "ModelExecute", "name": "ModelExecute", "item_id": "1",
            "start_ns": it_start + 10_000, "end_ns": it_end - 10_000, "connection_id": acl_conn + 1,
            "request_id": np.arange(1, iterations + 1), "parent": base_row + np.arange(iterations),
            "device_id": d})
        node = pd.DataFrame({
            "level": "node", "struct_type": op_type, "name": "launch", "item_id": op_name,
            "start_ns": op_h, "end_ns": op_h + 2_000, "connection_id": node_conn, "request_id": -1,
            "parent": base_row + n_acl + (it - 1), "device_id": -1})
        rt = pd.DataFrame({
            "level": "runtime", "struct_type": "LaunchKernel", "name": "LaunchKernel", "item_id": "0",
            "start_ns": op_h + 500, "end_ns": op_h + 1_500, "connection_id": rt_conn, "request_id": -1,
            "parent": base_row + 2 * n_acl + np.arange(n), "device_id": d})
        if static:  # launches of the first iteration only; parents shift accordingly
            first = (it == 1)
            node, rt = node[first].copy(), rt[first].copy()
            rt["parent"] = base_row + 2 * n_acl + np.arange(len(node))
            node_conn = node_conn[k]  # replayed tasks carry the first launch's id
        part = pd.concat([acl, model, node, rt], ignore_index=True)
        part.insert(0, "thread_id", tid)
        part.insert(0, "pid", pid)
        api_parts.append(part)

        # ---- device tasks
        stream = np.where(task_type == "AI_CPU", 3, 2)
        dur = 3_000 + (type_i * 1_500) + (k % 7) * 100
        start = op_h + 4_000  # queued after launch; sequential per stream below
        # make per-stream execution sequential: start = max(launch+4us, prev end + 1us)
        order = np.lexsort((start, stream))
        s_sorted, st_sorted, d_sorted = stream[order], start[order], dur[order]
        out = st_sorted.copy()
        for s in np.unique(s_sorted):  # few streams; loop over streams, not rows
            m = np.flatnonzero(s_sorted == s)
            # running max of (start_i) and (end_{i-1}+1000): closed form via cumulative sums
            seq = out[m]
            cum = np.cumsum(d_sorted[m] + 1_000)
            # t_i = max_j<=i (start_j + sum_{j..i-1}(dur+gap)) = cum_{i-1} + max_j(start_j - cum_{j-1})
            prev_cum = np.concatenate([[0], cum[:-1]])
            out[m] = prev_cum + np.maximum.accumulate(seq - prev_cum)
        start = np.empty_like(out)
        start[order] = out
        seq_in_stream = np.empty(n, dtype=np.int64)
        seq_in_stream[order] = np.concatenate([np.arange((stream == s).sum()) for s in np.unique(s_sorted)])
        task_id = seq_in_stream % 65536
        batch_id = seq_in_stream // 65536
        dynamic = (k % dynamic_every) == 0 if dynamic_every else np.zeros(n, bool)
        tasks = pd.DataFrame({
            "device_id": d, "model_id": 1, "index_id": it, "iter_id": it,
            "stream_id": stream, "task_id": task_id, "batch_id": batch_id, "context_id": NA32(n),
            "start_ns": start, "dur_ns": dur, "span_ns": dur, "cut_start_ns": start,
            "thread_id": np.full(n, -1, np.int64), "launch_ns": np.full(n, -1, np.int64),
            "op_name": _cat(op_name), "op_type": _cat(op_type), "task_type": _cat(task_type),
            "host_task_type": _cat(np.vectorize(HOST_TYPES.get, otypes=[object])(task_type)),
            "device_task_type": _cat(np.where(task_type == "AI_CPU", "AICPU_SQE", "AIV_SQE")),
            "op_state": _cat(np.where(dynamic, "dynamic", "static")),
            "block_num": np.where(task_type == "AI_CPU", 0, 8 + k % 24),
            "mix_block_num": np.where(task_type == "MIX_AIV", 16, 0),
            "hf32_eligible": _cat(np.where(op_type == "MatMulV2", "YES", "NO")),
            "input_shapes": _cat(np.full(n, '"1,3,224,224;64,3,7,7"')),
            "input_data_types": _cat(np.full(n, "FLOAT16;FLOAT16")),
            "input_formats": _cat(np.full(n, "NC1HWC0;FRACTAL_Z")),
            "output_shapes": _cat(np.full(n, '"1,64,112,112"')),
            "output_data_types": _cat(np.full(n, "FLOAT16")),
            "output_formats": _cat(np.full(n, "NC1HWC0")),
            "kernel_name": _cat(np.char.add(op_name.astype(str), "_kernel")),
            "connection_id": node_conn, "match": _cat(np.full(n, "matched")),
        })
        task_parts.append(tasks)

        # ---- steps: FP = first op start, BP = last op end of the iteration
        first = start.reshape(iterations, ops).min(axis=1)
        last = (start + dur).reshape(iterations, ops).max(axis=1)
        step_start = np.concatenate([[BASE_NS + 500_000], it_end[:-1]])
        steps = pd.DataFrame({
            "device_id": d, "model_id": 1, "index_id": np.arange(1, iterations + 1),
            "iter_id": np.arange(1, iterations + 1), "step_start_ns": step_start, "step_end_ns": it_end,
            "fp_start_ns": first, "bp_end_ns": last,
            "data_aug_bound_ns": np.concatenate([[-1], first[1:] - it_end[:-1]])})
        step_parts.append(steps)

        if comm:
            c_start = it_end - 40_000
            comm_parts.append(pd.DataFrame({
                "device_id": d, "model_id": 1, "index_id": np.arange(1, iterations + 1),
                "op_name": [f"hcom_allReduce__{i}_0_1" for i in range(iterations)],
                "op_type": _cat(["hcom_allReduce"] * iterations), "group_name": "hccl_world_group",
                "rank_size": devices, "start_ns": c_start, "dur_ns": 20_000,
                "connection_id": acl_conn + 1, "data_type": "FP16", "alg_type": "RING",
                "count": 1024}))
            ctask_parts.append(pd.DataFrame({
                "device_id": d, "op_name": np.repeat([f"hcom_allReduce__{i}_0_1" for i in range(iterations)], 2),
                "group_name": "hccl_world_group", "plane_id": 0,
                "task_type": np.tile(["Notify_Wait", "Memcpy"], iterations), "stream_id": 10,
                "task_id": np.arange(2 * iterations), "context_id": NA32(2 * iterations),
                "start_ns": np.repeat(c_start, 2) + np.tile([0, 8_000], iterations), "dur_ns": 6_000,
                "src_rank": 0, "dst_rank": 1, "transport_type": "SDMA", "size_bytes": 2048,
                "data_type": "FP16", "link_type": "HCCS", "bandwidth_gbps": 12.5, "notify_id": 7,
                "duration_estimated_us": 5.0}))
        dev_rows.append({
            "device_id": d, "pid": pid, "pid_name": "python3", "hostname": "sim", "rank_id": d,
            "platform_version": 5, "ai_core_num": 24, "aiv_num": 48, "hwts_frequency_mhz": 50.0,
            "host_cpu_frequency_mhz": 0.0, "collection_date_begin": "2025-11-21 12:40:00.000000",
            "collection_start_ns": BASE_NS, "collection_end_ns": BASE_NS + 1_000_000 + iterations * iter_len,
            "job_info": "NA", "drv_version": -1, "prof_level": "", "dir_name": f"device_{d}", "host_uid": ""})

    api = pd.concat(api_parts, ignore_index=True)
    # parent indices were local to each device block; they were built with base_row already
    api["dur_ns"] = api["end_ns"] - api["start_ns"]
    api["dur_ticks"] = api["dur_ns"]  # host counters are ns (no host frequency)
    api["before_profiling"] = False
    for c in ("level", "struct_type", "name", "item_id"):
        api[c] = api[c].astype("category")
    from msprof_py.parse import schema
    api = api[schema.API_COLUMNS]
    tasks = pd.concat(task_parts, ignore_index=True)
    for c in tasks.columns:
        if tasks[c].dtype == object:
            tasks[c] = tasks[c].astype("category")
    fus = pd.DataFrame({
        "model_name": ["resnet_like"], "model_id": [1], "fusion_op": ["Conv2D_0"],
        "original_ops": ["conv1;bn1;relu1"], "memory_input_kb": [588.0], "memory_output_kb": [1568.0],
        "memory_weight_kb": [18.375], "memory_workspace_kb": [0.0], "memory_total_kb": [2174.375]})
    empty = lambda name: pd.DataFrame({c: [] for c in getattr(schema, name)})  # noqa: E731
    return Session.from_tables(
        api=api, tasks=tasks[schema.TASK_COLUMNS],
        steps=pd.concat(step_parts, ignore_index=True)[schema.STEP_COLUMNS],
        all_reduce=empty("ALL_REDUCE_COLUMNS"),
        communication=pd.concat(comm_parts, ignore_index=True) if comm_parts else empty("COMMUNICATION_COLUMNS"),
        comm_tasks=pd.concat(ctask_parts, ignore_index=True) if ctask_parts else empty("COMM_TASK_COLUMNS"),
        fusion_ops=fus, memcpy=empty("MEMCPY_COLUMNS"),
        devices=pd.DataFrame(dev_rows)[schema.DEVICE_INFO_FIELDS])


def NA32(n: int) -> np.ndarray:
    return np.full(n, 4294967295, dtype=np.int64)

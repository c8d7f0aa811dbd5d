"""Builders for host records (numpy arrays of the :mod:`msprof_py.raw` layouts), vectorised.

While the simulator works, every timestamp field holds **simulator ns**; :class:`HostLog` turns
them into host counter values (``SimClock.host_cnt``) when it reports.  Scalars broadcast.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np

from msprof_py.raw import (api_event, context_id_info, fusion_op_info, graph_id_map, hccl_info, hccl_op_info,
                           memcpy_info, node_basic_info, task_track, tensor_info)
from msprof_py.raw.common import (EVENT_FLAG, LEVEL_HCCL, LEVEL_MODEL, LEVEL_NODE, LEVEL_RUNTIME, MODEL_GRAPH_ID_MAP,
                                  NODE_BASIC_INFO, NODE_CONTEXT_ID_INFO, NODE_FUSION_OP_INFO, NODE_HCCL_OP_INFO,
                                  NODE_TENSOR_INFO, concat_records, new_records, take_records)
from msprof_py.runtime.clock import SimClock
from msprof_py.runtime.graph import Tensor
from msprof_py.runtime.hooks import ProfilerHooks
from msprof_py.runtime.rts import MEMCPY_INFO_TYPE, TASK_TRACK_TYPE

HCCL_INFO_TYPE = 10  # header type of hccl_info additional records (level 5500)

# GE data type / format ids (tensor_info), inverted from the raw tables
# (graph files name bfloat16 "BF16", GE's short name; msprof prints the enum as DT_BF16)
DATA_TYPE_IDS = {v: k for k, v in tensor_info.DATA_TYPES.items()} | {"BF16": 27}
FORMAT_IDS = {v: k for k, v in tensor_info.FORMATS.items()}


def _n(*arrays) -> int:
    return max((np.size(a) for a in arrays), default=1)


def _header(dtype: np.dtype, n: int, level: int, type_: int, thread: int, ts) -> np.ndarray:
    """``n`` records of ``dtype`` with the 24-byte header filled (magic and data_len by
    :func:`~msprof_py.raw.common.new_records`; ``ts`` in sim ns, broadcast)."""
    r = new_records(dtype, n)
    r["level"] = level
    r["type"] = type_
    r["thread_id"] = thread
    r["timestamp"] = ts
    return r


def api(level: int, type_: int, thread: int, begin, end, item_id) -> np.ndarray:
    """MsprofApi records (begin/end in sim ns)."""
    r = _header(api_event.DTYPE, _n(begin, end, item_id), level, type_, thread, begin)
    r["end"] = end
    r["item_id"] = item_id
    return r


def event(level: int, type_: int, thread: int, ts, request_id, item_id) -> np.ndarray:
    """MsprofEvent records (one per call: a start and an end are two records)."""
    r = _header(api_event.DTYPE, _n(ts, request_id, item_id), level, type_, thread, ts)
    r["data_len"] = request_id
    r["end"] = EVENT_FLAG
    r["item_id"] = item_id
    return r


def task_tracks(thread: int, ts, device_id, stream, task_id, batch, task_type_hash, kernel_hash, num_blocks=0,
                ratio=0) -> np.ndarray:
    """Runtime task_track records; ``num_blocks`` / ``ratio``: the kernel's launch (MsporfKernelInfo),
    which msprof's C++ analysis prefers to node_basic_info for Block Num / Mix Block Num."""
    n = _n(ts, stream, task_id, batch, task_type_hash, kernel_hash)
    r = _header(task_track.DTYPE, n, LEVEL_RUNTIME, TASK_TRACK_TYPE, thread, ts)
    r["device_id"] = device_id
    r["stream_id"] = stream
    r["task_id"] = task_id
    r["batch_id"] = batch
    r["task_type"] = task_type_hash
    r["kernel_name"] = kernel_hash
    r["num_blocks"] = num_blocks
    r["ratio_mode"] = np.asarray(ratio) & 0x7
    return r


def memcpy_infos(thread: int, ts, size, direction: int) -> np.ndarray:
    r = _header(memcpy_info.DTYPE, _n(ts, size), LEVEL_RUNTIME, MEMCPY_INFO_TYPE, thread, ts)
    r["data_size"] = size
    r["max_size"] = size
    r["direction"] = direction
    return r


def node_basic(thread: int, ts, op_name_h, task_type_id, op_type_h, block_num, op_flag, op_state) -> np.ndarray:
    r = _header(node_basic_info.DTYPE, _n(ts, op_name_h), LEVEL_NODE, NODE_BASIC_INFO, thread, ts)
    r["op_name"] = op_name_h
    r["task_type"] = task_type_id
    r["op_type"] = op_type_h
    r["block_num"] = block_num
    r["op_flag"] = op_flag
    r["op_state"] = op_state
    return r


def tensor_infos(thread: int, ts: int, op_name_h: int, inputs: Sequence[Tensor], outputs: Sequence[Tensor]
                 ) -> np.ndarray:
    """One op's tensors, 5 per record (an op with more spans several records, same name and time)."""
    tensors = [(tensor_info.INPUT, t) for t in inputs] + [(tensor_info.OUTPUT, t) for t in outputs]
    nrec = max(1, -(-len(tensors) // tensor_info.MAX_TENSORS))
    r = _header(tensor_info.DTYPE, nrec, LEVEL_NODE, NODE_TENSOR_INFO, thread, ts)
    r["op_name"] = op_name_h
    for i, (kind, t) in enumerate(tensors):
        rec, slot = divmod(i, tensor_info.MAX_TENSORS)
        r["tensor_num"][rec] += 1
        ten = r["tensors"][rec, slot]
        ten["tensor_type"] = kind
        ten["format"] = FORMAT_IDS.get(t.format, 2)
        ten["data_type"] = DATA_TYPE_IDS.get(t.dtype, 1)
        shape = list(t.shape)[: tensor_info.SHAPE_LEN]
        ten["shape"][: len(shape)] = shape
        r["tensors"][rec, slot] = ten
    return r


def context_ids(thread: int, ts: int, op_name_h: int, ids: Sequence[int]) -> np.ndarray:
    r = _header(context_id_info.DTYPE, 1, LEVEL_NODE, NODE_CONTEXT_ID_INFO, thread, ts)
    r["op_name"] = op_name_h
    r["ctx_id_num"] = len(ids)
    r["ctx_ids"][0, : len(ids)] = ids
    return r


def fusion_op(thread: int, ts: int, op_name_h: int, fused_h: Sequence[int], in_mem: int, out_mem: int,
              weight_mem: int, workspace_mem: int) -> np.ndarray:
    r = _header(fusion_op_info.DTYPE, 1, LEVEL_NODE, NODE_FUSION_OP_INFO, thread, ts)
    r["op_name"] = op_name_h
    fused = list(fused_h)[: fusion_op_info.MAX_FUSED]
    r["fusion_op_num"] = len(fused)
    r["input_mem"] = in_mem
    r["output_mem"] = out_mem
    r["weight_mem"] = weight_mem
    r["workspace_mem"] = workspace_mem
    r["total_mem"] = in_mem + out_mem + weight_mem + workspace_mem
    r["fusion_op_ids"][0, : len(fused)] = fused
    return r


def graph_id(thread: int, ts: int, model_name_h: int, graph: int, model: int) -> np.ndarray:
    r = _header(graph_id_map.DTYPE, 1, LEVEL_MODEL, MODEL_GRAPH_ID_MAP, thread, ts)
    r["model_name"] = model_name_h
    r["graph_id"] = graph
    r["model_id"] = model
    return r


def hccl_op(thread: int, ts: int, data_type: int, alg_h: int, count: int, group_h: int) -> np.ndarray:
    r = _header(hccl_op_info.DTYPE, 1, LEVEL_NODE, NODE_HCCL_OP_INFO, thread, ts)
    r["data_type"] = data_type
    r["alg_type"] = alg_h
    r["count"] = count
    r["group_name"] = group_h
    return r


def hccl_infos(thread: int, ts, **cols) -> np.ndarray:
    """hccl_info records; ``cols`` are raw field names (item_id, ccl_tag, local_rank, ...)."""
    n = _n(ts, *cols.values())
    r = _header(hccl_info.DTYPE, n, LEVEL_HCCL, HCCL_INFO_TYPE, thread, ts)
    for k, v in cols.items():
        r[k] = v
    return r


class HostLog:
    """Host records collected per ``(tag, aging)``; timestamps in sim ns until :meth:`flush`."""

    def __init__(self) -> None:
        self.chunks: dict[tuple[str, bool], list[np.ndarray]] = defaultdict(list)

    def add(self, tag: str, aging: bool, records: np.ndarray) -> None:
        if records.size:
            self.chunks[(tag, aging)].append(records)

    def extend(self, items: Sequence[tuple[str, bool, np.ndarray]]) -> None:
        for tag, aging, recs in items:
            self.add(tag, aging, recs)

    def flush(self, hooks: ProfilerHooks, clock: SimClock) -> None:
        """Report everything collected so far (time-sorted per kind, counters converted), then forget it."""
        for (tag, aging), parts in sorted(self.chunks.items()):
            recs = concat_records(parts)
            order = np.argsort(recs["timestamp"], kind="stable")
            recs = take_records(recs, order)
            ns = recs["timestamp"].astype(np.int64)
            recs["timestamp"] = clock.host_cnt(ns)
            if tag == api_event.FILE_TAG:
                is_api = recs["end"] != EVENT_FLAG
                end_ns = recs["end"][is_api].astype(np.int64)
                recs["end"][is_api] = clock.host_cnt(end_ns)
            hooks.report_host(tag, aging, recs)
        self.chunks.clear()

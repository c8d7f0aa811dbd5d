"""Host side of one PROF dir: API table, call tree, and host tasks with their op info (§3.2).

Output (``HostData``):
- ``api``: one row per API call / paired event (schema.API_COLUMNS, times local ns);
- ``host_tasks``: one row per (task_track record x context id) -- msprof's HostTask expanded
  as the join needs it, with model/request ids, connection id and the launching op's info;
- ``host_flips``: FLIP_TASK records (device_id, stream_id, task_id, flip_num, timestamp);
- ``comm_ops`` / ``hccl_infos`` / ``memcpy`` / ``fusion`` raw material for communication tables.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from msprof_py.errors import WarningLog
from msprof_py.parse import cats, plausible
from msprof_py.parse.cats import frame
from msprof_py.parse.host_api import HostApi, read_api, take_or, thread_codes
from msprof_py.parse.host_tasks import NodeLookup, node_lookups, read_tasks
from msprof_py.parse.meta import ResultDir, Ticks
from msprof_py.parse.records import expand_stream_spec
from msprof_py.parse.records.dictionaries import Dictionaries
from msprof_py.parse.records.parts import DecodeContext
from msprof_py.parse.registry import HOST, KindReader
from msprof_py.raw import (api_event as raw_api, context_id_info as raw_ctx, expand_stream_spec as raw_expand,
                           fusion_op_info as raw_fusion, graph_id_map as raw_graph, hccl_info as raw_hccl_info,
                           hccl_op_info as raw_hccl_op, memcpy_info as raw_memcpy, node_basic_info as raw_node,
                           task_track as raw_task, tensor_info as raw_tensor)
from msprof_py.raw.common import INVALID_U32, LEVEL_HCCL, LEVEL_MODEL, LEVEL_NODE, LEVEL_RUNTIME

# the record kinds the host tables are built from (any other kind goes to HostData.tables)
CORE_KINDS = frozenset({raw_api.FILE_TAG, raw_task.FILE_TAG, raw_node.FILE_TAG, raw_tensor.FILE_TAG,
                        raw_ctx.FILE_TAG, raw_hccl_op.FILE_TAG, raw_hccl_info.FILE_TAG, raw_memcpy.FILE_TAG,
                        raw_fusion.FILE_TAG, raw_graph.FILE_TAG, raw_expand.FILE_TAG})


@dataclass
class HostData:
    api: pd.DataFrame
    host_tasks: pd.DataFrame
    host_flips: pd.DataFrame
    comm_ops: pd.DataFrame
    hccl_infos: pd.DataFrame
    memcpy: pd.DataFrame
    fusion: pd.DataFrame
    graph_ids: pd.DataFrame
    dicts: Dictionaries = field(default_factory=Dictionaries)
    expand_status: int = 0  # compact.expand_stream_spec (STARS id decoding on the devices)
    kinds: KindReader | None = None  # what host/data held (unused / unknown kinds for the report)
    tables: dict = field(default_factory=dict)  # decoded tables of kinds other features registered


def load_host(rd: ResultDir, warnings: WarningLog, ticks: Ticks | None = None, python_path: bool = False,
              ready: Callable[[Dictionaries, int], None] | None = None) -> HostData:
    """Parse ``host/data`` of one PROF dir; ``ticks``: the host counter clock
    (:mod:`msprof_py.parse.clocks`; default: the host dir's own files); ``python_path``: msprof
    would export this capture with its Python analysis (clocks rule "python"), which names
    AscendCL calls differently when type_info_dic has no AscendCL entry (see below); ``ready``:
    called with the dictionaries and the expand_stream_spec status (what a device dir's decode
    needs of the host) as soon as they are read, before the API calls and tasks."""
    ctx = DecodeContext(warnings=warnings)
    kinds = KindReader(HOST, rd.path / "data", ctx)
    kinds.load_text()
    plausible.check_companions(kinds, warnings)
    dicts = ctx.dicts
    expand_log = WarningLog()  # its warnings given where they were before: after the other kinds'
    if ready is not None:
        ctx.warnings = expand_log
        ready(dicts, expand_stream_spec.status(kinds.get(raw_expand.FILE_TAG)))
        ctx.warnings = warnings
    # the kinds the tasks are built from need only the dictionaries: decoded on a thread while the
    # API calls are (in the order they are taken; their warnings given where they were before)
    kinds.prefetch([raw_node.FILE_TAG, raw_tensor.FILE_TAG, raw_task.FILE_TAG, raw_ctx.FILE_TAG])
    ticks = ticks if ticks is not None else rd.host_ticks()
    pid = int(rd.info.get("pid", -1) or -1) if str(rd.info.get("pid", "")).lstrip("-").isdigit() else -1

    host = read_api(kinds, rd, ticks, dicts, warnings, pid, python_path)
    node_info = node_lookups(kinds, ticks, host)
    tasks, host_flips = read_tasks(kinds, rd, ticks, host, node_info, python_path)
    comm_ops, hccl_infos = _communication(kinds, ticks, host, node_info["op_type"])
    memcpy, fusion = _memcpy_fusion(kinds, ticks, host)
    graph = kinds.get(raw_graph.FILE_TAG)
    graph_ids = frame({k: graph[k] for k in ("model_name", "graph_id", "model_id")})
    expand_status = expand_stream_spec.status(kinds.get(raw_expand.FILE_TAG))
    kinds.settle()  # (every prefetched kind was taken: the thread has ended)
    warnings.replay(expand_log)
    return HostData(host.api, tasks, host_flips, comm_ops, hccl_infos, memcpy, fusion, graph_ids, dicts,
                    expand_status, kinds, kinds.extra_tables(CORE_KINDS))


def _memcpy_fusion(kinds: KindReader, ticks: Ticks, host: HostApi) -> tuple[pd.DataFrame, pd.DataFrame]:
    """memcpy_info by its Runtime-level API; fusion_op_info with the model of its Node launch."""
    tree, threads = host.tree, host.threads
    mem = kinds.get(raw_memcpy.FILE_TAG)
    mem_rt = tree.attach(LEVEL_RUNTIME, thread_codes(threads, mem["thread_id"]), ticks.to_local_ns(mem["timestamp"]))
    memcpy = frame({"runtime_api": mem_rt, "size_bytes": mem["data_size"], "direction": mem["direction"]})
    fus = kinds.get(raw_fusion.FILE_TAG)
    f_model = tree.point_ancestors(LEVEL_NODE, thread_codes(threads, fus["thread_id"]),
                                   ticks.to_local_ns(fus["timestamp"]))[1][LEVEL_MODEL]
    fusion = frame({
        "model_id": take_or(host.model_of_api, f_model, INVALID_U32).astype(np.int64),
        "fusion_op": fus["op_name"], "original_ops": fus["original_ops"],
        **{f"memory_{k}_kb": fus[f"{k}_mem"] / 1024.0 for k in ("input", "output", "weight", "workspace", "total")},
    })
    return memcpy, fusion


def _communication(kinds: KindReader, ticks: Ticks, host: HostApi,
                   node_type: NodeLookup) -> tuple[pd.DataFrame, pd.DataFrame]:
    """HCCL-level APIs (big ops) with hccl_op_info of their Node launch, and hccl_info records.

    ``first_ns``: the HCCL API's start (msprof's first_timestamp); ``node_type``: the op type
    node_basic_info gives the Node launch ("HcomAllReduce"; "N/A" without one)."""
    tree, threads, a = host.tree, host.threads, host.raw
    hccl_idx = np.flatnonzero(a["level"] == LEVEL_HCCL)
    op = kinds.get(raw_hccl_op.FILE_TAG)
    op_node = tree.attach(LEVEL_NODE, thread_codes(threads, op["thread_id"]), ticks.to_local_ns(op["timestamp"]))
    anc = tree.ancestors_at(hccl_idx)
    node_anc, model_anc = anc[LEVEL_NODE], anc[LEVEL_MODEL]
    info = frame({"node_api": op_node, "group_name": op["group_name"], "group_hash": op["group_hash"],
                  "data_type": op["data_type"], "alg_type": op["alg_type"],
                  "count": op["count"]}).drop_duplicates("node_api", keep="last")
    nt = node_type.index_of(np.maximum(node_anc, 0))
    nt = np.where(node_anc >= 0, nt, -1)
    ops = frame({"hccl_api": hccl_idx, "node_api": node_anc,
                        "op_name": np.asarray(host.item[hccl_idx], dtype=object),  # (not all 4.2 M names as objects)
                        "model_id": take_or(host.model_of_api, model_anc, INVALID_U32),
                        "request_id": take_or(a["request_id"], model_anc, -1),
                        "connection_id": a["connection_id"][hccl_idx],
                        "first_ns": host.api["start_ns"].to_numpy()[hccl_idx],
                        "node_type": _take_text(node_type.values, nt, "N/A")})
    ops = ops.merge(info, on="node_api", how="left")
    hi = kinds.get(raw_hccl_info.FILE_TAG)
    hi_api = tree.attach(LEVEL_HCCL, thread_codes(threads, hi["thread_id"]), ticks.to_local_ns(hi["timestamp"]))
    infos = frame({"hccl_api": hi_api, "timestamp": ticks.to_local_ns(hi["timestamp"]),
                          **{k: v for k, v in hi.items() if k not in ("thread_id", "timestamp")}})
    return ops, infos


def _take_text(values, idx: np.ndarray, default: str) -> np.ndarray:
    """``values[idx]`` as text where ``idx >= 0``, else ``default`` (values: Categorical or array)."""
    if isinstance(values, pd.Categorical):
        return np.asarray(cats.take(values, idx, default), dtype=object)
    out = np.full(len(idx), default, dtype=object)
    out[idx >= 0] = np.asarray(values, dtype=object)[idx[idx >= 0]]
    return out

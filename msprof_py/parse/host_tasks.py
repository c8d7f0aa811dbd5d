"""Host tasks of one PROF dir: task_track records joined to their launching API and op info (§3.2).

``read_tasks`` gives ``host_tasks``: one row per (task_track record x context id) -- msprof's
HostTask expanded as the join needs it, with model/request ids, connection id and the
launching op's node_basic_info / tensor_info; and ``host_flips``: the FLIP_TASK records
(device_id, stream_id, task_id, flip_num, timestamp local ns).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from msprof_py.parse import cats, cpp_time, py_clock
from msprof_py.parse.cats import frame
from msprof_py.parse.flip import compute_batch_id
from msprof_py.parse.host_api import HostApi, take_or, thread_codes
from msprof_py.parse.meta import ResultDir, Ticks
from msprof_py.parse.records import tensor_info
from msprof_py.parse.registry import KindReader
from msprof_py.raw import (context_id_info as raw_ctx, node_basic_info as raw_node, task_track as raw_task,
                           tensor_info as raw_tensor)
from msprof_py.raw.common import INVALID_U32, LEVEL_ACL, LEVEL_HCCL, LEVEL_MODEL, LEVEL_NODE, LEVEL_RUNTIME

# task types msprof expands into context ids (cann_analysis_gear.CONTEXT_ID_WHITE_LIST)
CTX_TASK_TYPES = ("KERNEL_AICORE", "KERNEL_AIVEC", "FFTS_PLUS", "KERNEL_MIX_AIC", "KERNEL_MIX_AIV")
MIX_TASK_TYPES = ("KERNEL_MIX_AIC", "KERNEL_MIX_AIV")
# runtime task types msprof makes a TaskInfo for even without a Node-level op (tree_analyzer.cpp)
KERNEL_COMPUTE_WHITE_LIST = ("KERNEL_AICORE", "KERNEL_AIVEC", "KERNEL_AICPU", "KERNEL_SIMT", "KERNEL_MIX_AIC",
                             "KERNEL_MIX_AIV")
LEVEL0 = ("l0", "level0")  # sample.json profLevel (prof_level on some products)
RTS_TO_GE = {"KERNEL_AICORE": "AI_CORE", "KERNEL_AIVEC": "AI_VECTOR_CORE", "KERNEL_MIX_AIC": "MIX_AIC",
             "KERNEL_MIX_AIV": "MIX_AIV", "KERNEL_AICPU": "AI_CPU", "KERNEL_SIMT": "AI_VECTOR_CORE"}


def read_tasks(kinds: KindReader, rd: ResultDir, ticks: Ticks, host: HostApi, node_info: dict[str, NodeLookup],
               python_path: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(host_tasks, host_flips); ``node_info``: :func:`node_lookups`.  Also sets ``device_id`` of
    the Runtime-level API rows that launched a task (``host.api`` is changed in place)."""
    api, a, tree, threads, item, model_of_api = host.api, host.raw, host.tree, host.threads, host.item, \
        host.model_of_api
    track = kinds.get(raw_task.FILE_TAG)
    tt, flips = track["tasks"], track["flips"]
    t_time = ticks.to_local_ns(tt["timestamp"])
    t_thread = thread_codes(threads, tt["thread_id"])
    own_rt, anc = tree.point_ancestors(LEVEL_RUNTIME, t_thread, t_time)
    if (own_rt >= 0).any():
        # the column's own array, written in place where read_api made it (no one else holds it;
        # set again only where the frame holds a copy: a set column is copied, 34 MB on the million)
        col = api["device_id"].to_numpy()
        own = host.device_col is not None and np.shares_memory(col, host.device_col)
        dev = host.device_col if own else col.copy()
        dev[own_rt[own_rt >= 0]] = tt["device_id"][own_rt >= 0]
        if not own:
            api["device_id"] = dev
    node_api = anc[LEVEL_NODE]
    model_api = anc[LEVEL_MODEL]
    acl_api = anc[LEVEL_ACL]
    hccl_api = anc[LEVEL_HCCL]
    # the launching call: the Node-level API, else the innermost API around the track (msprof's
    # TreeAnalyzer: compute tasks take their Node's id, other tasks their tree parent's); msprof's
    # Python path (the 2024 exports of the 310B captures): the Node's only, else -1
    conn = take_or(a["connection_id"], node_api, -1) if python_path else \
        take_or(a["connection_id"], node_api, take_or(a["connection_id"], model_api, take_or(a["connection_id"], acl_api, -1)))
    model_id = take_or(model_of_api, model_api, INVALID_U32)
    request_id = take_or(a["request_id"], model_api, -1)
    f_time = ticks.to_local_ns(flips["timestamp"])
    host_flips = frame({"device_id": flips["device_id"].astype(np.int64),
                               "stream_id": flips["stream_id"].astype(np.int64),
                               "task_id": flips["task_id"].astype(np.int64),
                               "flip_num": flips["flip_num"].astype(np.int64), "timestamp": f_time})
    batch = tt["batch_id"].astype(np.int64)
    if _all_export(rd) and len(host_flips):
        skey = tt["device_id"].astype(np.int64) * 65536 + tt["stream_id"]
        fkey = host_flips["device_id"].to_numpy() * 65536 + host_flips["stream_id"].to_numpy()
        batch = compute_batch_id(skey, tt["task_id"], t_time, fkey, host_flips["task_id"].to_numpy(),
                                 f_time, host_flips["flip_num"].to_numpy())

    # ---------------- node info attached to the Node-level launch API
    ctx_ids = kinds.get(raw_ctx.FILE_TAG)
    ctx_api = tree.attach(LEVEL_NODE, thread_codes(threads, ctx_ids["thread_id"]),
                          ticks.to_local_ns(ctx_ids["timestamp"]))

    host_type = tt["task_type"]
    n = len(t_time)
    columns = {
        "device_id": tt["device_id"].astype(np.int64),
        "stream_id": tt["stream_id"].astype(np.int64),
        "task_id": tt["task_id"].astype(np.int64),
        "batch_id": batch,
        "timestamp": t_time,
        # the launch as the exporting analysis shows it (msprof's Python path: its float host clock)
        "launch_ns": py_clock.host_shown_ns(tt["timestamp"], ticks.cnt0, float(ticks.mhz), ticks.mono0_ns,
                                            ticks.local_offset_ns)
        if python_path and cpp_time.fits(tt["timestamp"], ticks.cnt0, float(ticks.mhz)) else t_time,
        "host_task_type": host_type,
        "kernel_name": tt["kernel_name"],
        "model_id": model_id.astype(np.int64),
        "request_id": request_id.astype(np.int64),
        "connection_id": conn.astype(np.int64),
        "node_api": node_api,
        "hccl_api": hccl_api,
        "runtime_api": own_rt,
        "thread_id": tt["thread_id"].astype(np.int64),
    }
    has_node = node_api >= 0
    found: dict[int, np.ndarray] = {}
    for col, default in (("op_name", "\0"), ("op_type", "N/A"), ("task_type", "\0"), ("op_state", "N/A"),
                         ("block_num", 0), ("mix_block_num", 0), ("hf32_eligible", "N/A"),
                         *((f, "N/A") for f in tensor_info.FIELDS)):
        src = node_info[col]
        key = id(src.api_index)  # columns of one record kind share their API index: search once
        if key not in found:
            found[key] = np.where(has_node, src.index_of(np.maximum(node_api, 0)), -1) if n else np.zeros(0, np.int64)
        idx = found[key]
        if isinstance(src.values, pd.Categorical):
            columns[col] = cats.take(src.values, idx, default)
        else:
            vals = np.full(n, default, np.int64)
            ok = idx >= 0
            vals[ok] = src.values[idx[ok]]
            columns[col] = vals
    tasks = frame(columns)  # (one frame over the columns: a column set into a frame is copied)
    del columns
    # op name: the node_basic_info name, else the Node API's item_id, else the HCCL API's
    missing = np.asarray(tasks["op_name"].cat.codes) == list(tasks["op_name"].cat.categories).index("\0")
    fallback_api = np.where(has_node, node_api, hccl_api)
    tasks["op_name"] = cats.where(~missing, tasks["op_name"].array, cats.take(item, fallback_api, "N/A"))
    # GE task type, else the runtime type mapped as msprof's RTS_TASK_TYPE_MAP (only under a Node)
    tt_cat = tasks["task_type"].array
    missing = np.asarray(tt_cat.codes) == list(tt_cat.categories).index("\0")
    mapped = cats.from_codes(np.asarray(host_type.codes),
                             [RTS_TO_GE.get(c, "N/A") for c in host_type.categories])
    mapped = cats.where(has_node, mapped, cats.const("N/A", n))
    tasks["task_type"] = cats.where(~missing, tt_cat, mapped)
    kernel_like = cats.label_mask(host_type, lambda c: c.startswith("KERNEL_") or c in ("FFTS_PLUS", "STARS_COMMON"))
    # a white-listed kernel launch with no Node-level op (Ascend C / PyPTO kernels launched
    # directly): msprof still makes a TaskInfo for it, named after its kernel (hash_dic), typed by
    # its runtime type mapped to a GE type (TreeAnalyzer KERNEL_COMPUTE_WHITE_LIST,
    # CANNTraceDBDumper::AddTaskInfoForOnlyTaskTrack); one with no kernel name gets none
    kernel_only = (~has_node & (hccl_api < 0) & cats.isin(host_type, KERNEL_COMPUTE_WHITE_LIST)
                   & ~cats.isin(tasks["kernel_name"].array, ("N/A",)))
    kname = tasks["kernel_name"].array
    tasks["op_name"] = cats.where(kernel_only, kname, tasks["op_name"].array)
    tasks["op_type"] = cats.where(kernel_only, kname, tasks["op_type"].array)
    ge_of_host = cats.from_codes(np.asarray(host_type.codes), [RTS_TO_GE.get(c, c) for c in host_type.categories])
    tasks["task_type"] = cats.where(kernel_only, ge_of_host, tasks["task_type"].array)
    has_info = (kernel_like & (has_node | (hccl_api >= 0))) | kernel_only
    if _is_level0(rd):
        # level0 captures carry no op description: msprof's TaskInfo has N/A op and task types
        na = cats.const("N/A", n)
        tasks["op_type"] = cats.where(has_info, na, tasks["op_type"].array)
        tasks["task_type"] = cats.where(has_info, na, tasks["task_type"].array)
    tasks["has_op_info"] = has_info
    tasks = _expand_contexts(tasks, host_type, ctx_ids, ctx_api)
    return tasks, host_flips


@dataclass
class NodeLookup:
    """API index -> row of a per-API info table."""

    api_index: np.ndarray  # sorted API indices that have info
    values: np.ndarray

    def index_of(self, api: np.ndarray) -> np.ndarray:
        pos = np.searchsorted(self.api_index, api)
        pos = np.minimum(pos, max(len(self.api_index) - 1, 0))
        ok = (len(self.api_index) > 0) & (self.api_index[pos] == api) if len(self.api_index) else np.zeros(len(api), bool)
        return np.where(ok, pos, -1)


def node_lookups(kinds: KindReader, ticks: Ticks, host: HostApi) -> dict[str, NodeLookup]:
    """node_basic_info and tensor_info columns by the Node-level API each record belongs to."""
    tree, threads = host.tree, host.threads
    nb = kinds.get(raw_node.FILE_TAG)
    nb_api = tree.attach(LEVEL_NODE, thread_codes(threads, nb["thread_id"]), ticks.to_local_ns(nb["timestamp"]))
    ti = kinds.get(raw_tensor.FILE_TAG)
    ti_api = tree.attach(LEVEL_NODE, thread_codes(threads, ti["thread_id"]), ticks.to_local_ns(ti["timestamp"]))
    out: dict[str, NodeLookup] = {}

    def table(api_idx, cols):
        ok = api_idx >= 0
        # the last record attached to an API wins
        idx = np.flatnonzero(ok)
        order = np.argsort(api_idx[idx], kind="stable")
        keys = api_idx[idx][order]
        last = np.r_[keys[1:] != keys[:-1], True] if len(keys) else np.zeros(0, bool)
        rows = idx[order][last]
        api_index = keys[last]
        for name, col in cols.items():
            out[name] = NodeLookup(api_index, col[rows] if isinstance(col, pd.Categorical) else np.asarray(col)[rows])

    table(nb_api, {k: nb[k] for k in ("op_name", "op_type", "task_type", "op_state", "block_num", "mix_block_num",
                                      "hf32_eligible")})
    table(ti_api, {f: ti[f] for f in tensor_info.FIELDS})
    return out


def _expand_contexts(tasks: pd.DataFrame, host_type: pd.Categorical, ctx: dict, ctx_api: np.ndarray) -> pd.DataFrame:
    """One row per context id: node ctx ids (+ "0" for MIX) + 4294967295 for white-listed
    kernel types; other tasks keep the single default context 4294967295."""
    n = len(tasks)
    task_idx = [np.arange(n)]
    ctx_vals = [np.full(n, INVALID_U32, np.int64)]
    white = cats.isin(host_type, CTX_TASK_TYPES)
    node_api = tasks["node_api"].to_numpy()
    if len(ctx["ctx_id"]) and white.any():
        rec_api = ctx_api[ctx["ctx_record"]]
        pairs = frame({"api": rec_api, "ctx": ctx["ctx_id"]})
        pairs = pairs[(pairs["api"] >= 0) & (pairs["ctx"] != INVALID_U32)].drop_duplicates()
        sel = frame({"t": np.flatnonzero(white & (node_api >= 0))})
        sel["api"] = node_api[sel["t"].to_numpy()]
        m = sel.merge(pairs, on="api", how="inner")
        task_idx.append(m["t"].to_numpy())
        ctx_vals.append(m["ctx"].to_numpy(np.int64))
    mix = np.flatnonzero(cats.isin(host_type, MIX_TASK_TYPES))
    task_idx.append(mix)
    ctx_vals.append(np.zeros(len(mix), np.int64))
    if sum(len(x) for x in task_idx) == n:  # nothing to expand
        out = tasks  # (ours: extended in place)
        out.insert(4, "context_id", ctx_vals[0])
        out["host_row"] = np.arange(n, dtype=np.int64)
        return out
    ti = np.concatenate(task_idx)
    cv = np.concatenate(ctx_vals)
    dedup = frame({"t": ti, "c": cv}).drop_duplicates().sort_values(["t", "c"], kind="stable")
    out = tasks.iloc[dedup["t"].to_numpy()].reset_index(drop=True)
    out.insert(4, "context_id", dedup["c"].to_numpy(np.int64))
    out["host_row"] = dedup["t"].to_numpy(np.int64)
    return out


def _is_level0(rd: ResultDir) -> bool:
    """sample.json profLevel / prof_level is level 0 (msprof's Context::IsLevel0)."""
    level = rd.sample.get("profLevel", rd.sample.get("prof_level", ""))
    return str(level) in LEVEL0


def _all_export(rd: ResultDir) -> bool:
    """msprof recomputes host batch ids from flips in all-export mode (drvVersion >= 0x072211)."""
    try:
        return int(rd.info.get("drvVersion", 0)) >= 467473
    except (TypeError, ValueError):
        return False



"""Host side of one PROF dir: API table, call tree, and host tasks with their op info (§3.2).

Output (``HostData``):
- ``api``: one row per API call / paired event (schema.API_COLUMNS, times local ns);
- ``host_tasks``: one row per (task_track record x context id) -- msprof's HostTask expanded
  as the join needs it, with model/request ids, connection id and the launching op's info;
- ``host_flips``: FLIP_TASK records (device_id, stream_id, task_id, flip_num, timestamp);
- ``comm_ops`` / ``hccl_infos`` / ``memcpy`` / ``fusion`` raw material for communication tables.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from msprof_py.errors import WarningLog
from msprof_py.parse import cats, plausible
from msprof_py.parse.cats import frame
from msprof_py.parse.calltree import CallTree
from msprof_py.parse.flip import compute_batch_id
from msprof_py.parse.meta import ResultDir, Ticks
from msprof_py.parse.records import expand_stream_spec, tensor_info
from msprof_py.parse.records.dictionaries import Dictionaries
from msprof_py.parse.records.parts import DecodeContext
from msprof_py.parse.registry import HOST, KindReader
from msprof_py.raw import (api_event as raw_api, context_id_info as raw_ctx, expand_stream_spec as raw_expand,
                           fusion_op_info as raw_fusion, graph_id_map as raw_graph, hccl_info as raw_hccl_info,
                           hccl_op_info as raw_hccl_op, memcpy_info as raw_memcpy, node_basic_info as raw_node,
                           task_track as raw_task, tensor_info as raw_tensor)
from msprof_py.raw.common import (ACL_HOST_HCCL, ACL_MODEL, ACL_NN, ACL_OP, ACL_OTHERS, ACL_RTS, ACL_ASCENDC,
                                  INVALID_U32, LEVEL_ACL, LEVEL_HCCL, LEVEL_MODEL, LEVEL_NAMES, LEVEL_NODE,
                                  LEVEL_RUNTIME)

ACL_FAMILIES = {ACL_OP: "ACL_OP", ACL_MODEL: "ACL_MODEL", ACL_RTS: "ACL_RTS", ACL_OTHERS: "ACL_OTHERS",
                ACL_NN: "ACL_NN", ACL_ASCENDC: "ACL_ASCENDC", ACL_HOST_HCCL: "HOST_HCCL", 9: "ACL_DVPP",
                10: "ACL_GRAPH", 11: "ACL_ATB"}
# task types msprof expands into context ids (cann_analysis_gear.CONTEXT_ID_WHITE_LIST)
CTX_TASK_TYPES = ("KERNEL_AICORE", "KERNEL_AIVEC", "FFTS_PLUS", "KERNEL_MIX_AIC", "KERNEL_MIX_AIV")
MIX_TASK_TYPES = ("KERNEL_MIX_AIC", "KERNEL_MIX_AIV")
# runtime task types msprof makes a TaskInfo for even without a Node-level op (tree_analyzer.cpp)
KERNEL_COMPUTE_WHITE_LIST = ("KERNEL_AICORE", "KERNEL_AIVEC", "KERNEL_AICPU", "KERNEL_SIMT", "KERNEL_MIX_AIC",
                             "KERNEL_MIX_AIV")
LEVEL0 = ("l0", "level0")  # sample.json profLevel (prof_level on some products)
RTS_TO_GE = {"KERNEL_AICORE": "AI_CORE", "KERNEL_AIVEC": "AI_VECTOR_CORE", "KERNEL_MIX_AIC": "MIX_AIC",
             "KERNEL_MIX_AIV": "MIX_AIV", "KERNEL_AICPU": "AI_CPU", "KERNEL_SIMT": "AI_VECTOR_CORE"}


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


def load_host(rd: ResultDir, warnings: WarningLog, ticks: Ticks | None = None, python_path: bool = False) -> HostData:
    """Parse ``host/data`` of one PROF dir; ``ticks``: the host counter clock
    (:mod:`msprof_py.parse.clocks`; default: the host dir's own files); ``python_path``: msprof
    would export this capture with its Python analysis (clocks rule "python"), which names
    AscendCL calls differently when type_info_dic has no AscendCL entry (see below)."""
    ctx = DecodeContext(warnings=warnings)
    kinds = KindReader(HOST, rd.path / "data", ctx)
    kinds.load_text()
    plausible.check_companions(kinds, warnings)
    dicts = ctx.dicts
    ticks = ticks if ticks is not None else rd.host_ticks()
    pid = int(rd.info.get("pid", -1) or -1) if str(rd.info.get("pid", "")).lstrip("-").isdigit() else -1

    # ---------------- API table + call tree
    a = kinds.get(raw_api.FILE_TAG)
    # begin 0: the call started before profiling (the first aclrtSetDevice); converted like any
    # counter, so end - start is msprof's duration (the raw counter difference); it lies before
    # collectionTimeBegin and is kept (api_statistic counts it; msprof's timeline leaves it out)
    zero_begin = a["start"] == 0
    start = ticks.to_local_ns(a["start"])
    end = ticks.to_local_ns(a["end"])
    plausible.check_window(warnings, "API call starts", kinds.label(raw_api.FILE_TAG), start[~zero_begin],
                           rd.collection_start_ns,
                           rd.collection_end_ns)
    thread_codes, threads = pd.factorize(a["thread_id"], sort=True)
    threads = pd.Index(threads)
    tree = CallTree(thread_codes, start, end, a["level"])
    name = dicts.resolve_type(a["level"], a["type"])  # API name (type_info_dic)
    is_acl = a["level"] == LEVEL_ACL
    # struct_type: the ACL API family (high 16 bits of the type) for AscendCL calls, else the name
    fam_codes, fam_uniq = pd.factorize((a["type"] >> 16).astype(np.int64)[is_acl])
    family = cats.from_codes(np.full(len(is_acl), -1, np.int64), [])
    if is_acl.any():
        codes = np.full(len(is_acl), -1, np.int64)
        codes[is_acl] = fam_codes
        family = cats.from_codes(codes, [ACL_FAMILIES.get(int(f), str(int(f))) for f in fam_uniq])
    struct_type = cats.where(is_acl, family, name)
    if python_path and is_acl.any() and not dicts.has_level(LEVEL_ACL):
        # msprof's Python analysis (ApiDataModel.update_type_hash_value): a level absent from the
        # type dictionary keeps the raw type number as struct_type and id 0, so every AscendCL
        # call is named "0" (api_statistic: one row "0"; timeline "AscendCL@0", Mode = the number)
        struct_type = cats.where(is_acl, name, struct_type)
        name = cats.where(is_acl, cats.from_codes(np.zeros(len(is_acl), np.int64), ["0"]), name)
    item = dicts.resolve_hash(a["item_id"])
    lv_codes, lv_uniq = pd.factorize(a["level"])
    api = frame({
        "pid": np.full(len(start), pid, np.int64),
        "thread_id": a["thread_id"].astype(np.int64),
        "level": cats.from_codes(lv_codes, [LEVEL_NAMES.get(int(u), str(int(u))) for u in lv_uniq]),
        "struct_type": struct_type,
        "name": name,
        "item_id": item,
        "start_ns": start,
        "end_ns": end,
        "dur_ns": end - start,
        "dur_ticks": (a["end"].astype(np.int64) - a["start"].astype(np.int64)),
        "before_profiling": zero_begin,
        "connection_id": a["connection_id"],
        "request_id": a["request_id"],
        "parent": tree.parent,
        "device_id": np.full(len(start), -1, np.int64),
    })
    # Model-level APIs carry the model id in item_id (a number msprof prints unresolved)
    model_of_api = np.where(a["level"] == LEVEL_MODEL, a["item_id"].astype(np.int64), INVALID_U32)

    # ---------------- task tracks
    track = kinds.get(raw_task.FILE_TAG)
    tt, flips = track["tasks"], track["flips"]
    t_time = ticks.to_local_ns(tt["timestamp"])
    t_thread = _codes_in(threads, tt["thread_id"])
    own_rt, anc = tree.point_ancestors(LEVEL_RUNTIME, t_thread, t_time)
    if (own_rt >= 0).any():
        dev = api["device_id"].to_numpy().copy()
        dev[own_rt[own_rt >= 0]] = tt["device_id"][own_rt >= 0]
        api["device_id"] = dev
    node_api = anc[LEVEL_NODE]
    model_api = anc[LEVEL_MODEL]
    acl_api = anc[LEVEL_ACL]
    hccl_api = anc[LEVEL_HCCL]
    # the launching call: the Node-level API, else the innermost API around the track (msprof's
    # TreeAnalyzer: compute tasks take their Node's id, other tasks their tree parent's)
    conn = _at(a["connection_id"], node_api,
               _at(a["connection_id"], model_api, _at(a["connection_id"], acl_api, -1)))
    model_id = _at(model_of_api, model_api, INVALID_U32)
    request_id = _at(a["request_id"], model_api, -1)
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
    node_info = _node_info(kinds, ticks, tree, threads)
    ctx_ids = kinds.get(raw_ctx.FILE_TAG)
    ctx_api = tree.attach(LEVEL_NODE, _codes_in(threads, ctx_ids["thread_id"]),
                          ticks.to_local_ns(ctx_ids["timestamp"]))

    host_type = tt["task_type"]
    n = len(t_time)
    tasks = frame({
        "device_id": tt["device_id"].astype(np.int64),
        "stream_id": tt["stream_id"].astype(np.int64),
        "task_id": tt["task_id"].astype(np.int64),
        "batch_id": batch,
        "timestamp": t_time,
        "host_task_type": host_type,
        "kernel_name": tt["kernel_name"],
        "model_id": model_id.astype(np.int64),
        "request_id": request_id.astype(np.int64),
        "connection_id": conn.astype(np.int64),
        "node_api": node_api,
        "hccl_api": hccl_api,
        "runtime_api": own_rt,
        "thread_id": tt["thread_id"].astype(np.int64),
    })
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
            tasks[col] = cats.take(src.values, idx, default)
        else:
            vals = np.full(n, default, np.int64)
            ok = idx >= 0
            vals[ok] = src.values[idx[ok]]
            tasks[col] = vals
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

    comm_ops, hccl_infos = _communication(kinds, ticks, tree, threads, a, item, model_of_api,
                                          api["start_ns"].to_numpy(), node_info["op_type"])
    mem = kinds.get(raw_memcpy.FILE_TAG)
    mem_rt = tree.attach(LEVEL_RUNTIME, _codes_in(threads, mem["thread_id"]), ticks.to_local_ns(mem["timestamp"]))
    memcpy = frame({"runtime_api": mem_rt, "size_bytes": mem["data_size"], "direction": mem["direction"]})
    fus = kinds.get(raw_fusion.FILE_TAG)
    f_model = tree.point_ancestors(LEVEL_NODE, _codes_in(threads, fus["thread_id"]),
                                   ticks.to_local_ns(fus["timestamp"]))[1][LEVEL_MODEL]
    graph = kinds.get(raw_graph.FILE_TAG)
    graph_ids = frame({k: graph[k] for k in ("model_name", "graph_id", "model_id")})
    fusion = frame({
        "model_id": _at(model_of_api, f_model, INVALID_U32).astype(np.int64),
        "fusion_op": fus["op_name"], "original_ops": fus["original_ops"],
        **{f"memory_{k}_kb": fus[f"{k}_mem"] / 1024.0 for k in ("input", "output", "weight", "workspace", "total")},
    })
    core = {raw_api.FILE_TAG, raw_task.FILE_TAG, raw_node.FILE_TAG, raw_tensor.FILE_TAG, raw_ctx.FILE_TAG,
            raw_hccl_op.FILE_TAG, raw_hccl_info.FILE_TAG, raw_memcpy.FILE_TAG, raw_fusion.FILE_TAG,
            raw_graph.FILE_TAG, raw_expand.FILE_TAG}
    return HostData(api, tasks, host_flips, comm_ops, hccl_infos, memcpy, fusion, graph_ids, dicts,
                    expand_stream_spec.status(kinds.get(raw_expand.FILE_TAG)), kinds, kinds.extra_tables(core))


@dataclass
class _Lookup:
    """API index -> row of a per-API info table."""

    api_index: np.ndarray  # sorted API indices that have info
    values: np.ndarray

    def index_of(self, api: np.ndarray) -> np.ndarray:
        pos = np.searchsorted(self.api_index, api)
        pos = np.minimum(pos, max(len(self.api_index) - 1, 0))
        ok = (len(self.api_index) > 0) & (self.api_index[pos] == api) if len(self.api_index) else np.zeros(len(api), bool)
        return np.where(ok, pos, -1)


def _node_info(kinds: KindReader, ticks, tree: CallTree, threads) -> dict[str, _Lookup]:
    nb = kinds.get(raw_node.FILE_TAG)
    nb_api = tree.attach(LEVEL_NODE, _codes_in(threads, nb["thread_id"]), ticks.to_local_ns(nb["timestamp"]))
    ti = kinds.get(raw_tensor.FILE_TAG)
    ti_api = tree.attach(LEVEL_NODE, _codes_in(threads, ti["thread_id"]), ticks.to_local_ns(ti["timestamp"]))
    out: dict[str, _Lookup] = {}

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
            out[name] = _Lookup(api_index, col[rows] if isinstance(col, pd.Categorical) else np.asarray(col)[rows])

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


def _communication(kinds: KindReader, ticks, tree: CallTree, threads, a, item, model_of_api, api_start, node_type):
    """HCCL-level APIs (big ops) with hccl_op_info of their Node launch, and hccl_info records.

    ``first_ns``: the HCCL API's start (msprof's first_timestamp); ``node_type``: the op type
    node_basic_info gives the Node launch ("HcomAllReduce"; "N/A" without one)."""
    hccl_idx = np.flatnonzero(a["level"] == LEVEL_HCCL)
    op = kinds.get(raw_hccl_op.FILE_TAG)
    op_node = tree.attach(LEVEL_NODE, _codes_in(threads, op["thread_id"]), ticks.to_local_ns(op["timestamp"]))
    node_anc = tree.ancestors[LEVEL_NODE][hccl_idx] if len(hccl_idx) else np.zeros(0, np.int64)
    model_anc = tree.ancestors[LEVEL_MODEL][hccl_idx] if len(hccl_idx) else np.zeros(0, np.int64)
    info = frame({"node_api": op_node, "group_name": op["group_name"], "group_hash": op["group_hash"],
                  "data_type": op["data_type"], "alg_type": op["alg_type"],
                  "count": op["count"]}).drop_duplicates("node_api", keep="last")
    nt = node_type.index_of(np.maximum(node_anc, 0))
    nt = np.where(node_anc >= 0, nt, -1)
    ops = frame({"hccl_api": hccl_idx, "node_api": node_anc,
                        "op_name": np.asarray(item, dtype=object)[hccl_idx],
                        "model_id": _at(model_of_api, model_anc, INVALID_U32),
                        "request_id": _at(a["request_id"], model_anc, -1),
                        "connection_id": a["connection_id"][hccl_idx],
                        "first_ns": np.asarray(api_start)[hccl_idx],
                        "node_type": _take_text(node_type.values, nt, "N/A")})
    ops = ops.merge(info, on="node_api", how="left")
    hi = kinds.get(raw_hccl_info.FILE_TAG)
    hi_api = tree.attach(LEVEL_HCCL, _codes_in(threads, hi["thread_id"]), ticks.to_local_ns(hi["timestamp"]))
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


def _codes_in(threads: pd.Index, values: np.ndarray) -> np.ndarray:
    """Thread ids -> the call tree's thread codes (unknown threads get a code no API has)."""
    pos = threads.get_indexer(np.asarray(values))
    return np.where(pos >= 0, pos, len(threads) + 1).astype(np.int64)


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


def _at(values: np.ndarray, idx: np.ndarray, default) -> np.ndarray:
    """``values[idx]`` where ``idx >= 0``, else ``default`` -- also when ``values`` is empty
    (a stream with no records, e.g. a missing api_event slice) and every ``idx`` is -1."""
    if not len(values):
        return np.where(idx >= 0, default, default) if np.ndim(default) else np.full(len(idx), default)
    return np.where(idx >= 0, values[np.maximum(idx, 0)], default)

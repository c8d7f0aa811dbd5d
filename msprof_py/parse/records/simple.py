"""Host record kinds that need no logic beyond field extraction and hash resolution:
graph_id_map, hccl_op_info, hccl_info, memcpy_info, fusion_op_info."""
from __future__ import annotations

import numpy as np

from msprof_py.parse.records.parts import DecodeContext, Parts
from msprof_py.raw.memcpy_info import DIRECTIONS

HCCL_DATA_TYPES = {0: "INT8", 1: "INT16", 2: "INT32", 3: "FP16", 4: "FP32", 5: "INT64", 6: "UINT64",
                   7: "UINT8", 8: "UINT16", 9: "UINT32", 10: "FP64", 11: "BFP16", 12: "INT128"}
LINK_TYPES = {0: "ON_CHIP", 1: "HCCS", 2: "PCIE", 3: "ROCE", 4: "SIO"}
TRANSPORT_TYPES = {0: "SDMA", 1: "RDMA", 2: "LOCAL"}


def _base(parts: Parts) -> dict[str, np.ndarray]:
    return {"thread_id": parts.col("thread_id", np.uint32), "timestamp": parts.col("timestamp", np.uint64)}


def _names(values: np.ndarray, table: dict[int, str]) -> np.ndarray:
    return np.array([table.get(int(v), str(int(v))) for v in values], dtype=object)


def _names_fast(values: np.ndarray, table: dict[int, str]) -> np.ndarray:
    uniq, inv = np.unique(values, return_inverse=True)
    return _names(uniq, table)[inv] if len(values) else np.zeros(0, object)


def graph_id_map(parts: Parts, ctx: DecodeContext) -> dict[str, np.ndarray]:
    dicts = ctx.dicts
    out = _base(parts)
    out.update(model_name=np.asarray(dicts.resolve_hash(parts.col("model_name", np.uint64)), dtype=object),
               graph_id=parts.col("graph_id", np.int64), model_id=parts.col("model_id", np.int64))
    return out


def hccl_op_info(parts: Parts, ctx: DecodeContext) -> dict[str, np.ndarray]:
    dicts = ctx.dicts
    out = _base(parts)
    out.update(relay=(parts.col("flags", np.uint8) & 1).astype(bool),
               retry=(parts.col("flags", np.uint8) & 2).astype(bool),
               data_type=_names_fast(parts.col("data_type", np.int64), HCCL_DATA_TYPES),
               alg_type=np.asarray(dicts.resolve_hash(parts.col("alg_type", np.uint64)), dtype=object),
               count=parts.col("count", np.int64),
               group_name=np.asarray(dicts.resolve_hash(parts.col("group_name", np.uint64)), dtype=object),
               # msprof keeps this group name as its hash number (its op names end in the last 3 digits)
               group_hash=parts.col("group_name", np.uint64).astype(str).astype(object))
    return out


def hccl_info(parts: Parts, ctx: DecodeContext) -> dict[str, np.ndarray]:
    dicts = ctx.dicts
    out = _base(parts)
    out.update(
        name=np.asarray(dicts.resolve_hash(parts.col("item_id", np.uint64)), dtype=object),
        group_name=np.asarray(dicts.resolve_hash(parts.col("group_name", np.uint64)), dtype=object),
        local_rank=parts.col("local_rank", np.int64), remote_rank=parts.col("remote_rank", np.int64),
        rank_size=parts.col("rank_size", np.int64), plane_id=parts.col("plane_id", np.int64),
        ctx_id=parts.col("ctx_id", np.int64), notify_id=parts.col("notify_id", np.uint64).astype(np.int64),
        role=parts.col("role", np.int64), duration_estimated_us=parts.col("duration_estimated", np.float64),
        data_size=parts.col("data_size", np.int64),
        data_type=_names_fast(parts.col("data_type", np.int64), HCCL_DATA_TYPES),
        link_type=_names_fast(parts.col("link_type", np.int64), LINK_TYPES),
        transport_type=_names_fast(parts.col("transport_type", np.int64), TRANSPORT_TYPES),
    )
    return out


def memcpy_info(parts: Parts, ctx: DecodeContext) -> dict[str, np.ndarray]:
    out = _base(parts)
    d = parts.col("direction", np.int64)
    out.update(data_size=parts.col("data_size", np.int64), max_size=parts.col("max_size", np.int64),
               direction=_names_fast(np.where(d > 7, 8, d), {**DIRECTIONS, 8: "other"}))
    return out


def fusion_op_info(parts: Parts, ctx: DecodeContext) -> dict[str, np.ndarray]:
    dicts = ctx.dicts
    out = _base(parts)
    n = len(parts)
    num = np.minimum(parts.col("fusion_op_num", np.uint32), 8)
    ids = parts.col("fusion_op_ids") if n else np.zeros((0, 8), np.uint64)
    originals = []
    for i in range(n):  # fusion records are one per fused op of a model, reported at load: few
        originals.append(";".join(dicts.hashes.get(int(h), str(int(h))) for h in ids[i][: int(num[i])]))
    out.update(op_name=np.asarray(dicts.resolve_hash(parts.col("op_name", np.uint64)), dtype=object),
               original_ops=np.array(originals, dtype=object))
    for f in ("input_mem", "output_mem", "weight_mem", "workspace_mem", "total_mem"):
        out[f] = parts.col(f, np.int64)
    return out

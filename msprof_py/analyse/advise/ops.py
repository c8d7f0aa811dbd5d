"""Operator rules: AI CPU ops with AI Core kernels, dynamic-shape ops, and AOE candidates
(ops slower than their identical twins)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from msprof_py.analyse.advise.base import (METRICS, PROCESSING, Finding, Plot, device_tasks, rule, top, us)

AI_CORE_TASK_TYPES = frozenset({"AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV"})
# op types CANN ships AI Core / AI Vector kernels for (ops-nn / ops-math built-ins): an AI CPU
# task of one of these types ran on the AI CPU only because of its dtype, shape or a forced flag
AI_CORE_OP_TYPES = frozenset({
    "Add", "AddN", "Sub", "Mul", "Muls", "Adds", "RealDiv", "Div", "Relu", "ReluGrad", "Gelu", "GeluGrad", "FastGelu",
    "Sigmoid", "Tanh", "Exp", "Sqrt", "Rsqrt", "Cast", "Neg", "Softmax", "SoftmaxV2", "SoftmaxGrad", "LayerNorm",
    "LayerNormV3", "RmsNorm", "ReduceMean", "ReduceMeanD", "ReduceSum", "ReduceSumD", "ReduceMax", "ReduceMaxD",
    "MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2", "Conv2D", "Transpose", "TransposeD", "TransData",
    "ConcatD", "ConcatV2D", "SplitD", "Slice", "StridedSliceD", "GatherV2", "Gather", "Fill", "ZerosLike",
    "OnesLike", "Select", "Maximum", "Minimum", "Pow", "Square", "Abs", "Log", "Less", "Greater", "Equal",
    "ArgMaxV2", "TopK", "TopKV2", "Tile", "TileD", "BroadcastTo", "BroadcastToD", "ExpandD", "Pack", "Unpack",
    "OneHot", "OneHotD", "Cumsum", "CumsumD", "ScatterNdUpdate", "Addcmul", "MseLossGrad", "Spence",
})
INVALID_MODEL = 4294967295
SHAPE_KEY = ["op_type", "input_shapes", "input_data_types"]


def _per_op(t: pd.DataFrame) -> pd.DataFrame:
    g = t.groupby("op_name", observed=True)
    return pd.DataFrame({"op_type": g["op_type"].first().astype(str), "n": g.size(),
                         "total_ns": g["dur_ns"].sum(), "mean_ns": g["dur_ns"].mean(),
                         "input_shapes": g["input_shapes"].first().astype(str),
                         "input_data_types": g["input_data_types"].first().astype(str),
                         "input_formats": g["input_formats"].first().astype(str),
                         "streams": g["stream_id"].unique(), "iterations": g["iter_id"].unique()})


def _ints(arrays: Any) -> list[int]:
    return sorted({int(x) for a in arrays for x in np.atleast_1d(a)})


@rule("aicpu")
def aicpu_ops(session: Any) -> list[Finding]:
    """AI CPU tasks of op types that have AI Core kernels.  Time at stake: their AI CPU time
    minus what the same type and shapes took on AI Core in this run (the whole AI CPU time when
    no AI Core twin ran)."""
    out = []
    for dev, td in device_tasks(session).groupby("device_id"):
        tt = td["task_type"].astype(str)
        core = td[tt.isin(AI_CORE_TASK_TYPES)]
        types = AI_CORE_OP_TYPES | set(core["op_type"].astype(str))
        cpu = td[(tt == "AI_CPU") & td["op_type"].astype(str).isin(types)]
        if not len(cpu):
            continue
        ops = _per_op(cpu)
        twin = core.groupby([core[c].astype(str) for c in SHAPE_KEY])["dur_ns"].median()
        keys = list(zip(*(ops[c] for c in SHAPE_KEY)))
        core_ns = np.array([twin.get(k, np.nan) for k in keys])
        saving = np.where(np.isnan(core_ns), ops["total_ns"], ops["total_ns"] - np.nan_to_num(core_ns) * ops["n"])
        ops["saving_ns"] = np.maximum(saving, 0)
        ops["core_ns"] = core_ns
        ops = ops.sort_values("saving_ns", ascending=False)
        labels, vals = top(ops["saving_ns"])
        out.append(Finding(
            "aicpu", PROCESSING, int(dev),
            f"{len(ops)} operator(s) of types with AI Core kernels ran on the AI CPU "
            f"({us(ops['total_ns'].sum()):.1f} us of AI CPU time)",
            "Run them on AI Core: check the dtype/shape that made GE pick the AI CPU kernel (e.g. int64, "
            "unsupported format) and cast or reshape around the op; reduced use of AI CPU operators.",
            int(ops["saving_ns"].sum()), list(ops.index.astype(str)), _ints(ops["iterations"]), _ints(ops["streams"]),
            {"ops": {str(n): {"type": r.op_type, "count": int(r.n), "ai_cpu_us": us(r.total_ns),
                              "ai_core_twin_mean_us": None if np.isnan(r.core_ns) else us(r.core_ns)}
                     for n, r in ops.iterrows()},
             "estimate": "AI CPU time - the median AI Core time of the same type/shapes x count"},
            Plot("AI CPU time that an AI Core kernel would save, per op", labels, vals)))
    return out


@rule("dynamic_shape")
def dynamic_ops(session: Any) -> list[Finding]:
    """Dynamic-shape ops (node_basic_info op_state "dynamic"): GE launches them from the host in
    every execution instead of replaying them with the model.  Time at stake: the device idle
    time spent waiting for their launches (gap before each dynamic task opened after its launch
    began)."""
    out = []
    t = device_tasks(session)
    api = session.api
    for dev, td in t.groupby("device_id"):
        # inside model executions only: single-op (aclnn / aclop) calls are always launched per call
        dyn = td[(td["op_state"].astype(str) == "dynamic") & (td["model_id"] != INVALID_MODEL)]
        if not len(dyn):
            continue
        ops = _per_op(dyn)
        relaunched = ops[ops["n"] > 1]
        if not len(relaunched):
            continue
        waits = _launch_waits(td, api)
        dyn_ix = dyn.index[dyn["op_name"].isin(relaunched.index)]
        per_op = waits.reindex(dyn_ix).fillna(0).groupby(dyn.loc[dyn_ix, "op_name"].astype(str)).sum()
        per_op = per_op.reindex(relaunched.index.astype(str)).fillna(0)
        labels, vals = top(per_op)
        node = api[(api["level"].astype(str) == "node") & api["item_id"].astype(str).isin(relaunched.index.astype(str))]
        host = node.groupby(node["item_id"].astype(str))["dur_ns"].sum()
        out.append(Finding(
            "dynamic_shape", PROCESSING, int(dev),
            f"{len(relaunched)} dynamic-shape operator(s) are launched from the host in every execution "
            f"({int(relaunched['n'].sum())} launches)",
            "Give them static shapes (pad / bucket the input, set the dynamic dims at model build) so GE "
            "compiles them once and replays them with the model.",
            int(per_op.sum()), list(relaunched.index.astype(str)), _ints(relaunched["iterations"]),
            _ints(relaunched["streams"]),
            {"ops": {str(n): {"type": r.op_type, "launches": int(r.n), "device_us": us(r.total_ns),
                              "device_wait_us": us(per_op.get(str(n), 0)),
                              "host_launch_us": us(host.get(str(n), 0))} for n, r in relaunched.iterrows()},
             "estimate": "device idle time before each dynamic task whose launch began after the device ran dry "
                         "(host_launch_us: the host's launch time, which only costs the device when it waits)"},
            Plot("device wait for the host launch of dynamic ops", labels, vals)))
    return out


def _launch_waits(td: pd.DataFrame, api: pd.DataFrame) -> pd.Series:
    """Per task (index of ``td``): the idle time the device spent before it, if the device was
    idle (no task of any stream running) and the task's launch call began inside that gap."""
    from msprof_py.analyse.advise.base import merge_intervals

    s0, s1 = merge_intervals(td["start_ns"].to_numpy(), td["end_ns"].to_numpy())
    start = td["start_ns"].to_numpy(np.int64)
    k = np.searchsorted(s0, start, side="right") - 1  # the busy interval the task starts
    gap_start = np.where(k > 0, s1[np.clip(k - 1, 0, None)], -1)
    opens = (k > 0) & (s0[np.clip(k, 0, None)] == start)
    launch = _launch_start(td, api)
    host_wait = opens & (launch > gap_start) & (gap_start >= 0)
    return pd.Series(np.where(host_wait, start - gap_start, 0), index=td.index)


def _launch_start(td: pd.DataFrame, api: pd.DataFrame) -> np.ndarray:
    """Start time of the host launch call (connection_id) of each task; -1 if unknown."""
    if not len(api):
        return np.full(len(td), -1, np.int64)
    end = pd.Series(api["start_ns"].to_numpy(), index=api["connection_id"].to_numpy())
    end = end[~end.index.duplicated()]
    return end.reindex(td["connection_id"].to_numpy()).fillna(-1).to_numpy(np.int64)


@rule("aoe_candidates")
def aoe_candidates(session: Any) -> list[Finding]:
    """AI Core ops slower than the fastest op of the same type, input shapes, dtypes and
    formats in the run (a worse kernel / tiling / format for the same work), plus the ops PMU
    data shows at low utilisation (see :mod:`pmu`).  Written as a tune-ops file for AOE.  Time
    at stake: (mean - twin's mean) x count."""
    out = []
    for dev, td in device_tasks(session).groupby("device_id"):
        core = td[td["task_type"].astype(str).isin(AI_CORE_TASK_TYPES) & (td["op_type"].astype(str) != "N/A")]
        if not len(core):
            continue
        ops = _per_op(core)
        key = [ops[c] for c in SHAPE_KEY + ["input_formats"]]
        ops["twin_mean_ns"] = ops.groupby(key)["mean_ns"].transform("min")
        ops["twin"] = ops.groupby(key)["mean_ns"].transform("idxmin")
        ops["saving_ns"] = (ops["mean_ns"] - ops["twin_mean_ns"]) * ops["n"]
        total = core["dur_ns"].sum()
        # slower than its twin by more than jitter (10%) and worth >= 1% of AI Core time
        slow = ops[(ops["mean_ns"] > 1.10 * ops["twin_mean_ns"]) & (ops["saving_ns"] >= 0.01 * total)]
        if not len(slow):
            continue
        slow = slow.sort_values("saving_ns", ascending=False)
        labels, vals = top(slow["saving_ns"])
        out.append(Finding(
            "aoe_candidates", METRICS, int(dev),
            f"{len(slow)} operator(s) run slower than identical operators (same type, shapes, dtypes, "
            f"formats) in the same run",
            "Tune them with AOE operator tuning: msprof-py tune --job_type 2 --tune_ops_file <the tune-ops file>.",
            int(slow["saving_ns"].sum()), list(slow.index.astype(str)), _ints(slow["iterations"]),
            _ints(slow["streams"]),
            {"ops": {str(n): {"type": r.op_type, "count": int(r.n), "mean_us": us(r.mean_ns),
                              "twin": str(r.twin), "twin_mean_us": us(r.twin_mean_ns)} for n, r in slow.iterrows()},
             "estimate": "(mean - mean of the fastest identical op) x count"},
            Plot("time above the identical op's, per op", labels, vals)))
    return out

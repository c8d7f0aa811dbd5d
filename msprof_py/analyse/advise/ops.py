"""Operator rules: AI CPU ops with AI Core kernels, dynamic-shape ops, and AOE candidates
(ops slower than their identical twins)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from msprof_py.analyse.advise.base import (METRICS, PROCESSING, Finding, Plot, by_device, device_tasks, rule,
                                           text_in, texts_of, top, us)

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
MIN_SHARE = 0.01  # dynamic-shape launches must cost the device >= 1% of the iteration time
SHAPE_KEY = ["op_type", "input_shapes", "input_data_types"]
# identical work: also the same outputs (a Conv2DBackpropFilter's filter size is an attribute, not
# an input: 1x1 and 3x3 weight gradients of the same activations have the same inputs)
TWIN_KEY = SHAPE_KEY + ["input_formats", "output_shapes", "output_data_types", "output_formats"]


PER_OP_COLS = ["op_name", "op_type", "dur_ns", "stream_id", "iter_id"] + TWIN_KEY[1:]  # what _per_op reads


def _per_op(t: pd.DataFrame) -> pd.DataFrame:
    """Per op name: type, count, total / mean / median duration (ns) and the first row's
    shapes, data types and formats (the streams and iterations of chosen ops: :func:`_ints_of`)."""
    g = t.groupby("op_name", observed=True)
    return pd.DataFrame({"op_type": g["op_type"].first().astype(str), "n": g.size(),
                         "total_ns": g["dur_ns"].sum(), "mean_ns": g["dur_ns"].mean(),
                         "median_ns": g["dur_ns"].median(),
                         "input_shapes": g["input_shapes"].first().astype(str),
                         "input_data_types": g["input_data_types"].first().astype(str),
                         "input_formats": g["input_formats"].first().astype(str),
                         "output_shapes": g["output_shapes"].first().astype(str),
                         "output_data_types": g["output_data_types"].first().astype(str),
                         "output_formats": g["output_formats"].first().astype(str)})


def _ints_of(t: pd.DataFrame, ops: pd.DataFrame, col: str) -> list[int]:
    """The distinct values of ``col`` (ints, sorted) over the rows of ``t`` of the ops in
    ``ops``'s index (one pass, not a unique() per op)."""
    mine = t["op_name"].isin(list(ops.index)).to_numpy(bool)
    return sorted({int(x) for x in pd.unique(t[col].to_numpy()[mine])})


@rule("aicpu")
def aicpu_ops(session: Any) -> list[Finding]:
    """AI CPU tasks of op types that have AI Core kernels.  Time at stake: their AI CPU time
    minus what the same type and shapes took on AI Core in this run (the whole AI CPU time when
    no AI Core twin ran)."""
    out = []
    for dev, td in by_device(device_tasks(session)):
        is_core, is_cpu = text_in(td["task_type"], AI_CORE_TASK_TYPES), text_in(td["task_type"], ["AI_CPU"])
        if not is_cpu.any():
            continue
        types = AI_CORE_OP_TYPES | texts_of(td["op_type"][is_core])
        cpu = td.loc[is_cpu & text_in(td["op_type"], types), PER_OP_COLS]
        if not len(cpu):
            continue
        ops = _per_op(cpu)
        # the AI Core twins of the AI CPU ops' types only (the medians of the other keys are not read)
        core = td.loc[is_core & text_in(td["op_type"], set(ops["op_type"])), SHAPE_KEY + ["dur_ns"]]
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
            int(ops["saving_ns"].sum()), list(ops.index.astype(str)), _ints_of(cpu, ops, "iter_id"),
            _ints_of(cpu, ops, "stream_id"),
            {"ops": {str(n): {"type": r.op_type, "count": int(r.n), "ai_cpu_us": us(r.total_ns),
                              "ai_core_twin_mean_us": None if np.isnan(r.core_ns) else us(r.core_ns)}
                     for n, r in ops.iterrows()},
             "estimate": "AI CPU time - the median AI Core time of the same type/shapes x count (all of the AI "
                         "CPU time when no such AI Core op ran: an upper bound)"},
            Plot("AI CPU time that an AI Core kernel would save, per op", labels, vals)))
    return out


@rule("dynamic_shape")
def dynamic_ops(session: Any) -> list[Finding]:
    """Dynamic-shape ops (node_basic_info op_state "dynamic") of a model: GE infers their shapes,
    tiles (and on a kernel-cache miss compiles) and launches them from the host in every
    execution instead of replaying them with the model.  That host work costs the run only when
    the device waits for it, so the time at stake is the device idle time that ended with a
    dynamic op whose launch began after the device ran dry (:func:`schedule.idle_gaps`, cause
    "dynamic"); reported from :data:`MIN_SHARE` of the iteration time."""
    from msprof_py.analyse.advise.schedule import gap_parts, span_ns

    out = []
    t = device_tasks(session)
    api = session.api
    for dev, td in by_device(t):
        # inside model executions only: single-op (aclnn / aclop) calls are always launched per call
        dyn = td.loc[text_in(td["op_state"], ["dynamic"]) & (td["model_id"] != INVALID_MODEL).to_numpy(), PER_OP_COLS]
        if not len(dyn):
            continue
        ops = _per_op(dyn)
        relaunched = ops[ops["n"] > 1]
        if not len(relaunched):
            continue
        g = gap_parts(session, int(dev)).frame("dynamic", session, int(dev), next_op=True)
        g = g[g["next_op"].isin(relaunched.index.astype(str))]
        span = span_ns(session, int(dev))
        if not span or g["dur_ns"].sum() < MIN_SHARE * span:
            continue
        per_op = g.groupby("next_op")["dur_ns"].sum()
        relaunched = relaunched[relaunched.index.astype(str).isin(per_op.index)]
        labels, vals = top(per_op)
        node = api[text_in(api["level"], ["node"]) & text_in(api["item_id"], relaunched.index.astype(str))]
        host = node.groupby(node["item_id"].astype(str))["dur_ns"].sum()
        out.append(Finding(
            "dynamic_shape", PROCESSING, int(dev),
            f"{len(relaunched)} dynamic-shape operator(s) are prepared and launched from the host in every "
            f"execution and the device waits for them ({100 * int(per_op.sum()) / span:.1f}% of the iteration time)",
            "Give them static shapes (pad / bucket the input, set the dynamic dims at model build) so GE "
            "compiles them once and replays them with the model; keep the shapes few so the kernel cache hits.",
            int(per_op.sum()), list(relaunched.index.astype(str)), _ints_of(dyn, relaunched, "iter_id"),
            _ints_of(dyn, relaunched, "stream_id"),
            {"ops": {str(n): {"type": r.op_type, "launches": int(r.n), "device_us": us(r.total_ns),
                              "device_wait_us": us(per_op.get(str(n), 0)),
                              "host_launch_us": us(host.get(str(n), 0))} for n, r in relaunched.iterrows()},
             "span_us": us(span),
             "estimate": "device idle time ended by a dynamic op whose launch began after the device ran dry "
                         "(host_launch_us: the host's Node launch time, which costs the device only when it waits)"},
            Plot("device wait for the host launch of dynamic ops", labels, vals)))
    return out


@rule("aoe_candidates")
def aoe_candidates(session: Any) -> list[Finding]:
    """AI Core ops slower than the fastest op of the same type, input and output shapes, dtypes and
    formats in the run (a worse kernel / tiling / format for the same work), plus the ops PMU
    data shows at low utilisation (see :mod:`pmu`).  Written as a tune-ops file for AOE.  Time
    at stake: (median - twin's median) x count (medians: an op slow in a few iterations only is the
unbalanced-iterations rule's, not a kernel AOE can tune)."""
    out = []
    for dev, td in by_device(device_tasks(session)):
        core = td.loc[text_in(td["task_type"], AI_CORE_TASK_TYPES) & ~text_in(td["op_type"], ["N/A"]), PER_OP_COLS]
        if not len(core):
            continue
        ops = _per_op(core)
        key = [ops[c] for c in TWIN_KEY]
        ops["twin_ns"] = ops.groupby(key)["median_ns"].transform("min")
        ops["twin"] = ops.groupby(key)["median_ns"].transform("idxmin")
        ops["saving_ns"] = (ops["median_ns"] - ops["twin_ns"]) * ops["n"]
        total = core["dur_ns"].sum()
        # slower than its twin by more than jitter (10%) and worth >= 1% of AI Core time
        slow = ops[(ops["median_ns"] > 1.10 * ops["twin_ns"]) & (ops["saving_ns"] >= 0.01 * total)]
        if not len(slow):
            continue
        slow = slow.sort_values("saving_ns", ascending=False)
        labels, vals = top(slow["saving_ns"])
        out.append(Finding(
            "aoe_candidates", METRICS, int(dev),
            f"{len(slow)} operator(s) run slower than identical operators (same type, input and output shapes, "
            f"dtypes, formats) in the same run",
            "Tune them with AOE operator tuning: msprof-py tune --job_type 2 --tune_ops_file <the tune-ops file>.",
            int(slow["saving_ns"].sum()), list(slow.index.astype(str)), _ints_of(core, slow, "iter_id"),
            _ints_of(core, slow, "stream_id"),
            {"ops": {str(n): {"type": r.op_type, "count": int(r.n), "median_us": us(r.median_ns),
                              "twin": str(r.twin), "twin_median_us": us(r.twin_ns)} for n, r in slow.iterrows()},
             "estimate": "(median - median of the fastest identical op) x count"},
            Plot("time above the identical op's, per op", labels, vals)))
    return out

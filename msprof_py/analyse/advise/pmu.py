"""PMU rules: low cube/vector utilisation, memory-bound ops.  They read msprof's metric_summary
ratio columns (PipeUtilization / PipeUtilizationExct: ``aic_mac_ratio``(``_extra``),
``aiv_vec_ratio``, ``aic_mte2_ratio`` / ``aiv_mte2_ratio`` on the 910B; ``mac_ratio``,
``vec_ratio``, ``mte2_ratio`` or their ``_exe_`` forms on older chips) from the session's ``pmu``
table (joined to the tasks on device, stream, task, context and start), or from the tasks table
itself if it carries them; without PMU data they are silent (the report says they were
skipped)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.analyse.advise.base import (COMPUTATION, MEMORY, Finding, Plot, by_device, device_tasks, forget, memo,
                                           rule, top, us)

CUBE_COLS = ("aic_mac_ratio", "aic_mac_ratio_extra", "aiv_mac_ratio", "mac_ratio", "mac_exe_ratio")
VEC_COLS = ("aiv_vec_ratio", "aic_vec_ratio", "vec_ratio", "vec_exe_ratio")
MTE2_COLS = ("aic_mte2_ratio", "aiv_mte2_ratio", "mte2_ratio", "mte2_exe_ratio")
BUSY_COLS = ("aic_total_time", "aiv_total_time", "total_time", "aicore_time")  # us: the PMU's busy time
KEY = ["device_id", "stream_id", "task_id", "context_id", "start_ns"]
LOW_UTIL = 0.5  # compute pipes busy under half the task time
# what a tuned kernel sustains on its busiest compute pipe (CANN's GEMM / conv kernels keep the
# cube 70-80% busy); the reference when no op of the same type in the run does better
TARGET_UTIL = 0.7
MEMORY_BOUND = 0.8  # MTE2 (GM -> UB/L1) busy over 80% of the task time
LOW_BANDWIDTH = 0.5  # ... and moving its bytes at under half the bandwidth the run's best op reaches
MIN_SHARE = 0.01  # an op must take >= 1% of the device time
MIN_BYTES = 1 << 20  # memory-bound ops must move >= 1 MiB per execution to be judged on bandwidth
# bytes per element of GE's data types (op_summary names, with or without msprof's DT_ prefix)
DTYPE_BYTES = {"FLOAT": 4, "FLOAT32": 4, "FLOAT16": 2, "BF16": 2, "INT8": 1, "UINT8": 1, "INT16": 2, "UINT16": 2,
               "INT32": 4, "UINT32": 4, "INT64": 8, "UINT64": 8, "DOUBLE": 8, "BOOL": 1, "COMPLEX64": 8,
               "HIFLOAT8": 1, "FLOAT8_E5M2": 1, "FLOAT8_E4M3FN": 1, "INT4": 0.5}


def pmu_columns(session: Any) -> list[str]:
    """The PMU ratio columns the session has (tasks table or ``pmu`` table)."""
    pmu = getattr(session, "pmu", None)
    cols = set(session.tasks.columns) | (set(pmu.columns) if pmu is not None and len(pmu) else set())
    return [c for c in CUBE_COLS + VEC_COLS + MTE2_COLS if c in cols]


RULE_COLS = ["device_id", "op_name", "op_type", "dur_ns", "input_shapes", "input_data_types", "output_shapes",
             "output_data_types"]  # the task columns the PMU rules read besides the PMU's
PMU_COLS = CUBE_COLS + VEC_COLS + MTE2_COLS + BUSY_COLS


def pmu_tasks(session: Any) -> pd.DataFrame:
    """Executed device tasks (:data:`RULE_COLS`) with what the PMU rules read of their PMU
    record (NaN where a task has none): ``util`` (the busiest compute pipe's ratio: cube or
    vector), ``mte2`` (the MTE2 ratio) and ``busy`` (:func:`busy_ns`).  From the PMU columns of
    the tasks table, else of the ``pmu`` table (joined on :data:`KEY`, its first row per key).
    Shared by the PMU rules inside :func:`shared_views`; only these columns: a merged copy of
    the PMU table's would be the largest frame of the advice."""
    return memo(session, "pmu_tasks", lambda: _pmu_tasks(session))


def _pmu_tasks(session: Any) -> pd.DataFrame:
    t = device_tasks(session)
    # per PMU column the tasks have: how to read it (from the tasks table, else the PMU table's joined row)
    have: dict[str, Callable[[], np.ndarray]] = {
        c: (lambda c=c: pd.to_numeric(t[c], errors="coerce").to_numpy(np.float64)) for c in PMU_COLS if c in t.columns}
    pmu = getattr(session, "pmu", None)
    if pmu is not None and len(pmu) and set(KEY) <= set(pmu.columns):
        cols = [c for c in PMU_COLS if c in pmu.columns and c not in t.columns]
        if cols:
            hit, idx = pmu_rows(t, pmu)
            have.update({c: (lambda c=c: np.where(hit, pd.to_numeric(pmu[c], errors="coerce").to_numpy(np.float64)[idx],
                                                  np.nan)) for c in cols})
    n = len(t)
    util = np.fmax(_max_of(have, CUBE_COLS, n), _max_of(have, VEC_COLS, n))
    return t[[c for c in RULE_COLS if c in t.columns]].assign(
        util=util, mte2=_max_of(have, MTE2_COLS, n),
        busy=busy_ns(_max_of(have, BUSY_COLS, n), t["dur_ns"].to_numpy(np.float64)))


def pmu_rows(t: pd.DataFrame, pmu: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """For each task of ``t``: whether a row of ``pmu`` has its :data:`KEY`, and the first
    such row (position; 0 where none): a left join of ``t`` with ``pmu.drop_duplicates(KEY)``.
    When every key column is int64 and the PMU rows' starts strictly increase (as the parser
    gives them), by one ``searchsorted`` on the starts (a start then names at most one row);
    else by a pandas merge."""
    ints = all(t[c].dtype == np.int64 and pmu[c].dtype == np.int64 for c in KEY)
    p_start = pmu["start_ns"].to_numpy()
    if ints and (len(p_start) < 2 or bool((p_start[1:] > p_start[:-1]).all())):
        t_start = t["start_ns"].to_numpy()
        idx = np.minimum(np.searchsorted(p_start, t_start), len(p_start) - 1)
        hit = p_start[idx] == t_start
        for c in KEY[:-1]:
            hit &= pmu[c].to_numpy()[idx] == t[c].to_numpy()
        return hit, np.where(hit, idx, 0)
    first = ~pmu.duplicated(KEY).to_numpy()  # = drop_duplicates(KEY): the first row per key
    right = pmu.loc[first, KEY].assign(_row=np.flatnonzero(first))
    row = t[KEY].merge(right, on=KEY, how="left")["_row"].to_numpy(np.float64)  # a left join's row
    hit = ~np.isnan(row)
    return hit, np.where(hit, row, 0).astype(np.int64)


def _max_of(have: dict[str, Callable[[], np.ndarray]], cols: tuple[str, ...], n: int) -> np.ndarray:
    """Per task: the largest of the columns ``cols`` it has a value in (NaN if none); one
    column read at a time (= ``np.fmax.reduce`` of them all, without stacking them)."""
    out = None
    for c in cols:
        if c in have:
            out = have[c]() if out is None else np.fmax(out, have[c]())
    return np.full(n, np.nan) if out is None else out


def busy_ns(total_us: np.ndarray, dur_ns: np.ndarray) -> np.ndarray:
    """Per task: the time its AI Core / Vector cores ran (the PMU's total time, ``total_us``,
    which the pipe ratios are shares of; the task's duration also holds its launch and
    scheduling), at most the duration; the duration without PMU data."""
    b = total_us * 1000.0
    return np.where(b > 0, np.fmin(b, dur_ns), dur_ns)  # fmin: a missing duration does not cap (as Series.clip)


PER_OP = ["op_name", "op_type", "dur_ns", "busy"]  # the columns _per_op reads
SHAPE_COLS = ("input_shapes", "input_data_types", "output_shapes", "output_data_types")  # what op_bytes reads


def _per_op(t: pd.DataFrame, value: pd.Series) -> pd.DataFrame:
    g = t.assign(v=value).groupby("op_name", observed=True)
    return pd.DataFrame({"total_ns": g["dur_ns"].sum(), "busy_ns": g["busy"].sum(), "value": g["v"].mean(),
                         "n": g.size(),
                         "op_type": g["op_type"].first().astype(str)})


def tensor_bytes(shapes: str, dtypes: str) -> float:
    """Bytes of the tensors of one op_summary cell pair (``'8,16;16'``, ``'FLOAT16;FLOAT'``); NaN
    if a shape or a data type is unknown."""
    if shapes in ("", "N/A") or dtypes in ("", "N/A"):
        return float("nan")
    total = 0.0
    for shp, dt in zip(shapes.split(";"), dtypes.split(";")):
        width = DTYPE_BYTES.get(dt.strip().removeprefix("DT_"))
        if width is None:
            return float("nan")
        try:
            total += float(np.prod([int(x) for x in shp.split(",") if x.strip() != ""])) * width
        except ValueError:
            return float("nan")
    return total


def op_bytes(t: pd.DataFrame) -> pd.Series:
    """Per op name: bytes read and written once (inputs + outputs, from the shapes and data types)."""
    g = t.groupby("op_name", observed=True)
    first = pd.DataFrame({c: g[c].first().astype(str) for c in SHAPE_COLS})
    return pd.Series([tensor_bytes(r.input_shapes, r.input_data_types) + tensor_bytes(r.output_shapes,
                                                                                       r.output_data_types)
                      for r in first.itertuples()], index=first.index, dtype=np.float64)


@rule("low_utilisation")
def low_utilisation(session: Any) -> list[Finding]:
    """AI Core ops whose busiest compute pipe (cube or vector) is under 50% and that are not
    memory-bound.  Time at stake: busy time (the PMU's total time) x (1 - utilisation / target), target = the best mean
    utilisation of an op of the same type in the run, at least :data:`TARGET_UTIL` (a kernel
    that keeps its pipe as busy as the good kernel does the same work in that share of the time)."""
    if not pmu_columns(session):
        return []
    out = []
    for dev, td in by_device(pmu_tasks(session)):
        util, mte2 = td["util"], td["mte2"]
        has = util.notna()
        if not has.any():
            continue
        every = _per_op(td.loc[has, PER_OP], util[has])
        best = every.groupby("op_type")["value"].transform("max").clip(lower=TARGET_UTIL)
        ok = has & (util < LOW_UTIL) & ~(mte2 > MEMORY_BOUND)
        if not ok.any():
            continue
        ops = _per_op(td.loc[ok, PER_OP], util[ok])
        ops = ops[ops["total_ns"] >= MIN_SHARE * td["dur_ns"].sum()]
        if not len(ops):
            continue
        ops["target"] = best.reindex(ops.index)
        ops["saving_ns"] = ops["busy_ns"] * (1 - ops["value"] / ops["target"]).clip(lower=0)
        ops = ops.sort_values("saving_ns", ascending=False)
        labels, vals = top(ops["saving_ns"])
        out.append(Finding(
            "low_utilisation", COMPUTATION, int(dev),
            f"{len(ops)} operator(s) use their cube/vector pipes under {int(LOW_UTIL * 100)}% of the time",
            "Improve tiling / block dim (AOE operator tuning), use the cube-friendly format (FRACTAL_NZ) and "
            "aligned shapes (multiples of 16).",
            int(ops["saving_ns"].sum()), list(ops.index.astype(str)), [], [],
            {"ops": {str(n): {"type": r.op_type, "utilisation": round(float(r.value), 3),
                              "target": round(float(r.target), 3), "total_us": us(r.total_ns),
                              "busy_us": us(r.busy_ns)}
                     for n, r in ops.iterrows()},
             "estimate": "busy time x (1 - utilisation / target); target: the best utilisation of the same op type "
                         f"in the run, at least {TARGET_UTIL}"},
            Plot("time a kernel at the target utilisation would save, per op", labels, vals)))
    return out


@rule("memory_bound")
def memory_bound(session: Any) -> list[Finding]:
    """Memory-bound ops (MTE2 busy over 80% of the task time) that move their bytes (inputs +
    outputs, from the shapes; at least 1 MiB per execution) over their busy time at under half the
    bandwidth the run's fastest such op reaches on that device: msprof's "Low data memory handling efficiency" (too few blocks, a
    poor access pattern or format).  Ops at the device's bandwidth are memory-bound by nature
    (element-wise ops) and not flagged: only fusing them away would help.  Time at stake:
    busy time - bytes / that bandwidth."""
    if not pmu_columns(session):
        return []
    out: list[Finding] = []
    view = pmu_tasks(session)
    forget(session, "pmu_tasks")  # the last rule reading it (RULES' order): freed once this rule is done
    for dev, td in by_device(view):
        mte2 = td["mte2"]
        ok = mte2 > MEMORY_BOUND
        if not ok.any():
            continue
        ops = _per_op(td.loc[ok, PER_OP], mte2[ok])
        ops["bytes"] = op_bytes(td.loc[ok, ["op_name", *SHAPE_COLS]]).reindex(ops.index) * ops["n"]
        ops["bw"] = ops["bytes"] / ops["busy_ns"]  # bytes per ns = GB/s, over the cores' busy time
        # ops moving under 1 MiB per run are latency-bound (a few us on few blocks), not bandwidth-bound
        ops = ops[ops["bw"].notna() & (ops["bw"] > 0) & (ops["bytes"] >= MIN_BYTES * ops["n"])]
        if not len(ops):
            continue
        best = float(ops["bw"].max())
        slow = ops[(ops["bw"] < LOW_BANDWIDTH * best) & (ops["total_ns"] >= MIN_SHARE * td["dur_ns"].sum())].copy()
        if not len(slow):
            continue
        slow["saving_ns"] = (slow["busy_ns"] - slow["bytes"] / best).clip(lower=0)
        slow = slow.sort_values("saving_ns", ascending=False)
        labels, vals = top(slow["saving_ns"])
        out.append(Finding(
            "memory_bound", MEMORY, int(dev),
            f"{len(slow)} memory-bound operator(s) (MTE2 busy over {int(MEMORY_BOUND * 100)}% of the task time) move "
            f"their data at under {int(LOW_BANDWIDTH * 100)}% of the {best:.0f} GB/s this device reaches",
            "Low data memory handling efficiency: raise the block dim (use every core), tile so each block reads "
            "contiguous data (format / alignment), avoid format conversions (TransData); AOE operator tuning.",
            int(slow["saving_ns"].sum()), list(slow.index.astype(str)), [], [],
            {"ops": {str(n): {"type": r.op_type, "mte2_ratio": round(float(r.value), 3), "total_us": us(r.total_ns),
                              "bandwidth_gbps": round(float(r.bw), 1)} for n, r in slow.iterrows()},
             "reference_bandwidth_gbps": round(best, 1),
             "estimate": "busy time - bytes (inputs + outputs) / the best bandwidth of a memory-bound op in the run"},
            Plot("time above the run's best bandwidth, per op", labels, vals)))
    return out

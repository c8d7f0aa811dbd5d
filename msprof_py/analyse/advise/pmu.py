"""PMU rules: low cube/vector utilisation, memory-bound ops.  They read msprof's metric_summary
ratio columns (PipeUtilization / PipeUtilizationExct: ``aic_mac_ratio``(``_extra``),
``aiv_vec_ratio``, ``aic_mte2_ratio`` / ``aiv_mte2_ratio`` on the 910B; ``mac_ratio``,
``vec_ratio``, ``mte2_ratio`` or their ``_exe_`` forms on older chips) from the session's ``pmu``
table (joined to the tasks on device, stream, task, context and start), or from the tasks table
itself if it carries them; without PMU data they are silent (the report says they were
skipped)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from msprof_py.analyse.advise.base import COMPUTATION, MEMORY, Finding, Plot, device_tasks, rule, top, us

CUBE_COLS = ("aic_mac_ratio", "aic_mac_ratio_extra", "aiv_mac_ratio", "mac_ratio", "mac_exe_ratio")
VEC_COLS = ("aiv_vec_ratio", "aic_vec_ratio", "vec_ratio", "vec_exe_ratio")
MTE2_COLS = ("aic_mte2_ratio", "aiv_mte2_ratio", "mte2_ratio", "mte2_exe_ratio")
KEY = ["device_id", "stream_id", "task_id", "context_id", "start_ns"]
LOW_UTIL = 0.5  # compute pipes busy under half the task time
MEMORY_BOUND = 0.8  # MTE2 (GM -> UB/L1) busy over 80% of the task time
MIN_SHARE = 0.01  # an op must take >= 1% of the device time


def pmu_columns(session: Any) -> list[str]:
    """The PMU ratio columns the session has (tasks table or ``pmu`` table)."""
    pmu = getattr(session, "pmu", None)
    cols = set(session.tasks.columns) | (set(pmu.columns) if pmu is not None and len(pmu) else set())
    return [c for c in CUBE_COLS + VEC_COLS + MTE2_COLS if c in cols]


def pmu_tasks(session: Any) -> pd.DataFrame:
    """Executed device tasks with the PMU ratio columns (NaN where a task has no PMU record)."""
    t = device_tasks(session)
    pmu = getattr(session, "pmu", None)
    if pmu is None or not len(pmu) or not set(KEY) <= set(pmu.columns):
        return t
    cols = [c for c in CUBE_COLS + VEC_COLS + MTE2_COLS if c in pmu.columns and c not in t.columns]
    p = pmu[KEY + cols].drop_duplicates(KEY)
    return t.merge(p, on=KEY, how="left").set_axis(t.index)


def _max_of(t: pd.DataFrame, cols: tuple[str, ...]) -> pd.Series:
    have = [c for c in cols if c in t.columns]
    if not have:
        return pd.Series(np.nan, index=t.index)
    return t[have].apply(pd.to_numeric, errors="coerce").max(axis=1)


def _per_op(t: pd.DataFrame, value: pd.Series) -> pd.DataFrame:
    g = t.assign(v=value).groupby("op_name", observed=True)
    return pd.DataFrame({"total_ns": g["dur_ns"].sum(), "value": g["v"].mean(), "n": g.size()})


@rule("low_utilisation")
def low_utilisation(session: Any) -> list[Finding]:
    """AI Core ops whose busiest compute pipe (cube or vector) is under 50% and that are not
    memory-bound.  Time at stake: total x (1 - utilisation) (what a kernel at full pipe use saves)."""
    if not pmu_columns(session):
        return []
    out = []
    for dev, td in pmu_tasks(session).groupby("device_id"):
        util = pd.concat([_max_of(td, CUBE_COLS), _max_of(td, VEC_COLS)], axis=1).max(axis=1)
        mte2 = _max_of(td, MTE2_COLS)
        ok = util.notna() & (util < LOW_UTIL) & ~(mte2 > MEMORY_BOUND)
        if not ok.any():
            continue
        ops = _per_op(td[ok], util[ok])
        ops = ops[ops["total_ns"] >= MIN_SHARE * td["dur_ns"].sum()]
        if not len(ops):
            continue
        ops["saving_ns"] = ops["total_ns"] * (1 - ops["value"])
        labels, vals = top(ops["saving_ns"])
        out.append(Finding(
            "low_utilisation", COMPUTATION, int(dev),
            f"{len(ops)} operator(s) use their cube/vector pipes under {int(LOW_UTIL * 100)}% of the time",
            "Improve tiling / block dim (AOE operator tuning), use the cube-friendly format (FRACTAL_NZ) and "
            "aligned shapes (multiples of 16).",
            int(ops["saving_ns"].sum()), list(ops.index.astype(str)), [], [],
            {"ops": {str(n): {"utilisation": round(float(r.value), 3), "total_us": us(r.total_ns)}
                     for n, r in ops.iterrows()}, "estimate": "total x (1 - utilisation)"},
            Plot("time not using the compute pipes, per op", labels, vals)))
    return out


@rule("memory_bound")
def memory_bound(session: Any) -> list[Finding]:
    """Ops whose MTE2 (global-memory reads) is busy over 80% of the task time (msprof's
    "Low data memory handling efficiency").  Time at stake: total x (mte2 - compute utilisation)."""
    if not pmu_columns(session):
        return []
    out = []
    for dev, td in pmu_tasks(session).groupby("device_id"):
        mte2 = _max_of(td, MTE2_COLS)
        util = pd.concat([_max_of(td, CUBE_COLS), _max_of(td, VEC_COLS)], axis=1).max(axis=1).fillna(0)
        ok = mte2 > MEMORY_BOUND
        if not ok.any():
            continue
        ops = _per_op(td[ok], (mte2 - util)[ok].clip(lower=0))
        ops = ops[ops["total_ns"] >= MIN_SHARE * td["dur_ns"].sum()]
        if not len(ops):
            continue
        ops["saving_ns"] = ops["total_ns"] * ops["value"]
        labels, vals = top(ops["saving_ns"])
        out.append(Finding(
            "memory_bound", MEMORY, int(dev),
            f"{len(ops)} operator(s) are memory-bound (MTE2 busy over {int(MEMORY_BOUND * 100)}% of the task time)",
            "Low data memory handling efficiency: fuse them with their producer/consumer, reuse data in "
            "UB/L1 (tiling), use lower precision, avoid format conversions (TransData).",
            int(ops["saving_ns"].sum()), list(ops.index.astype(str)), [], [],
            {"ops": {str(n): {"mte2_minus_compute": round(float(r.value), 3), "total_us": us(r.total_ns)}
                     for n, r in ops.iterrows()}, "estimate": "total x (mte2 ratio - compute ratio)"},
            Plot("memory-bound time, per op", labels, vals)))
    return out

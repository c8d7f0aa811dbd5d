"""Iterations from device step-trace records (msprof §3.5): per-model state machine, FP/BP,
all-reduce pairs, global iter ids, and the window rules used to assign tasks and to select.

State machine (msprof's IndexTracker, index_id counted from 1 per model):
  ModelEnd  --MODEL_START--> start iteration, ModelStart
  ModelStart --MODEL_END--> finish (index++), ModelEnd;  --ITER_END--> finish + start, IterEnd
  IterEnd   --ITER_END--> finish + start;  --MODEL_START--> restart, ModelStart
Tags that do not fit the state are ignored; the last, still-open iteration is discarded.
FP (2) / BP (3) / all-reduce (>= 10000, even start, odd end) records belong to the iteration
open when they arrive (a start clears what arrived before it).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from msprof_py.raw import ts_track as raw

STEP_COLS = ["device_id", "model_id", "index_id", "iter_id", "step_start_ns", "step_end_ns", "fp_start_ns",
             "bp_end_ns", "data_aug_bound_ns"]


def build_steps(device_id: int, rec: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Returns (steps, all_reduce) for one device; see schema.STEP_COLUMNS / ALL_REDUCE_COLUMNS."""
    rec = rec.sort_values(["model_id", "timestamp"], kind="stable")
    rows: list[tuple] = []
    reduces: list[tuple] = []
    for model_id, grp in rec.groupby("model_id", sort=True):  # per model; records are few (per iteration)
        state = "end"
        index = 1
        cur: dict = {}
        for ts, tag in zip(grp["timestamp"].to_numpy().tolist(), grp["tag_id"].to_numpy().tolist()):
            if tag == raw.TAG_MODEL_START and state in ("end", "iter_end"):
                cur = {"start": ts, "fp": -1, "bp": -1, "ar": []}
                state = "start"
            elif tag == raw.TAG_MODEL_END and state == "start":
                rows.append((model_id, index, cur["start"], ts, cur["fp"], cur["bp"]))
                reduces.extend((model_id, index, s, e) for s, e in _pairs(cur["ar"]))
                index += 1
                state = "end"
            elif tag == raw.TAG_ITER_END and state in ("start", "iter_end"):
                rows.append((model_id, index, cur["start"], ts, cur["fp"], cur["bp"]))
                reduces.extend((model_id, index, s, e) for s, e in _pairs(cur["ar"]))
                index += 1
                cur = {"start": ts, "fp": -1, "bp": -1, "ar": []}
                state = "iter_end"
            elif state in ("start", "iter_end") and cur:
                if tag == raw.TAG_FP and cur["fp"] < 0:
                    cur["fp"] = ts
                elif tag == raw.TAG_BP:
                    cur["bp"] = ts
                elif raw.TAG_ALL_REDUCE_BASE <= tag < raw.TAG_GET_NEXT_BASE:
                    cur["ar"].append((tag, ts))
    steps = pd.DataFrame(rows, columns=["model_id", "index_id", "step_start_ns", "step_end_ns", "fp_start_ns",
                                        "bp_end_ns"]).astype(np.int64)
    steps.insert(0, "device_id", np.int64(device_id))
    steps = steps.sort_values(["step_end_ns", "model_id"], kind="stable").reset_index(drop=True)
    steps.insert(3, "iter_id", np.arange(1, len(steps) + 1, dtype=np.int64))
    # data aug bound: FP - the nearest earlier step_end (any model) strictly before FP
    ends = steps["step_end_ns"].to_numpy()
    fp = steps["fp_start_ns"].to_numpy()
    pos = np.searchsorted(ends, fp, side="left") - 1
    steps["data_aug_bound_ns"] = np.where((fp >= 0) & (pos >= 0), fp - ends[np.maximum(pos, 0)], -1)
    steps = steps.sort_values(["model_id", "index_id"], kind="stable").reset_index(drop=True)
    ar = pd.DataFrame(reduces, columns=["model_id", "index_id", "start_ns", "end_ns"]).astype(np.int64)
    ar.insert(0, "device_id", np.int64(device_id))
    return steps[STEP_COLS], ar


def _pairs(tags: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """All-reduce (start, end) pairs: an even tag opens, the next tag+1 closes."""
    out = []
    open_: dict[int, int] = {}
    for tag, ts in tags:
        if tag % 2 == 0:
            open_[tag] = ts
        elif tag - 1 in open_:
            out.append((open_.pop(tag - 1), ts))
    return out


def window_starts(steps: pd.DataFrame) -> np.ndarray:
    """msprof's window start per row: max step_end (any model, same device) < this step_start, else 0."""
    out = np.zeros(len(steps), np.int64)
    for dev, grp in steps.groupby("device_id", sort=False):
        ends = np.sort(grp["step_end_ns"].to_numpy())
        pos = np.searchsorted(ends, grp["step_start_ns"].to_numpy(), side="left") - 1
        out[grp.index.to_numpy()] = np.where(pos >= 0, ends[np.maximum(pos, 0)], 0)
    return out


def assign(steps: pd.DataFrame, model_id: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index_id, iter_id) for times ``t`` of tasks of ``model_id`` on ONE device.

    A task belongs to the first iteration of its model ending at or after it, if it started
    after that iteration's window start; tasks of unknown models (4294967295) use all models'
    iterations for iter_id and keep index_id 0.  Unassigned -> (0, 0)."""
    n = len(t)
    index = np.zeros(n, np.int64)
    iters = np.zeros(n, np.int64)
    if n == 0 or steps.empty:
        return index, iters
    s = steps.reset_index(drop=True)
    ws = window_starts(s)
    for m, grp in s.groupby("model_id", sort=False):
        g = grp.sort_values("step_end_ns")
        sel = np.flatnonzero(model_id == m)
        if not len(sel):
            continue
        ends = g["step_end_ns"].to_numpy()
        pos = np.searchsorted(ends, t[sel], side="left")
        ok = pos < len(ends)
        pos_c = np.minimum(pos, len(ends) - 1)
        ok &= t[sel] > ws[g.index.to_numpy()][pos_c]
        index[sel[ok]] = g["index_id"].to_numpy()[pos_c[ok]]
        iters[sel[ok]] = g["iter_id"].to_numpy()[pos_c[ok]]
    rest = np.flatnonzero(iters == 0)
    if len(rest):
        g = s.sort_values("step_end_ns")
        ends = g["step_end_ns"].to_numpy()
        pos = np.searchsorted(ends, t[rest], side="left")
        ok = pos < len(ends)
        pos_c = np.minimum(pos, len(ends) - 1)
        ok &= t[rest] > ws[g.index.to_numpy()][pos_c]
        iters[rest[ok]] = g["iter_id"].to_numpy()[pos_c[ok]]
    return index, iters

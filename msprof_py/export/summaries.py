"""Summary tables (CSV, or JSON with ``--summary-format json``) with msprof's exact headers (§5.2).

Numbers are computed the documented way and formatted once per column:

* op_summary ``Task Wait Time(us)`` (§3.6): rows sorted by start; row i > 0 waits
  ``max(0, start_i - start_{i-1} - dur_{i-1})``, the first row 0.  For captures msprof exports
  with its C++ analysis, as that prints it (:mod:`msprof_py.export.wait_time`: starts as doubles,
  6 decimals, a device continuing from the previous one); otherwise exact in integer ns, printed
  like every other duration (3 decimals).
* op_statistic ``Ratio(%)`` (§3.7): group total / device total x 100; rows sorted by Total Time
  descending; printed like msprof's ``DoubleToStr`` (3 decimals, trailing zeros stripped).
* step_trace (§3.8): one row per iteration; timestamps carry msprof's trailing ``\\t``; values
  that do not exist (no FP/BP tag, first iteration's Data Aug Bound, missing reduce pairs) are
  ``N/A``.  The C++ all-reduce sign bug (first pair computed ``start - end``) is not copied.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from msprof_py.export import pmu_export
from msprof_py.export.api_stats import api_stats_frame, host_freq_hz, py_str
from msprof_py.export.base import ExportContext, Naming, register
from msprof_py.export.session_access import NA_ID, device_ids, of_device
from msprof_py.export.summary_format import _stats, dbl, i64, quoted, stem, text  # noqa: F401  (re-exported)
from msprof_py.export.table_writer import Col, write_table
from msprof_py.export.views import (api_names, as_cat, ascend_task_types, cat_isin, cat_where, cpp_export, info_names,
                                    info_types, is_level0, legacy_layout, na_cat, op_info, shown_task_types,
                                    shown_tasks, span_durations, summary_rows, summary_tasks, task_time_tasks,
                                    task_types)
from msprof_py.export.wait_time import cpp_wait_col
from msprof_py.parse.session import Session

OP_SUMMARY_HEADER = [
    "Device_id", "Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "OP State", "Task Type",
    "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Block Num", "Mix Block Num",
    "HF32 Eligible", "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
    "Output Data Types", "Output Formats", "Context ID"]
OP_STATISTIC_HEADER = ["Device_id", "OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)",
                       "Avg Time(us)", "Max Time(us)", "Ratio(%)"]
STEP_TRACE_HEADER = ["Device_id", "Iteration ID", "FP Start(us)", "BP End(us)", "Iteration End(us)",
                     "Iteration Time(us)", "FP to BP Time(us)", "Iteration Refresh(us)", "Data Aug Bound(us)",
                     "Model ID"]
API_STATISTIC_HEADER = ["Device_id", "Level", "API Name", "Time(us)", "Count", "Avg(us)", "Min(us)", "Max(us)",
                        "Variance"]
TASK_TIME_HEADER = ["Device_id", "kernel_name", "kernel_type", "stream_id", "task_id", "task_time(us)",
                    "task_start(us)", "task_stop(us)"]
COMM_STATISTIC_HEADER = ["Device_id", "OP Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)",
                         "Max Time(us)", "Ratio(%)"]
FUSION_OP_HEADER = ["Device_id", "Model Name", "Model ID", "Fusion Op", "Original Ops", "Memory Input(KB)",
                    "Memory Output(KB)", "Memory Weight(KB)", "Memory Workspace(KB)", "Memory Total(KB)"]

# the task columns op_summary reads (its rows copy only these)
OP_SUMMARY_TASK_COLUMNS = [
    "model_id", "task_id", "stream_id", "context_id", "start_ns", "dur_ns", "op_name", "op_type", "task_type",
    "host_task_type", "device_task_type", "kernel_name", "op_state", "block_num", "mix_block_num", "hf32_eligible",
    "input_shapes", "input_data_types", "input_formats", "output_shapes", "output_data_types", "output_formats"]

# what op_summary's rows are ordered and matched to their PMU rows by
_OP_SUMMARY_KEYS = list(dict.fromkeys(pmu_export.JOIN + ["dur_ns"]))
# its task columns that are not integers (read as one copy of the rows)
_OP_SUMMARY_INT_COLUMNS = {"model_id", "task_id", "stream_id", "context_id", "start_ns", "dur_ns", "block_num",
                           "mix_block_num"}
_OP_SUMMARY_TEXT_COLUMNS = [c for c in OP_SUMMARY_TASK_COLUMNS if c not in _OP_SUMMARY_INT_COLUMNS]

# the task columns task_time reads
TASK_TIME_TASK_COLUMNS = [
    "match", "op_type", "op_name", "kernel_name", "task_type", "host_task_type", "device_task_type", "stream_id",
    "task_id", "start_ns", "dur_ns", "span_ns", "cut_start_ns"]

HOST_DEVICE_ID = 64  # msprof's host "device"


# -- op_summary -----------------------------------------------------------------------------
class OpSummary:
    name = "op_summary"
    kind = "summary"
    per_device = True
    describe = "AI Core / AI CPU / communication op details per task"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        dev = naming.device_id or 0
        # the rows' times and join keys first: the device counters (PMU) columns are made from these
        # alone, before the rows' other columns are copied (their temporaries beside the whole
        # table's columns were the peak of a PMU collection's export)
        t = summary_tasks(session, dev, _OP_SUMMARY_KEYS)
        comm = of_device(session.communication, dev)
        n_t, n_c = len(t), len(comm)
        if n_t + n_c == 0:
            return self._without_op_info(session, dev, out_dir, naming)
        start = np.concatenate([i64(t["start_ns"]), i64(comm["start_ns"])])
        dur = np.concatenate([i64(t["dur_ns"]), i64(comm["dur_ns"])])
        order = np.argsort(start, kind="stable")
        start, dur = start[order], dur[order]
        # device counters (PMU) extend the row: msprof_py.export.pmu_export
        pmu_header, pmu_cols = pmu_export.op_summary_columns(session, dev, t, n_c, order, dur)
        del t
        # the rows' text columns (categoricals: small codes) as one copy; the integer columns are
        # taken one at a time (held for every row all together, they were ~30 MB of the peak)
        t = summary_tasks(session, dev, _OP_SUMMARY_TEXT_COLUMNS)  # (the same rows, in the same order)
        rows = summary_rows(session, dev)

        def ints(name: str) -> np.ndarray:
            return i64(session.tasks[name].take(rows))
        wait = np.zeros(len(start), np.int64)
        wait[1:] = np.maximum(0, start[1:] - start[:-1] - dur[:-1])
        is_comm = (np.arange(n_t + n_c) >= n_t)[order]

        def col(task_vals: Any, comm_vals: Any) -> pd.Categorical:
            # categoricals all the way: one code per row, each distinct string formatted once
            both = union_categoricals([as_cat(task_vals), as_cat(comm_vals)], ignore_order=True)
            return both[order]

        na_c = np.full(n_c, "N/A", dtype=object)
        ctx_id = ints("context_id")
        op_type, task_type = info_types(t, is_level0(session))
        cols = [
            Col.ints(np.full(len(start), dev, np.int32)),
            Col.ints(_narrow(np.concatenate([ints("model_id"), i64(comm["model_id"])])[order])),
            Col.ints(_narrow(np.concatenate([ints("task_id"), np.zeros(n_c, np.int64)])[order]), na_mask=is_comm),
            Col.ints(_narrow(np.concatenate([ints("stream_id"), np.zeros(n_c, np.int64)])[order]), na_mask=is_comm),
            Col.text(col(info_names(t), text(comm["op_name"]))),
            Col.text(col(op_type, text(comm["op_type"]))),
            Col.text(col(text(t["op_state"]), na_c)),
            Col.text(col(task_type, np.full(n_c, "COMMUNICATION", dtype=object))),
            Col.us(start, stamp=True),
            Col.us(dur),
            cpp_wait_col(session, dev, start, dur) if cpp_export(session) else Col.us(wait),
            Col.ints(_narrow(np.concatenate([ints("block_num"), np.zeros(n_c, np.int64)])[order])),
            Col.ints(_narrow(np.concatenate([ints("mix_block_num"), np.zeros(n_c, np.int64)])[order]),
                     na_mask=is_comm),
            Col.text(col(text(t["hf32_eligible"]), na_c)),
            Col.text(col(quoted(t["input_shapes"]), na_c)),
            Col.text(col(text(t["input_data_types"]), na_c)),
            Col.text(col(text(t["input_formats"]), na_c)),
            Col.text(col(quoted(t["output_shapes"]), na_c)),
            Col.text(col(text(t["output_data_types"]), na_c)),
            Col.text(col(text(t["output_formats"]), na_c)),
            Col.ints(_narrow(np.concatenate([ctx_id, np.zeros(n_c, np.int64)])[order]),
                     na_mask=np.concatenate([ctx_id == NA_ID, np.ones(n_c, bool)])[order]),
        ]
        del op_type, task_type, ctx_id, wait
        del t, rows, comm, order  # the rows' copies: only the columns are needed while the file is written
        return [write_table(stem(out_dir, naming, self.name), OP_SUMMARY_HEADER + pmu_header, cols + pmu_cols,
                            naming.summary_format)]

    def _without_op_info(self, session: Session, dev: int, out_dir: Path, naming: Naming) -> list[Path]:
        """A device none of whose tasks has op (GE) info.  Today's msprof writes no op_summary;
        the msprof of a ``legacy_layout`` capture ("Try to export op summary without ge data")
        listed every device task, WRITE_BACK / INVALID apart, without the GE columns (Block Dim,
        Mix Block Dim, HF32 Eligible, tensor columns): Model ID -1, N/A op name, type and state,
        the device task type (seen on the 310B capture of April 2024 without node_basic_info)."""
        if cpp_export(session) or not legacy_layout(session):
            return []
        t = shown_tasks(session, dev)
        if len(t) == 0 or op_info(t).any():
            return []
        t = t[~cat_isin(as_cat(t["device_task_type"]), ["WRITE_BACK", "INVALID"])]
        t = t.sort_values("start_ns", kind="stable")
        n = len(t)
        if n == 0:
            return []
        start, dur = i64(t["start_ns"]), i64(t["dur_ns"])
        wait = np.zeros(n, np.int64)
        wait[1:] = np.maximum(0, start[1:] - start[:-1] - dur[:-1])
        na = np.full(n, "N/A", dtype=object)
        header = [h for h in OP_SUMMARY_HEADER if h not in NO_GE_DROPPED]
        cols = [Col.ints(np.full(n, dev)), Col.ints(np.full(n, -1)), Col.ints(i64(t["task_id"])),
                Col.ints(i64(t["stream_id"])), Col.text(na), Col.text(na), Col.text(na),
                Col.text(as_cat(t["device_task_type"])), Col.us(start, stamp=True), Col.us(dur), Col.us(wait),
                Col.text(na)]
        return [write_table(stem(out_dir, naming, self.name), header, cols, naming.summary_format)]


def _narrow(v: np.ndarray) -> np.ndarray:
    """int64 values as int32 when they fit (op_summary holds its columns for every row while it
    is written)."""
    if len(v) and int(v.min()) >= -2**31 and int(v.max()) < 2**31:
        return v.astype(np.int32)
    return v


# op_summary columns the msprof of a legacy capture left out without GE data
NO_GE_DROPPED = frozenset({"Block Num", "Mix Block Num", "HF32 Eligible", "Input Shapes", "Input Data Types",
                           "Input Formats", "Output Shapes", "Output Data Types", "Output Formats"})


# -- op_statistic ---------------------------------------------------------------------------
class OpStatistic:
    name = "op_statistic"
    kind = "summary"
    per_device = True
    describe = "count and time per (OP Type, Core Type)"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        dev = naming.device_id or 0
        t = summary_tasks(session, dev, ["op_type", "task_type", "device_task_type", "dur_ns"])
        if len(t) == 0:
            return []
        op_type = as_cat(t["op_type"])
        df = pd.DataFrame({"op_type": op_type, "core": task_types(t), "dur_ns": i64(t["dur_ns"])})
        df = df[~cat_isin(op_type, ["N/A"])]
        if len(df) == 0:
            return []
        st = _stats(df, ["op_type", "core"])
        st["op_type"] = st["op_type"].astype(str)
        st["core"] = st["core"].astype(str)
        grand = st["total"].sum()
        st["ratio"] = st["total"] / grand * 100 if grand else 0.0
        st = st.sort_values(["total", "op_type", "core"], ascending=[False, True, True], kind="stable")
        cols = [Col.ints(np.full(len(st), dev)), Col.text(st["op_type"].to_numpy()), Col.text(st["core"].to_numpy()),
                Col.ints(st["count"]), Col.text(dbl(st["total"] / 1000), number=True),
                Col.text(dbl(st["min"] / 1000), number=True),
                Col.text(dbl(st["total"] / st["count"] / 1000), number=True),
                Col.text(dbl(st["max"] / 1000), number=True), Col.text(dbl(st["ratio"]), number=True)]
        return [write_table(stem(out_dir, naming, self.name), OP_STATISTIC_HEADER, cols, naming.summary_format)]


# -- step_trace -----------------------------------------------------------------------------
class StepTraceSummary:
    name = "step_trace"
    kind = "summary"
    per_device = True
    describe = "iteration trace: FP/BP, iteration time, refresh, data augmentation bound, reduces"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        dev = naming.device_id or 0
        st = of_device(session.steps, dev)
        if len(st) == 0:
            return []
        st = st.sort_values(["model_id", "index_id"], kind="stable")
        start, end = i64(st["step_start_ns"]), i64(st["step_end_ns"])
        fp, bp, aug = i64(st["fp_start_ns"]), i64(st["bp_end_ns"]), i64(st["data_aug_bound_ns"])
        no_fp, no_bp = fp <= 0, bp <= 0
        n = len(st)
        header = list(STEP_TRACE_HEADER)
        cols = [Col.ints(np.full(n, dev)), Col.ints(st["index_id"]),
                Col.us(fp, stamp=True, na_mask=no_fp), Col.us(bp, stamp=True, na_mask=no_bp),
                Col.us(end, stamp=True), Col.us(end - start),
                Col.us(bp - fp, na_mask=no_fp | no_bp), Col.us(end - bp, na_mask=no_bp),
                Col.us(aug, na_mask=aug < 0), Col.ints(st["model_id"])]
        ar = of_device(session.all_reduce, dev)
        if len(ar):
            ar = ar.sort_values(["model_id", "index_id", "start_ns"], kind="stable").copy()
            ar["k"] = ar.groupby(["model_id", "index_id"], observed=True).cumcount()
            key = pd.MultiIndex.from_arrays([i64(st["model_id"]), i64(st["index_id"])])
            for k in range(int(ar["k"].max()) + 1):
                sub = ar[ar["k"] == k]
                # integer positions, never a float reindex: ns timestamps must stay exact
                pos = key.get_indexer(pd.MultiIndex.from_arrays([i64(sub["model_id"]), i64(sub["index_id"])]))
                ok = pos >= 0
                s_ns = np.zeros(n, np.int64)
                e_ns = np.zeros(n, np.int64)
                miss = np.ones(n, bool)
                s_ns[pos[ok]] = i64(sub["start_ns"])[ok]
                e_ns[pos[ok]] = i64(sub["end_ns"])[ok]
                miss[pos[ok]] = False
                header += ["Reduce Start(us)", "Reduce Duration(us)"]
                cols += [Col.us(s_ns, stamp=True, na_mask=miss), Col.us(e_ns - s_ns, na_mask=miss)]
        return [write_table(stem(out_dir, naming, self.name), header, cols, naming.summary_format)]


# -- api_statistic (host) -------------------------------------------------------------------
class ApiStatistic:
    name = "api_statistic"
    kind = "summary"
    per_device = False
    describe = "host API calls per level and name: total, count, avg, min, max, variance"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        api = session.api
        if len(api) == 0:
            return []
        python_path = not cpp_export(session)
        if not python_path:  # the C++ analysis drops calls that began before profiling
            early = api["before_profiling"].eq(True).to_numpy()
            if early.any():  # (no copy of the whole table when none did)
                api = api[["level", "name", "item_id", "start_ns", "end_ns", "dur_ticks"]][~early]
            if len(api) == 0:
                return []
        lvl, name = as_cat(api["level"]), api_names(api)  # grouped per category, not per row
        ticks = pd.to_numeric(api["dur_ticks"], errors="coerce")
        st = api_stats_frame(lvl, name, i64(api["end_ns"]) - i64(api["start_ns"]), python_path,
                             None if ticks.isna().any() else ticks.to_numpy(np.int64),
                             host_freq_hz(session.devices))
        n = len(st)
        # Device_id: msprof's C++ analysis writes "host"; its Python path the device's id, and
        # Python's str of each float (api_stats)
        devs = [d for d in device_ids(session) if d != HOST_DEVICE_ID]
        num = py_str if python_path else dbl
        cols = [Col.const(str(devs[0]) if python_path and devs else "host", n), Col.text(st["level"].to_numpy()),
                Col.text(st["name"].to_numpy()), Col.text(num(st["total"]), number=True), Col.ints(st["count"]),
                Col.text(num(st["avg"]), number=True), Col.text(num(st["min"]), number=True),
                Col.text(num(st["max"]), number=True), Col.text(num(st["var"]), number=True)]
        return [write_table(stem(out_dir, naming, self.name, device=False), API_STATISTIC_HEADER, cols,
                            naming.summary_format)]


# -- task_time ------------------------------------------------------------------------------
class TaskTime:
    name = "task_time"
    kind = "summary"
    per_device = True
    describe = "Task Scheduler: every device task with its kernel, stream, start and stop"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        dev = naming.device_id or 0
        t = task_time_tasks(session, dev, TASK_TIME_TASK_COLUMNS)
        if len(t) == 0:
            return []
        # kernel_name: the host task's kernel name ("N/A" for non-kernel tasks); a device-only task:
        # its TaskInfo op name, else N/A (msprof's TaskTimeAssembler)
        no_host = cat_isin(as_cat(t["match"]), ["device_only"])
        kern = cat_where(no_host, cat_where(cat_isin(as_cat(t["op_type"]), ["N/A"]), na_cat(len(t)), info_names(t)),
                         as_cat(t["kernel_name"]))
        kind = shown_task_types(t, is_level0(session))
        if not cpp_export(session):  # msprof's Python path: the op name (else N/A), the runtime task type
            kern = cat_where(cat_isin(as_cat(t["op_type"]), ["N/A"]), na_cat(len(t)), as_cat(t["op_name"]))
            kind = ascend_task_types(t)
        start, span = i64(t["start_ns"]), span_durations(t)
        # the C++ analysis shows the start and its end (start + op_summary's duration); the Python
        # path its own start (the float start truncated, parse.py_clock) + task_time's duration
        if cpp_export(session):
            stop = start + i64(t["dur_ns"])
        else:
            start = i64(t["cut_start_ns"])
            stop = start + span
        cols = [Col.ints(np.full(len(t), dev)), Col.text(kern),
                Col.text(kind), Col.ints(t["stream_id"]), Col.ints(t["task_id"]),
                Col.us(span), Col.us(start, stamp=True), Col.us(stop, stamp=True)]
        return [write_table(stem(out_dir, naming, self.name), TASK_TIME_HEADER, cols, naming.summary_format)]


# -- communication_statistic ----------------------------------------------------------------
class CommunicationStatistic:
    name = "communication_statistic"
    kind = "summary"
    per_device = True
    describe = "HCCL ops per OP Type: count, time, ratio"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        dev = naming.device_id or 0
        c = of_device(session.communication, dev)
        if len(c) == 0:
            return []
        df = pd.DataFrame({"op_type": text(c["op_type"]).astype(str).to_numpy(), "dur_ns": i64(c["dur_ns"])})
        st = _stats(df, ["op_type"])
        grand = st["total"].sum()
        st["ratio"] = st["total"] / grand * 100 if grand else 0.0
        st = st.sort_values(["total", "op_type"], ascending=[False, True], kind="stable")
        cols = [Col.ints(np.full(len(st), dev)), Col.text(st["op_type"].to_numpy()), Col.ints(st["count"]),
                Col.text(dbl(st["total"] / 1000), number=True), Col.text(dbl(st["min"] / 1000), number=True),
                Col.text(dbl(st["total"] / st["count"] / 1000), number=True),
                Col.text(dbl(st["max"] / 1000), number=True), Col.text(dbl(st["ratio"]), number=True)]
        return [write_table(stem(out_dir, naming, self.name), COMM_STATISTIC_HEADER, cols, naming.summary_format)]


# -- fusion_op (host) -----------------------------------------------------------------------
class FusionOp:
    name = "fusion_op"
    kind = "summary"
    per_device = False
    describe = "fused ops of each model with their original ops and memory"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        f = session.fusion_ops
        if len(f) == 0:
            return []
        n = len(f)
        mem = [Col.text(dbl(pd.to_numeric(f[c], errors="coerce").fillna(0)), number=True)
               for c in ("memory_input_kb", "memory_output_kb", "memory_weight_kb", "memory_workspace_kb",
                         "memory_total_kb")]
        cols = [Col.const("host", n), Col.text(text(f["model_name"])), Col.ints(f["model_id"]),
                Col.text(text(f["fusion_op"])), Col.text(text(f["original_ops"]))] + mem
        return [write_table(stem(out_dir, naming, self.name, device=False), FUSION_OP_HEADER, cols,
                            naming.summary_format)]



for _cls in (OpSummary, OpStatistic, StepTraceSummary, ApiStatistic, TaskTime, CommunicationStatistic, FusionOp):
    register(_cls())
# the legacy files of seed 003 come after these (registration order = README and job order)
from msprof_py.export.legacy_summaries import AiStackTime, GeOpExecute, RuntimeApi  # noqa: E402

for _cls in (RuntimeApi, AiStackTime, GeOpExecute):
    register(_cls())

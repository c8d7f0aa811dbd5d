"""The per-component timeline files of seed 003's table, each a slice of ``msprof_*.json``:

==================== ==================================================================
file                 content
==================== ==================================================================
ai_stack_time_*.json per iteration, the time of each component: one thread per component
                     (AscendCL, GE, Runtime, Task Scheduler), one slice per iteration window
                     with the component's call count and total time in its args (the whole
                     collection is one window when there are no iterations)
thread_group_*.json  AscendCL, GE and Runtime calls per host thread (the CANN layer);
                     only when the model has dynamic-shape ops, as the seed says
task_time_*.json     Task Scheduler: the Ascend Hardware layer (one thread per stream)
runtime_api_*.json   Runtime API calls
ge_*.json            GE (Model and Node level) calls
ge_op_execute_*.json Node launches of dynamic-shape ops (only when there are some)
step_trace_*.json    the Step Trace threads
hccl_*.json          the Communication layer
==================== ==================================================================

With ``--summary-format json`` a summary of the same name (task_time, step_trace, runtime_api,
ai_stack_time, ge_op_execute) would overwrite these files; the summary wins and the timeline
variant is skipped with a warning.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from msprof_py.export.base import ExportContext, Naming, register
from msprof_py.export.session_access import NA_ID, api_of_device, of_device
from msprof_py.export.legacy_summaries import COMPONENTS, dynamic_launches, has_dynamic_launches
from msprof_py.export.timeline_layers import (CANN_COLUMNS, cann_layer, communication_layer, hardware_layer, i64,
                                              step_trace_slices)
from msprof_py.export.timeline_model import Timeline, content_key
from msprof_py.export.timeline_write import write_timeline
from msprof_py.export.trace_events import Arg, Slices, const, format_pid
from msprof_py.export.views import is_in, npu_label, shown_rows
from msprof_py.parse.session import Session

AI_STACK_SORT = 1  # a CPU-side sort index msprof's layout leaves unused
SUMMARY_TWINS = {"task_time", "step_trace", "runtime_api", "ai_stack_time", "ge_op_execute"}


def _host_pid(session: Session, api: pd.DataFrame) -> int:
    if len(api):
        return int(i64(api["pid"])[0])
    from msprof_py.export.session_access import device_info
    info = device_info(session, 0)
    return int(info.get("pid") or 0)


def _api_levels(session: Session, device_id: int, levels: tuple[str, ...]) -> pd.DataFrame:
    """The rows of ``levels`` of :func:`api_of_device`, only the columns :func:`cann_layer` reads."""
    api = api_of_device(session, device_id)
    if len(api) == 0:
        return api
    return api[[c for c in CANN_COLUMNS if c in api.columns]][is_in(api["level"], levels)]


def _rename_cann(tl: Timeline, start: int, name: str) -> None:
    for e in tl.meta.events[start:]:
        if e["name"] == "process_name" and e["args"]["name"] == "CANN":
            e["args"]["name"] = name


def _share_by_content(tl: Timeline) -> None:
    """ge and ge_op_execute show the same rows when every GE call is a dynamic-shape launch
    (single-op runs): the layer is keyed by its content, so the second file copies the bytes
    (and the check's findings) of the first instead of rendering and checking them again."""
    if len(tl.slices) == 1 and isinstance(tl.slices[0], Slices):
        tl.slices[0].cache_key = content_key(tl.slices[0], "cann rows")


class ComponentTimeline:
    kind = "timeline"
    per_device = True

    def __init__(self, name: str, describe: str) -> None:
        self.name = name
        self.describe = describe

    def build(self, session: Session, dev: int, ctx: ExportContext) -> Timeline:
        tl = Timeline()
        n = self.name
        if n == "task_time":  # msprof_{dev}.json's layer: its bytes are copied when that file was written
            hardware_layer(session, dev, tl, replay=ctx)
        elif n == "runtime_api":
            cann_layer(session, dev, tl, _api_levels(session, dev, ("runtime",)))
            _rename_cann(tl, 0, "Runtime")
        elif n == "ge":
            cann_layer(session, dev, tl, _api_levels(session, dev, ("model", "node")))
            _rename_cann(tl, 0, "GE")
            _share_by_content(tl)
        elif n == "thread_group":
            if has_dynamic_launches(session, dev):
                cann_layer(session, dev, tl, replay=ctx)  # msprof_*.json's layer: its bytes are copied
        elif n == "ge_op_execute":
            launches = dynamic_launches(session, dev, ops=False)  # (its op columns are not shown)
            if len(launches):
                cann_layer(session, dev, tl, launches)
                _rename_cann(tl, 0, "GE Op Execute")
                _share_by_content(tl)
        elif n == "step_trace":
            tl.slices += step_trace_slices(session, dev, tl.meta)
        elif n == "hccl":
            communication_layer(session, dev, tl)
        elif n == "ai_stack_time":
            self._ai_stack(session, dev, tl)
        return tl

    def _ai_stack(self, session: Session, dev: int, tl: Timeline) -> None:
        """One slice per component and iteration window holding calls of it: the window's span,
        the calls' count and total time.  Per component from its starts and ends (no table of
        every call): windows in the order of their start, windows starting together in the
        order of their first call."""
        parts: list[tuple[int, np.ndarray, np.ndarray]] = []  # (component index = tid, starts, ends)
        api = api_of_device(session, dev)
        if len(api):
            start, end = i64(api["start_ns"]), i64(api["end_ns"])
            for code, (_, levels) in enumerate(COMPONENTS):
                m = is_in(api["level"], levels)  # per category, not a Categorical rebuilt per call
                if m.any():
                    k = np.flatnonzero(m)  # (positions, then takes: the levels interleave)
                    parts.append((code, start[k], end[k]))
        rows = shown_rows(session, dev)  # the shown tasks' two columns, not a copy of their table
        if len(rows):
            s = i64(session.tasks["start_ns"])[rows]
            parts.append((len(COMPONENTS), s, s + i64(session.tasks["dur_ns"])[rows]))
        if not parts:
            return
        first_start = min(int(s.min()) for _, s, _ in parts)
        steps = of_device(session.steps, dev)
        pid = format_pid(_host_pid(session, api), AI_STACK_SORT, dev)
        if len(steps):
            st = steps.sort_values("step_end_ns", kind="stable")
            w_end = i64(st["step_end_ns"])
            w_start = np.concatenate([[min(int(i64(st["step_start_ns"])[0]), first_start - 1)], w_end[:-1]])
            w_iter, w_model = i64(st["index_id"]), i64(st["model_id"])
        else:  # the whole collection is one window
            w_end = np.array([max(int(e.max()) for _, _, e in parts)], np.int64)
            w_start = np.array([first_start], np.int64)
            w_iter, w_model = np.zeros(1, np.int64), np.full(1, NA_ID, np.int64)
        tl.meta.process(pid, "AI Stack Time", npu_label(session, dev), AI_STACK_SORT)
        for tid, (comp, _) in enumerate(COMPONENTS + [("Task Scheduler", ())]):
            tl.meta.thread(pid, tid, comp, tid)
            mine = [(s, e) for c, s, e in parts if c == tid]
            if not mine:
                continue
            s, e = mine[0]
            # a call belongs to the window (previous end, end] holding its start
            w = np.searchsorted(w_end, s, side="left") if len(steps) else np.zeros(len(s), np.int64)
            d = e - s
            inside = w < len(w_end)
            if not inside.all():
                w, d = w[inside], d[inside]
            if len(w) == 0:
                continue
            if (w[1:] >= w[:-1]).all():  # calls in window order already (they start in order)
                order, ws = None, w
            else:
                order = np.argsort(w, kind="stable")
                ws, d = w[order], d[order]
            at = np.flatnonzero(np.append(True, ws[1:] != ws[:-1]))  # each window's first call
            wins = ws[at]
            total = np.add.reduceat(d, at)
            count = np.diff(np.append(at, len(w)))
            first = at if order is None else order[at]
            k = np.lexsort((first, w_start[wins]))  # by window start, then by first call
            wins, total, count = wins[k], total[k], count[k]
            n = len(wins)
            tl.slices.append(Slices(
                name=comp, pid=const(n, pid), tid=const(n, tid),
                start_ns=w_start[wins], dur_ns=w_end[wins] - w_start[wins], label=f"ai stack {comp}",
                args=[Arg("Model ID", "int", w_model[wins]), Arg("Iteration ID", "int", w_iter[wins]),
                      Arg("Count", "int", count.astype(np.int64)), Arg("Time(us)", "us", total.astype(np.int64))]))

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        if naming.summary_format == "json" and self.name in SUMMARY_TWINS:
            ctx.warnings.warn(f"{naming.file(self.name, 'json')}: with --summary-format json the summary of "
                              f"this name is written instead of the {self.name} timeline")
            return []
        tl = self.build(session, naming.device_id or 0, ctx)
        if not tl:
            return []
        return [write_timeline(tl, out_dir / naming.file(self.name, "json"), ctx, self.name)]


for _name, _desc in [
    ("ai_stack_time", "time of each component (AscendCL, GE, Runtime, Task Scheduler) on a timeline"),
    ("thread_group", "AscendCL, GE and Runtime calls per thread (dynamic-shape models)"),
    ("task_time", "Task Scheduler: device tasks per stream"),
    ("runtime_api", "Runtime API calls"),
    ("ge", "GE calls (Model and Node level)"),
    ("ge_op_execute", "launches of dynamic-shape ops"),
    ("step_trace", "iteration trace: iterations, FP/BP, refresh, reduces"),
    ("hccl", "HCCL communication ops and their tasks"),
]:
    register(ComponentTimeline(_name, _desc))

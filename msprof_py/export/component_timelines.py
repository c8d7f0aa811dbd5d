"""The per-component timeline files of seed 003's table, each a slice of ``msprof_*.json``:

==================== ==================================================================
file                 content
==================== ==================================================================
ai_stack_time_*.json AscendCL, GE, Runtime API calls and Task Scheduler tasks, one
                     process per component (CANN pid scheme, sort 7 / Ascend Hardware 14)
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
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.export.base import ExportContext, Naming, register
from msprof_py.export.session_access import api_of_device
from msprof_py.export.summaries import dynamic_launches
from msprof_py.export.timeline import (Timeline, cann_layer, communication_layer, hardware_layer,
                                       step_trace_slices, write_timeline)
from msprof_py.export.trace_events import SORT_CANN
from msprof_py.export.views import shown_tasks

SUMMARY_TWINS = {"task_time", "step_trace", "runtime_api", "ai_stack_time", "ge_op_execute"}


def _api_levels(session: Any, device_id: int, levels: tuple[str, ...]) -> pd.DataFrame:
    api = api_of_device(session, device_id)
    if len(api) == 0:
        return api
    return api[np.isin(api["level"].astype(object).astype(str).to_numpy(), levels)]


def _rename_cann(tl: Timeline, start: int, name: str) -> None:
    for e in tl.meta.events[start:]:
        if e["name"] == "process_name" and e["args"]["name"] == "CANN":
            e["args"]["name"] = name


class ComponentTimeline:
    kind = "timeline"
    per_device = True

    def __init__(self, name: str, describe: str) -> None:
        self.name = name
        self.describe = describe

    def build(self, session: Any, dev: int, ctx: ExportContext) -> Timeline:
        tl = Timeline()
        n = self.name
        if n == "task_time":
            hardware_layer(session, dev, tl)
        elif n == "runtime_api":
            cann_layer(session, dev, tl, _api_levels(session, dev, ("runtime",)))
            _rename_cann(tl, 0, "Runtime")
        elif n == "ge":
            cann_layer(session, dev, tl, _api_levels(session, dev, ("model", "node")))
            _rename_cann(tl, 0, "GE")
        elif n == "thread_group":
            if len(dynamic_launches(session, dev)):
                cann_layer(session, dev, tl, _api_levels(session, dev, ("acl", "model", "node", "runtime")))
        elif n == "ge_op_execute":
            launches = dynamic_launches(session, dev)
            if len(launches):
                cann_layer(session, dev, tl, launches)
                _rename_cann(tl, 0, "GE Op Execute")
        elif n == "step_trace":
            tl.slices += step_trace_slices(session, dev, tl.meta)
        elif n == "hccl":
            communication_layer(session, dev, tl)
        elif n == "ai_stack_time":
            self._ai_stack(session, dev, tl)
        return tl

    def _ai_stack(self, session: Any, dev: int, tl: Timeline) -> None:
        # one process per component: the CANN pid with sort index 1/2/3 instead of 7
        for k, (comp, levels) in enumerate([("AscendCL", ("acl",)), ("GE", ("model", "node")),
                                            ("Runtime", ("runtime",))], start=1):
            api = _api_levels(session, dev, levels)
            if len(api) == 0:
                continue
            mark, before = len(tl.meta.events), len(tl.slices)
            cann_layer(session, dev, tl, api)
            _rename_cann(tl, mark, comp)
            shift = (k - SORT_CANN) << 5
            for s in tl.slices[before:]:
                s.pid = s.pid + shift
            for e in tl.meta.events[mark:]:
                e["pid"] += shift
                if e["name"] == "process_sort_index":
                    e["args"]["sort_index"] = k
        if len(shown_tasks(session, dev)):
            mark = len(tl.meta.events)
            hardware_layer(session, dev, tl)
            for e in tl.meta.events[mark:]:
                if e["name"] == "process_name":
                    e["args"]["name"] = "Task Scheduler"

    def write(self, session: Any, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
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

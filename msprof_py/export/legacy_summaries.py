"""The legacy per-component summaries of seed 003 (msprof of that era; column sets documented in
docs/exporters.md): ``runtime_api_*``, ``ai_stack_time_*`` and ``ge_op_execute_*``.  Registered by
:mod:`summaries` after its own tables (the README's order)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from msprof_py.export.base import ExportContext, Naming
from msprof_py.export.session_access import api_of_device, of_device
from msprof_py.export.summary_format import _stats, dbl, i64, stem, text
from msprof_py.export.table_writer import Col, write_table
from msprof_py.export.views import as_cat, cat_isin, is_in, shown_rows
from msprof_py.parse.session import Session

RUNTIME_API_HEADER = ["Device_id", "Name", "Time(%)", "Time(us)", "Calls", "Avg(us)", "Min(us)", "Max(us)",
                      "Process ID", "Thread ID"]
AI_STACK_HEADER = ["Device_id", "Component", "Time(%)", "Time(us)", "Count", "Avg(us)", "Min(us)", "Max(us)"]
GE_OP_EXECUTE_HEADER = ["Device_id", "Thread ID", "Op Name", "OP Type", "Event Type", "Start Time(us)",
                        "Duration(us)"]


class RuntimeApi:
    name = "runtime_api"
    kind = "summary"
    per_device = True
    describe = "Runtime API calls of this device's host threads: time share, count, avg/min/max"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        dev = naming.device_id or 0
        api = api_of_device(session, dev)
        api = api[is_in(api["level"], ["runtime"])] if len(api) else api
        if len(api) == 0:
            return []
        df = pd.DataFrame({"name": text(api["name"]).astype(str).to_numpy(), "pid": i64(api["pid"]),
                           "tid": i64(api["thread_id"]), "dur_ns": i64(api["end_ns"]) - i64(api["start_ns"])})
        st = _stats(df, ["name", "pid", "tid"])
        grand = st["total"].sum()
        st["ratio"] = st["total"] / grand * 100 if grand else 0.0
        st = st.sort_values(["total", "name"], ascending=[False, True], kind="stable")
        cols = [Col.ints(np.full(len(st), dev)), Col.text(st["name"].to_numpy()),
                Col.text(dbl(st["ratio"]), number=True), Col.text(dbl(st["total"] / 1000), number=True),
                Col.ints(st["count"]), Col.text(dbl(st["total"] / st["count"] / 1000), number=True),
                Col.text(dbl(st["min"] / 1000), number=True), Col.text(dbl(st["max"] / 1000), number=True),
                Col.ints(st["pid"]), Col.ints(st["tid"])]
        return [write_table(stem(out_dir, naming, self.name), RUNTIME_API_HEADER, cols, naming.summary_format)]


COMPONENTS = [("AscendCL", ("acl",)), ("GE", ("model", "node")), ("Runtime", ("runtime",))]


class AiStackTime:
    name = "ai_stack_time"
    kind = "summary"
    per_device = True
    describe = "time per software component: AscendCL, GE, Runtime (host calls) and Task Scheduler (device tasks)"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        dev = naming.device_id or 0
        api = api_of_device(session, dev)
        rows = shown_rows(session, dev)  # the shown tasks' durations only, not a copy of their table
        parts: list[tuple[str, np.ndarray]] = []  # (component, its durations in ns), in this order
        if len(api):
            lvl = as_cat(api["level"])
            d = i64(api["end_ns"]) - i64(api["start_ns"])
            for comp, levels in COMPONENTS:
                m = cat_isin(lvl, levels)
                if m.any():
                    parts.append((comp, d[m]))
        if len(rows):
            parts.append(("Task Scheduler", i64(session.tasks["dur_ns"])[rows]))
        if not parts:
            return []
        st = pd.DataFrame({"component": [c for c, _ in parts], "count": [len(d) for _, d in parts],
                           "total": np.array([d.sum() for _, d in parts], np.int64),
                           "min": np.array([d.min() for _, d in parts], np.int64),
                           "max": np.array([d.max() for _, d in parts], np.int64)})
        grand = st["total"].sum()
        ratio = st["total"] / grand * 100 if grand else st["total"] * 0.0
        cols = [Col.ints(np.full(len(st), dev)), Col.text(st["component"].to_numpy()), Col.text(dbl(ratio), number=True),
                Col.text(dbl(st["total"] / 1000), number=True), Col.ints(st["count"]),
                Col.text(dbl(st["total"] / st["count"] / 1000), number=True),
                Col.text(dbl(st["min"] / 1000), number=True), Col.text(dbl(st["max"] / 1000), number=True)]
        return [write_table(stem(out_dir, naming, self.name), AI_STACK_HEADER, cols, naming.summary_format)]


def has_dynamic_launches(session: Session, device_id: int) -> bool:
    """Whether :func:`dynamic_launches` has rows (without making them)."""
    api = api_of_device(session, device_id)
    t = of_device(session.tasks, device_id)
    if len(api) == 0 or len(t) == 0:
        return False
    conn = pd.unique(i64(t["connection_id"])[is_in(t["op_state"], ["dynamic"])])
    return len(conn) > 0 and bool((is_in(api["level"], ["node"]) & np.isin(i64(api["connection_id"]), conn)).any())


def dynamic_launches(session: Session, device_id: int) -> pd.DataFrame:
    """Node-level launches of this device whose device task ran a dynamic-shape op."""
    api = api_of_device(session, device_id)
    t = of_device(session.tasks, device_id)
    if len(api) == 0 or len(t) == 0:
        return api.iloc[:0]
    dyn = t[is_in(t["op_state"], ["dynamic"])]
    if len(dyn) == 0:
        return api.iloc[:0]
    conn = pd.unique(i64(dyn["connection_id"]))
    node = api[is_in(api["level"], ["node"]) & np.isin(i64(api["connection_id"]), conn)]
    if len(node) == 0:
        return node
    first = dyn.sort_values("start_ns", kind="stable").drop_duplicates("connection_id")
    info = pd.DataFrame({"connection_id": i64(first["connection_id"]),
                         "op_name": text(first["op_name"]).astype(str).to_numpy(),
                         "op_type": text(first["op_type"]).astype(str).to_numpy()})
    out = node.assign(connection_id=i64(node["connection_id"])).merge(info, on="connection_id", how="left")
    return out.sort_values("start_ns", kind="stable")


class GeOpExecute:
    name = "ge_op_execute"
    kind = "summary"
    per_device = True
    describe = "launch of each dynamic-shape op (only when the model has dynamic-shape ops)"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        dev = naming.device_id or 0
        node = dynamic_launches(session, dev)
        if len(node) == 0:
            return []
        start = i64(node["start_ns"])
        cols = [Col.ints(np.full(len(node), dev)), Col.ints(node["thread_id"]), Col.text(node["op_name"].to_numpy()),
                Col.text(node["op_type"].to_numpy()), Col.text(text(node["name"])), Col.us(start, stamp=True),
                Col.us(i64(node["end_ns"]) - start)]
        return [write_table(stem(out_dir, naming, self.name), GE_OP_EXECUTE_HEADER, cols, naming.summary_format)]

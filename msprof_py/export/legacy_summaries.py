"""The legacy per-component summaries of seed 003 (msprof of that era; column sets documented in
docs/exporters.md): ``runtime_api_*``, ``ai_stack_time_*`` and ``ge_op_execute_*``.  Registered by
:mod:`summaries` after its own tables (the README's order)."""
from __future__ import annotations

import weakref
from pathlib import Path

import numpy as np
import pandas as pd

from msprof_py.export.base import ExportContext, Naming
from msprof_py.export.session_access import api_of_device, of_device
from msprof_py.export.summary_format import _stats, dbl, i64, stem, text
from msprof_py.export.table_writer import Col, write_table
from msprof_py.export.timeline_layers import CANN_COLUMNS
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
        if len(api):  # (the columns _name_stats reads, then the rows: not a copy of every column)
            api = api[[c for c in NAME_STATS_COLUMNS if c in api.columns]][is_in(api["level"], ["runtime"])]
        if len(api) == 0:
            return []
        st = _name_stats(api)
        grand = st["total"].sum()
        st["ratio"] = st["total"] / grand * 100 if grand else 0.0
        st = st.sort_values(["total", "name"], ascending=[False, True], kind="stable")
        cols = [Col.ints(np.full(len(st), dev)), Col.text(st["name"].to_numpy()),
                Col.text(dbl(st["ratio"]), number=True), Col.text(dbl(st["total"] / 1000), number=True),
                Col.ints(st["count"]), Col.text(dbl(st["total"] / st["count"] / 1000), number=True),
                Col.text(dbl(st["min"] / 1000), number=True), Col.text(dbl(st["max"] / 1000), number=True),
                Col.ints(st["pid"]), Col.ints(st["tid"])]
        return [write_table(stem(out_dir, naming, self.name), RUNTIME_API_HEADER, cols, naming.summary_format)]


NAME_STATS_COLUMNS = ["name", "pid", "thread_id", "start_ns", "end_ns"]


def _name_stats(api: pd.DataFrame) -> pd.DataFrame:
    """count / total / min / max of the calls' durations per (name, pid, tid), groups in the order
    of their first call, names as their text (``str`` of the value).  A categorical name column
    is grouped by a code per distinct text (its categories' texts factorized, missing values the
    text "nan" as ``astype(str)`` makes them) instead of by a Python string per call."""
    dur = i64(api["end_ns"]) - i64(api["start_ns"])
    col = text(api["name"])
    if not isinstance(col.dtype, pd.CategoricalDtype):
        df = pd.DataFrame({"name": col.astype(str).to_numpy(), "pid": i64(api["pid"]),
                           "tid": i64(api["thread_id"]), "dur_ns": dur})
        return _stats(df, ["name", "pid", "tid"])
    # what astype(str) makes of a missing name: the text "nan" (pandas 2), or a missing value
    # that the grouping leaves out (pandas 3's str dtype)
    missing = pd.Series(pd.Categorical([None], dtype=col.dtype)).astype(str).to_numpy(dtype=object)[0]
    names = np.append(col.cat.categories.astype(str).to_numpy(dtype=object), missing)  # code -1 -> the last
    code_of, texts = pd.factorize(names, sort=False)  # (a missing text: code -1)
    key = code_of[col.cat.codes.to_numpy()]
    pid, tid = i64(api["pid"]), i64(api["thread_id"])
    if (key < 0).any():
        keep = key >= 0
        key, pid, tid, dur = key[keep], pid[keep], tid[keep], dur[keep]
    # (copy=False: the frame over these arrays, not four copies of them: 4.2 M rows each on the single-op million)
    st = _stats(pd.DataFrame({"name": key, "pid": pid, "tid": tid, "dur_ns": dur}, copy=False), ["name", "pid", "tid"])
    st["name"] = np.asarray(texts, dtype=object)[st["name"].to_numpy()]
    return st


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
    return len(_launch_rows(session, device_id)[0]) > 0


def dynamic_launches(session: Session, device_id: int, ops: bool = True) -> pd.DataFrame:
    """Node-level launches of this device whose device task ran a dynamic-shape op, in order of
    start, with the op's name and type (of the first of its tasks to start; ``ops`` False: the
    API rows alone, as the ge_op_execute timeline reads them)."""
    api = api_of_device(session, device_id)
    apos, tpos = _launch_rows(session, device_id)
    if len(apos) == 0:
        return api.iloc[:0]
    if not ops:  # (the columns cann_layer reads: the ge_op_execute timeline's)
        node = api[[c for c in CANN_COLUMNS if c in api.columns]].take(apos)
        return node.assign(connection_id=i64(node["connection_id"])).reset_index(drop=True)
    node = api.take(apos)
    return node.assign(connection_id=i64(node["connection_id"]),
                       op_name=_op_texts(session.tasks["op_name"], tpos).to_numpy(),
                       op_type=_op_texts(session.tasks["op_type"], tpos).to_numpy()).reset_index(drop=True)


def _op_texts(col: pd.Series, rows: np.ndarray) -> pd.Series:
    """``text(col.take(rows)).astype(str)``, each distinct value of a categorical ``col``
    converted once (not a Python string made per launch: 1 M of them on the single-op million),
    as a categorical Series; any other column as that expression."""
    if not isinstance(col.dtype, pd.CategoricalDtype):
        return text(col.take(rows)).astype(str).reset_index(drop=True)
    # the conversion of every category, and of a missing value (position 0), as astype(str) makes them
    every = pd.Series(pd.Categorical.from_codes(np.arange(-1, len(col.cat.categories)), dtype=col.dtype))
    conv = every.astype(str).to_numpy(dtype=object)
    return pd.Series(pd.Categorical(conv)[col.cat.codes.to_numpy()[rows].astype(np.int64) + 1])


# the last (API table, task table, device)'s launch rows: the ge_op_execute summary and timeline
# and thread_group_*.json ask for them (weak references: no table is kept alive by this)
_LAUNCHES: list[tuple[weakref.ref, weakref.ref, int, tuple[np.ndarray, np.ndarray]]] = []


def _launch_rows(session: Session, device_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(positions in :func:`api_of_device`'s rows, positions in ``session.tasks``) of
    :func:`dynamic_launches`: each Node launch whose connection id a dynamic-shape task of the
    device has, ordered by start (stable), and the first of those tasks to start (stable: the
    earlier row on a tie).  Computed once per API table, task table and device."""
    api, t = session.api, session.tasks
    hit = _LAUNCHES[0] if _LAUNCHES else None
    if hit is not None and hit[0]() is api and hit[1]() is t and hit[2] == device_id:
        return hit[3]
    rows = _find_launch_rows(session, device_id)
    for r in rows:
        r.setflags(write=False)
    _LAUNCHES[:] = [(weakref.ref(api), weakref.ref(t), device_id, rows)]
    return rows


def _find_launch_rows(session: Session, device_id: int) -> tuple[np.ndarray, np.ndarray]:
    none = (np.zeros(0, np.intp), np.zeros(0, np.intp))
    api, t = api_of_device(session, device_id), session.tasks
    if len(api) == 0 or len(t) == 0:
        return none
    dyn = np.flatnonzero((t["device_id"].to_numpy(dtype=np.int64) == device_id) & is_in(t["op_state"], ["dynamic"]))
    if len(dyn) == 0:
        return none
    tconn = i64(t["connection_id"])[dyn]
    node = np.flatnonzero(is_in(api["level"], ["node"]))  # (the ids of these rows looked up, not of every API row)
    apos = node[np.isin(i64(api["connection_id"])[node], pd.unique(tconn))]
    if len(apos) == 0:
        return none
    # the first task per connection id: by start (stable), the first row of each id
    by_start = np.argsort(i64(t["start_ns"])[dyn], kind="stable")
    conn_sorted, first = np.unique(tconn[by_start], return_index=True)
    first_row = dyn[by_start[first]]
    tpos = first_row[np.searchsorted(conn_sorted, i64(api["connection_id"])[apos])]
    order = np.argsort(i64(api["start_ns"])[apos], kind="stable")
    return apos[order], tpos[order]


class GeOpExecute:
    name = "ge_op_execute"
    kind = "summary"
    per_device = True
    describe = "launch of each dynamic-shape op (only when the model has dynamic-shape ops)"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        dev = naming.device_id or 0
        apos, tpos = _launch_rows(session, dev)
        if len(apos) == 0:
            return []
        # dynamic_launches' columns, the op names and types as categoricals (each text once)
        node = api_of_device(session, dev)[["thread_id", "name", "start_ns", "end_ns"]].take(apos)
        start = i64(node["start_ns"])
        cols = [Col.ints(np.full(len(node), dev)), Col.ints(node["thread_id"]),
                Col.text(_op_texts(session.tasks["op_name"], tpos).array),
                Col.text(_op_texts(session.tasks["op_type"], tpos).array), Col.text(text(node["name"])),
                Col.us(start, stamp=True), Col.us(i64(node["end_ns"]) - start)]
        return [write_table(stem(out_dir, naming, self.name), GE_OP_EXECUTE_HEADER, cols, naming.summary_format)]

"""ai_stack_time_{dev}.json from per-component arrays against the previous table-and-groupby
formulation (kept here as the reference), on runs with ordinary, tied, unordered, missing and
too-early iteration windows."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import msprof_py.export  # noqa: F401  (registers every exporter)
from msprof_py.export.base import REGISTRY, ExportContext, Naming
from msprof_py.export.component_timelines import AI_STACK_SORT, ComponentTimeline, _host_pid
from msprof_py.export.legacy_summaries import COMPONENTS
from msprof_py.export.session_access import NA_ID, api_of_device, of_device
from msprof_py.export.timeline_layers import i64
from msprof_py.export.trace_events import Arg, Slices, format_pid
from msprof_py.export.views import as_cat, cat_isin, npu_label, shown_rows

from .synth import make_session


class _Reference(ComponentTimeline):
    def _ai_stack(self, session, dev, tl) -> None:  # the implementation before 2026-11-24 (phase 5)
        parts = []
        api = api_of_device(session, dev)
        if len(api):
            lvl = as_cat(api["level"])
            start, end = i64(api["start_ns"]), i64(api["end_ns"])
            for code, (_, levels) in enumerate(COMPONENTS):
                m = cat_isin(lvl, levels)
                if m.any():
                    parts.append(pd.DataFrame({"comp": code, "s": start[m], "e": end[m]}))
        rows = shown_rows(session, dev)
        if len(rows):
            s = i64(session.tasks["start_ns"])[rows]
            parts.append(pd.DataFrame({"comp": len(COMPONENTS), "s": s, "e": s + i64(session.tasks["dur_ns"])[rows]}))
        if not parts:
            return
        calls = pd.concat(parts, ignore_index=True)
        steps = of_device(session.steps, dev)
        pid = format_pid(_host_pid(session, api), AI_STACK_SORT, dev)
        if len(steps):
            st = steps.sort_values("step_end_ns", kind="stable")
            w_end = i64(st["step_end_ns"])
            w_start = np.concatenate([[min(int(i64(st["step_start_ns"])[0]), int(calls["s"].min()) - 1)], w_end[:-1]])
            k = np.searchsorted(w_end, calls["s"].to_numpy(), side="left")
            calls = calls[k < len(w_end)].assign(w=k[k < len(w_end)])
            win = pd.DataFrame({"w": np.arange(len(w_end)), "ws": w_start, "we": w_end,
                                "iter": i64(st["index_id"]), "model": i64(st["model_id"])})
        else:
            calls = calls.assign(w=0)
            win = pd.DataFrame({"w": [0], "ws": [int(calls["s"].min())], "we": [int(calls["e"].max())],
                                "iter": [0], "model": [NA_ID]})
        g = calls.assign(d=calls["e"] - calls["s"]).groupby(["comp", "w"], sort=False)["d"].agg(["count", "sum"])
        g = g.reset_index().merge(win, on="w")
        tl.meta.process(pid, "AI Stack Time", npu_label(session, dev), AI_STACK_SORT)
        for tid, (comp, _) in enumerate(COMPONENTS + [("Task Scheduler", ())]):
            tl.meta.thread(pid, tid, comp, tid)
            sub = g[g["comp"].to_numpy() == tid].sort_values("ws", kind="stable")
            if len(sub) == 0:
                continue
            n = len(sub)
            tl.slices.append(Slices(
                name=comp, pid=np.full(n, pid, np.int64), tid=np.full(n, tid, np.int64),
                start_ns=sub["ws"].to_numpy(np.int64), dur_ns=(sub["we"] - sub["ws"]).to_numpy(np.int64),
                label=f"ai stack {comp}",
                args=[Arg("Model ID", "int", sub["model"].to_numpy(np.int64)),
                      Arg("Iteration ID", "int", sub["iter"].to_numpy(np.int64)),
                      Arg("Count", "int", sub["count"].to_numpy(np.int64)),
                      Arg("Time(us)", "us", sub["sum"].to_numpy(np.int64))]))


def _steps(kind: str, st: pd.DataFrame) -> pd.DataFrame:
    st = st.copy()
    if kind == "none":
        return st.iloc[:0]
    if kind == "tied":  # two windows ending together (and starting together)
        end = st["step_end_ns"].to_numpy().copy()
        end[1] = end[0]
        st["step_end_ns"] = end
    if kind == "shuffled":
        st = st.iloc[::-1]
    if kind == "early":  # the last window ends before the run does: later calls are in none
        st = st.iloc[: max(1, len(st) // 2)]
    if kind == "late_start":  # the first window starts after its end
        start = st["step_start_ns"].to_numpy().copy()
        start[0] = int(st["step_end_ns"].max()) + 10
        st["step_start_ns"] = start
    return st


@pytest.mark.parametrize("kind", ["as_is", "none", "tied", "shuffled", "early", "late_start"])
def test_ai_stack_timeline_as_before(tmp_path: Path, kind: str) -> None:
    s = make_session(ops=7, iterations=4, devices=2)
    s.steps = _steps(kind, s.steps)
    (tmp_path / "ref").mkdir()
    for dev in (0, 1):
        got = REGISTRY["timeline:ai_stack_time"].write(s, tmp_path, Naming(dev), ExportContext())
        want = _Reference("ai_stack_time", "").write(s, tmp_path / "ref", Naming(dev), ExportContext())
        assert [p.read_bytes() for p in got] == [p.read_bytes() for p in want]
        assert got

"""Every exporter on edge-case sessions, and the issue's invariants on a synthetic session with
known truth (tests/export/synth.py)."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import msprof_py.export  # noqa: F401  (registers every exporter)
from msprof_py.export.base import REGISTRY, ExportContext, Naming
from msprof_py.parse.session import Session
from msprof_py.export.summaries import OP_STATISTIC_HEADER, OP_SUMMARY_HEADER
from msprof_py.parse import schema

from .synth import make_session

EXPORTERS = sorted(REGISTRY)


def empty_session() -> Session:
    def e(cols):
        return pd.DataFrame({c: pd.Series([], dtype="int64") for c in cols})
    return Session.from_tables(api=e(schema.API_COLUMNS), tasks=e(schema.TASK_COLUMNS), steps=e(schema.STEP_COLUMNS),
                        all_reduce=e(schema.ALL_REDUCE_COLUMNS), communication=e(schema.COMMUNICATION_COLUMNS),
                        comm_tasks=e(schema.COMM_TASK_COLUMNS), fusion_ops=e(schema.FUSION_OP_COLUMNS),
                        memcpy=e(schema.MEMCPY_COLUMNS), devices=e(schema.DEVICE_INFO_FIELDS))


@pytest.mark.parametrize("key", EXPORTERS)
@pytest.mark.parametrize("session", [empty_session(), Session.from_tables()], ids=["empty-tables", "no-tables"])
def test_every_exporter_handles_a_session_without_data(key: str, session: Session, tmp_path: Path) -> None:
    ctx = ExportContext()
    assert REGISTRY[key].write(session, tmp_path, Naming(0, timestamp="20250101000000"), ctx) == []
    assert list(tmp_path.iterdir()) == []
    assert not ctx.warnings


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as fp:
        rows = list(csv.reader(fp))
    return rows[0], [dict(zip(rows[0], r)) for r in rows[1:]]


@pytest.fixture(scope="module")
def synth_out(tmp_path_factory) -> tuple[Path, Session]:
    s = make_session(ops=9, iterations=4, devices=2, comm=True)
    out = tmp_path_factory.mktemp("synth")
    ctx = ExportContext()
    for key in EXPORTERS:
        for dev in (0, 1):
            REGISTRY[key].write(s, out, Naming(dev, timestamp="20251121124000"), ctx)
    assert not ctx.warnings, ctx.warnings.messages
    return out, s


def test_op_summary_one_row_per_device_op_task(synth_out) -> None:
    out, s = synth_out
    for dev in (0, 1):
        header, rows = read_csv(out / f"op_summary_{dev}.csv")
        assert header == OP_SUMMARY_HEADER
        n_tasks = int((s.tasks["device_id"] == dev).sum())
        n_comm = int((s.communication["device_id"] == dev).sum())
        assert len(rows) == n_tasks + n_comm
        assert sum(r["Task Type"] == "COMMUNICATION" for r in rows) == n_comm
        # Task Wait Time: the documented formula, on the rows as written
        start = np.array([float(r["Task Start Time(us)"]) for r in rows])
        dur = np.array([float(r["Task Duration(us)"]) for r in rows])
        wait = np.array([float(r["Task Wait Time(us)"]) for r in rows])
        assert wait[0] == 0
        np.testing.assert_allclose(wait[1:], np.maximum(0, start[1:] - start[:-1] - dur[:-1]), atol=1e-3)
        assert all(r["Task Start Time(us)"].endswith("\t") for r in rows)


def test_op_statistic_sums_match_op_summary(synth_out) -> None:
    out, _ = synth_out
    header, stat = read_csv(out / "op_statistic_0.csv")
    assert header == OP_STATISTIC_HEADER
    _, summ = read_csv(out / "op_summary_0.csv")
    ops = [r for r in summ if r["Task Type"] != "COMMUNICATION"]
    assert sum(int(r["Count"]) for r in stat) == len(ops)
    assert sum(float(r["Total Time(us)"]) for r in stat) == pytest.approx(
        sum(float(r["Task Duration(us)"]) for r in ops), abs=1e-3 * len(stat))
    assert sum(float(r["Ratio(%)"]) for r in stat) == pytest.approx(100, abs=5e-4 * len(stat))
    totals = [float(r["Total Time(us)"]) for r in stat]
    assert totals == sorted(totals, reverse=True)


def test_step_trace_one_row_per_iteration_with_its_window(synth_out) -> None:
    out, s = synth_out
    _, rows = read_csv(out / "step_trace_1.csv")
    st = s.steps[s.steps["device_id"] == 1].sort_values("index_id")
    assert [int(r["Iteration ID"]) for r in rows] == st["index_id"].tolist()
    want = (st["step_end_ns"] - st["step_start_ns"]).to_numpy() / 1000
    assert [float(r["Iteration Time(us)"]) for r in rows] == pytest.approx(want.tolist(), abs=1e-9)
    assert rows[0]["Data Aug Bound(us)"] == "N/A"


def test_timeline_device_slices_and_one_flow_per_launched_op(synth_out) -> None:
    out, s = synth_out
    ev = json.loads((out / "msprof_0.json").read_bytes())
    assert isinstance(ev, list)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    device = [e for e in ev if e["ph"] == "X" and names.get((e["pid"], e["tid"]), "").startswith(("Stream ", "Group "))]
    _, summ = read_csv(out / "op_summary_0.csv")
    assert len(device) == len(summ)
    launches = s.api[(s.api["level"] == "node") & (s.api["thread_id"] == 3000)]
    starts = [e for e in ev if e["ph"] == "s"]
    ends = [e for e in ev if e["ph"] == "f"]
    assert len(starts) == len(ends) == len(launches)
    assert {e["id"] for e in starts} == {str(c << 32) for c in launches["connection_id"]}
    assert all(e["bp"] == "e" and e["cat"] == "HostToDevice" for e in ends)
    for e in ev:  # msprof's units: ts a 3-decimal string, dur a number
        if e["ph"] == "X":
            assert isinstance(e["ts"], str) and len(e["ts"].split(".")[1]) == 3
            assert isinstance(e["dur"], (int, float))
    pid_hw = {e["pid"] for e in ev if e["name"] == "process_name" and e["args"]["name"] == "Ascend Hardware"}
    assert pid_hw == {(4242 << 10) | (13 << 5) | 0}  # sort 13: the msprof of CANN 9.0


def test_partial_overlap_is_reported_with_thread_and_ts(tmp_path: Path) -> None:
    s = make_session(ops=3, iterations=1)
    tasks = s.tasks.copy()
    tasks.loc[1, "start_ns"] = tasks.loc[0, "start_ns"] + 1_000  # inside task 0, ends after it
    tasks.loc[1, "stream_id"] = tasks.loc[0, "stream_id"]
    tasks.loc[1, "dur_ns"] = tasks.loc[0, "dur_ns"] + 5_000
    s.tasks = tasks
    ctx = ExportContext()
    REGISTRY["timeline:msprof"].write(s, tmp_path, Naming(0), ctx)
    assert any("partly overlaps" in m and "tid 2" in m for m in ctx.warnings), ctx.warnings.messages


def test_reports_keys_switch_layers(tmp_path: Path) -> None:
    s = make_session(ops=3, iterations=1, comm=True)
    REGISTRY["timeline:msprof"].write(s, tmp_path, Naming(0), ExportContext(layers=frozenset({"ascend"})))
    ev = json.loads((tmp_path / "msprof_0.json").read_bytes())
    procs = {e["args"]["name"] for e in ev if e["name"] == "process_name"}
    assert procs == {"Ascend Hardware"}
    assert not [e for e in ev if e["ph"] in "sf"]  # flows need the CANN layer too


def test_flow_ids_stay_below_2_53_for_huge_connection_ids(tmp_path: Path) -> None:
    """Past 2**21 API calls msprof's ``conn << 32`` would pass 2**53 (a real 1M-task single-op
    collection has ~4M calls); the file then uses plain connection ids, still paired, no warning."""
    s = make_session(ops=3, iterations=1)
    offset = 1 << 22
    s.api["connection_id"] = s.api["connection_id"] + offset
    s.tasks["connection_id"] = np.where(s.tasks["connection_id"] >= 0, s.tasks["connection_id"] + offset, -1)
    ctx = ExportContext()
    REGISTRY["timeline:msprof"].write(s, tmp_path, Naming(0), ctx)
    ev = json.loads((tmp_path / "msprof_0.json").read_bytes())
    starts = {e["id"] for e in ev if e["ph"] == "s"}
    ends = {e["id"] for e in ev if e["ph"] == "f"}
    assert starts and starts == ends
    assert max(int(i) for i in starts) < 2**53
    assert not [w for w in ctx.warnings if "2**53" in w]

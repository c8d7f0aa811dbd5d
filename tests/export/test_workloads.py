"""Issue 4, acceptance 2: invariants of the export on collector workloads (simulated NPU ->
PROF dir -> parser -> exporters), checked against the simulator's own truth where it has it."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from msprof_py.collect import collect
from msprof_py.export import ExportOptions, export
from msprof_py.export.summaries import OP_STATISTIC_HEADER, OP_SUMMARY_HEADER
from msprof_py.parse.session import load

OUT = "mindstudio_profiler_output"
# simulator task types of compute ops (the others -- memcpy, events, HCCL sub-tasks -- have no
# op info, msprof's TaskInfo, so they are in task_time and the timeline but not in op_summary)
OPS = {"AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV", "AI_CPU"}
WORKLOADS = {"resnet50": dict(devices=2, iterations=3), "bert": dict(devices=1, iterations=2),
             "single_op": dict(devices=1, iterations=2)}


@pytest.fixture(scope="module", params=sorted(WORKLOADS))
def exported(request, tmp_path_factory):
    name = request.param
    res = collect(name, output=tmp_path_factory.mktemp(name), seed=3, fixed_clock=True, **WORKLOADS[name])
    result = export(res.prof_dir, ExportOptions())
    assert not result.warnings.messages or all("torn" in m for m in result.warnings), result.warnings.messages
    return name, res, load(res.prof_dir)


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as fp:
        rows = list(csv.reader(fp))
    return rows[0], [dict(zip(rows[0], r)) for r in rows[1:]]


def test_op_summary_one_row_per_device_op_task(exported) -> None:
    _, res, session = exported
    truth = res.sim.truth
    for dev in res.sim.device_ids:
        header, rows = read_csv(res.prof_dir / OUT / f"op_summary_{dev}.csv")
        assert header[:len(OP_SUMMARY_HEADER)] == OP_SUMMARY_HEADER  # then the PMU columns
        assert "aicore_time(us)" in header[len(OP_SUMMARY_HEADER):]
        ops = truth[(truth["device_id"] == dev) & truth["task_type"].isin(OPS)]
        big_ops = int((session.communication["device_id"] == dev).sum())
        assert len(rows) == len(ops) + big_ops
        assert sum(r["Task Type"] == "COMMUNICATION" for r in rows) == big_ops
        assert sorted(r["Op Name"] for r in rows if r["Task Type"] != "COMMUNICATION") == \
            sorted(ops["op_name"].astype(str))


def test_op_statistic_sums_and_ratio(exported) -> None:
    _, res, _ = exported
    for dev in res.sim.device_ids:
        header, stat = read_csv(res.prof_dir / OUT / f"op_statistic_{dev}.csv")
        assert header == OP_STATISTIC_HEADER
        _, summ = read_csv(res.prof_dir / OUT / f"op_summary_{dev}.csv")
        ops = [r for r in summ if r["Task Type"] != "COMMUNICATION"]
        assert sum(int(r["Count"]) for r in stat) == len(ops)
        total = sum(float(r["Task Duration(us)"]) for r in ops)
        assert sum(float(r["Total Time(us)"]) for r in stat) == pytest.approx(total, abs=1e-3 * len(stat))
        assert sum(float(r["Ratio(%)"]) for r in stat) == pytest.approx(100, abs=5e-4 * len(stat))


def test_step_trace_rows_are_the_iterations(exported) -> None:
    name, res, _ = exported
    steps = res.sim.truth_steps
    tick_ns = 1e3 / res.sim.spec.hwts_mhz if hasattr(res.sim.spec, "hwts_mhz") else 20.0
    for dev in res.sim.device_ids:
        path = res.prof_dir / OUT / f"step_trace_{dev}.csv"
        want = steps[steps["device_id"] == dev].sort_values(["model_id", "index_id"])
        if len(want) == 0:
            assert not path.exists()  # single-op data has no iterations
            continue
        _, rows = read_csv(path)
        assert [(int(r["Model ID"]), int(r["Iteration ID"])) for r in rows] == \
            list(zip(want["model_id"].tolist(), want["index_id"].tolist()))
        got = np.array([float(r["Iteration Time(us)"]) for r in rows]) * 1000
        np.testing.assert_allclose(got, (want["end_sim_ns"] - want["start_sim_ns"]).to_numpy(), atol=2 * tick_ns)


def test_timeline_device_slices_and_flows(exported) -> None:
    _, res, session = exported
    for dev in res.sim.device_ids:
        ev = json.loads((res.prof_dir / OUT / f"msprof_{dev}.json").read_bytes())
        threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["name"] == "thread_name"}
        _, summ = read_csv(res.prof_dir / OUT / f"op_summary_{dev}.csv")
        op_names = {r["Op Name"] for r in summ}
        device = [e for e in ev if e["ph"] == "X" and threads.get((e["pid"], e["tid"]), "").startswith(("Stream ", "Group "))
                  and e["name"] in op_names]
        assert len(device) == len(summ)
        # one HostToDevice flow per connection id with both halves (msprof's C++ rule): starts at Node
        # launches, aclrtRecordEvent / aclrtStreamWaitEvent calls and memcpy-issuing calls; ends at
        # tasks with op info, tasks issued by those event calls, memcpy tasks and HCCL ops
        tk = session.tasks[(session.tasks["device_id"] == dev) & (session.tasks["start_ns"] >= 0)]
        api = session.api
        event_conn = set(api.loc[api["name"].astype(str).isin(["aclrtRecordEvent", "aclrtStreamWaitEvent"]),
                                 "connection_id"].tolist())
        memcpy_conn = set(tk.loc[tk["host_task_type"].astype(str) == "MEMCPY_ASYNC", "connection_id"].tolist())
        t = tk[(tk["op_type"].astype(str) != "N/A") | tk["connection_id"].isin(event_conn | memcpy_conn)]
        launched = set(t["connection_id"].tolist()) | set(
            session.communication.loc[session.communication["device_id"] == dev, "connection_id"].tolist())
        src = api["level"].astype(str).isin(["node", "communication", "hccl"]) \
            | api["connection_id"].isin(event_conn | memcpy_conn)
        node = api[src & api["connection_id"].isin(launched)]
        starts = [e for e in ev if e["ph"] == "s"]
        ends = [e for e in ev if e["ph"] == "f"]
        assert len(starts) == len(ends) == node["connection_id"].nunique() > 0
        assert {e["id"] for e in starts} == {e["id"] for e in ends}

"""Every advice rule on a simulated run that has the problem (fires, names the right ops, time
at stake within 10% of the injected cost) and on one that does not (silent)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import msprof_py
from msprof_py.analyse.advise import advise, findings

from . import scenarios as sc

# scenario, clean twin, rule, ops it must name
CASES = [
    ("aicpu", "clean", "aicpu", ["l2/Add"]),
    ("dynamic_recompile", "clean", "dynamic_shape", ["l1/MatMulV2"]),
    ("unbalanced", "clean", "unbalanced_iterations", ["l2/MatMulV2"]),
    ("slow_kernel", "clean", "aoe_candidates", ["l2/MatMulV2"]),
    ("slow_kernel", "clean", "low_utilisation", ["l2/MatMulV2"]),
    ("low_bandwidth", "clean", "memory_bound", ["l2/Add"]),
    ("host_work", "script_clean", "host_bound", []),
    ("sync_each", "script_clean", "sync_hot_path", ["aclrtSynchronizeStream"]),
    ("host_work", "script_clean", "bubbles", []),
]


@pytest.mark.parametrize("faulty,clean,rule,ops", CASES, ids=[f"{c[2]}-{c[0]}" for c in CASES])
def test_rule_fires_on_the_fault_with_its_cost(runs, faulty, clean, rule, ops) -> None:
    bad, good = msprof_py.load(runs[faulty]), msprof_py.load(runs[clean])
    injected = sc.span_ns(bad) - sc.span_ns(good)
    hit = [f for f in findings(bad, [rule])]
    assert len(hit) == 1, hit
    f = hit[0]
    assert f.ops == ops
    assert injected > 0
    assert abs(f.time_at_stake_ns - injected) <= 0.10 * injected, (f.time_at_stake_ns, injected)
    assert findings(good, [rule]) == []


def test_dynamic_shape_costs_only_what_the_device_waits(runs) -> None:
    """A dynamic op whose per-execution host preparation hides behind the device (the input copy
    runs meanwhile) costs nothing and is not reported; with 300 us of recompile per execution the
    device waits and the rule reports that wait (the parametrised test above)."""
    assert findings(msprof_py.load(runs["dynamic"]), ["dynamic_shape"]) == []
    (f,) = findings(msprof_py.load(runs["dynamic_recompile"]), ["dynamic_shape"])
    ev = f.evidence["ops"]["l1/MatMulV2"]
    assert ev["launches"] == sc.ITER and ev["host_launch_us"] >= sc.ITER * 300
    # the same idle time is not reported again as host-bound launch
    assert findings(msprof_py.load(runs["dynamic_recompile"]), ["host_bound"]) == []
    # single-operator calls are launched per call by design: not flagged
    assert findings(msprof_py.load(runs["script_clean"]), ["dynamic_shape"]) == []


def _no_pmu(s):
    s.pmu = s.pmu.iloc[:0]
    return s


def test_clean_runs_are_silent(runs) -> None:
    for k in ("clean", "script_clean", "dynamic"):
        s = msprof_py.load(runs[k])
        assert len(s.pmu), k  # the simulated PMU ran: its rules were not skipped
        assert advise(s).empty, (k, advise(s)[["rule", "ops"]])


def test_elementwise_ops_at_full_bandwidth_are_not_memory_bound_findings(runs) -> None:
    """The element-wise ops of the clean run keep MTE2 busy (memory-bound by nature) at the
    bandwidth the device reaches: nothing to gain but fusion, so no finding; the single-core Add
    moves the same bytes at 1/16 of that bandwidth."""
    s = msprof_py.load(runs["low_bandwidth"])
    t = s.tasks.merge(s.pmu, on=["device_id", "stream_id", "task_id", "context_id", "start_ns"])
    adds = t[t["op_type"].astype(str) == "Add"]
    assert (adds["aiv_mte2_ratio"] > 0.8).all()
    (f,) = findings(s, ["memory_bound"])
    assert f.ops == ["l2/Add"] and f.evidence["ops"]["l2/Add"]["bandwidth_gbps"] < 0.1 * f.evidence[
        "reference_bandwidth_gbps"]


def test_exposed_communication_fires_with_its_cost(tmp_path) -> None:
    """On two devices the training graph's gradient all-reduces run after the backward pass with
    nothing beside them: each device's span grows by the exposed communication (injected cost:
    the span minus the one-device run's, which has no all-reduce).  With long backward ops after
    the weight gradients (the all-reduce runs beside them) the rule is silent."""
    one = msprof_py.load(sc.run_graph(sc.graph_doc_train(), tmp_path / "one", devices=1, iterations=3))
    two = msprof_py.load(sc.run_graph(sc.graph_doc_train(), tmp_path / "two", devices=2, iterations=3))
    assert findings(one, ["comm_not_overlapped"]) == []
    hit = {f.device_id: f for f in findings(two, ["comm_not_overlapped"])}
    assert set(hit) == {0, 1}
    for dev, f in hit.items():
        injected = sc.device_span_ns(two, dev) - sc.device_span_ns(one, 0)
        assert abs(f.time_at_stake_ns - injected) <= 0.10 * injected, (dev, f.time_at_stake_ns, injected)
        assert f.ops and all(o.startswith("hcom_allReduce_") for o in f.ops)
        ev = f.evidence
        assert ev["exposed_us"] + ev["overlapped_us"] == pytest.approx(ev["communication_us"], abs=0.01)
    hidden = msprof_py.load(sc.run_graph(sc.graph_doc_train_overlapped(), tmp_path / "hidden", devices=2,
                                         iterations=3))
    assert len(hidden.communication) and findings(hidden, ["comm_not_overlapped"]) == []


def test_pmu_rules_read_msprof_column_names(runs) -> None:
    """The rules read msprof's op_summary PMU columns from the tasks table too (set by hand here),
    and are silent without PMU data."""
    s = _no_pmu(msprof_py.load(runs["clean"]))
    assert findings(s, ["low_utilisation", "memory_bound"]) == []
    t = s.tasks.copy()
    names = t["op_name"].astype(str)
    mm, add = names.str.contains("MatMul"), names.str.contains("Add")
    t["aic_mac_ratio"] = np.where(mm, 0.2, np.nan)  # N/A on rows without PMU data
    t["aiv_vec_ratio"] = np.where(add, 0.1, np.nan)
    t["aic_mte2_ratio"] = np.where(add, 0.9, np.where(mm, 0.3, np.nan))
    s.tasks = t
    low = findings(s, ["low_utilisation"])
    assert sorted(low[0].ops) == ["l1/MatMulV2", "l2/MatMulV2"]
    # both Adds memory-bound at the same bandwidth: memory-bound by nature, not a finding
    assert findings(s, ["memory_bound"]) == []
    dev = t[(t["start_ns"] >= 0) & names.str.contains("MatMul")]["dur_ns"].sum()
    assert low[0].time_at_stake_ns == pytest.approx(dev * (1 - 0.2 / 0.7), abs=1)


def test_advise_api_returns_a_dataframe(runs) -> None:
    df = msprof_py.advise(msprof_py.load(runs["aicpu"]))
    assert isinstance(df, pd.DataFrame) and list(df["rule"]) == ["aicpu"]
    assert df["time_at_stake_us"].iloc[0] > 0


def test_small_allreduces_fire_with_their_cost(tmp_path) -> None:
    fused = msprof_py.load(sc.run_graph(sc.graph_doc_small_grads(False), tmp_path / "a", devices=2, iterations=3))
    alone = msprof_py.load(sc.run_graph(sc.graph_doc_small_grads(True), tmp_path / "b", devices=2, iterations=3))
    injected = sc.span_ns(alone) - sc.span_ns(fused)
    assert findings(fused, ["small_allreduce"]) == []
    hit = findings(alone, ["small_allreduce"])
    assert {f.device_id for f in hit} == {0, 1}
    assert all(f.evidence["sizes_bytes"] == [2048] and set(f.evidence["per_iteration"].values()) == {4} for f in hit)
    stake = sum(f.time_at_stake_ns for f in hit)
    assert abs(stake - injected) <= 0.10 * injected, (stake, injected)

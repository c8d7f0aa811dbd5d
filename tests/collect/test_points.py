"""profiling_options fp_point / bp_point reach the runtime: end to end through collect() and the
parser's steps table (msprof's step_trace "FP Start" / "BP End")."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import msprof_py
from msprof_py.collect import collect, profile
from msprof_py.errors import WarningLog
from msprof_py.runtime.workloads import get_workload

FP_OP = "resnet50/layer1/0/conv1/Conv2D"
BP_OP = "gradients/resnet50/layer2/0/conv1/Conv2D_grad/Conv2DBackpropFilter"


@pytest.fixture(scope="module")
def workload():
    return get_workload("resnet50", batch=4)


def _steps_and_tasks(workload, out: Path, options: dict | None, warnings: WarningLog | None = None,
                     devices: int = 2) -> tuple[pd.DataFrame, pd.DataFrame]:
    res = collect(workload, output=out, options=options, devices=devices, iterations=3, seed=11, fixed_clock=True,
                  warnings=warnings)
    s = msprof_py.load(res.prof_dir, use_cache=False)
    steps = s.steps.sort_values(["device_id", "iter_id"]).reset_index(drop=True)
    return steps, s.tasks


def _op_per_iteration(tasks: pd.DataFrame, op: str) -> pd.DataFrame:
    t = tasks[(tasks["op_name"] == op) & (tasks["start_ns"] >= 0)]
    return t.sort_values(["device_id", "iter_id"]).reset_index(drop=True)


def test_fp_and_bp_points_set_step_trace_fp_start_and_bp_end(workload, tmp_path: Path) -> None:
    warnings = WarningLog()
    steps, tasks = _steps_and_tasks(workload, tmp_path / "pointed", {"fp_point": FP_OP, "bp_point": BP_OP},
                                    warnings)
    assert not any("fp_point" in w or "bp_point" in w for w in warnings)
    assert len(steps) == 2 * 3
    fp, bp = _op_per_iteration(tasks, FP_OP), _op_per_iteration(tasks, BP_OP)
    # one execution of each named op per iteration per device, in the iteration of its step row
    assert fp[["device_id", "iter_id"]].equals(steps[["device_id", "iter_id"]])
    assert bp[["device_id", "iter_id"]].equals(steps[["device_id", "iter_id"]])
    np.testing.assert_array_equal(steps["fp_start_ns"].to_numpy(), fp["start_ns"].to_numpy())
    np.testing.assert_array_equal(steps["bp_end_ns"].to_numpy(), (bp["start_ns"] + bp["dur_ns"]).to_numpy())

    # without the options the runtime's own points (first forward / last backward op) are used
    plain, _ = _steps_and_tasks(workload, tmp_path / "plain", None)
    assert (plain["fp_start_ns"] < steps["fp_start_ns"]).all()
    assert (plain["bp_end_ns"] > steps["bp_end_ns"]).all()


def test_unknown_point_warns_and_keeps_the_runtime_points(workload, tmp_path: Path) -> None:
    warnings = WarningLog()
    steps, _ = _steps_and_tasks(workload, tmp_path / "unknown", {"fp_point": "no/such/op"}, warnings, devices=1)
    plain, _ = _steps_and_tasks(workload, tmp_path / "plain", None, devices=1)
    assert any("fp_point 'no/such/op'" in w for w in warnings)
    pd.testing.assert_frame_equal(steps, plain)


def test_explicit_run_argument_wins_over_the_options(workload, tmp_path: Path) -> None:
    with profile({"fp_point": "no/such/op"}, output=tmp_path, fixed_clock=True, seed=11) as session:
        session.run(workload, iterations=2, fp_point=FP_OP)
    steps = msprof_py.load(session.result.prof_dir, use_cache=False).steps
    fp = _op_per_iteration(msprof_py.load(session.result.prof_dir).tasks, FP_OP)
    np.testing.assert_array_equal(steps.sort_values("iter_id")["fp_start_ns"].to_numpy(), fp["start_ns"].to_numpy())

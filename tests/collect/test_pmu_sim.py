"""The simulated PMU: records in msprof's layout for each aic_metrics set, parsed back into
msprof's columns; cube ops busy the mac pipe, element-wise ops the vector / MTE2 pipes; the
counters agree with the task durations at the clock in force."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import msprof_py
from msprof_py.collect import collect
from msprof_py.collect.options import AIC_METRICS
from msprof_py.export.pmu_export import op_summary_columns
from msprof_py.parse.pmu import metrics as M
from msprof_py.runtime.device import ATLAS_A2
from msprof_py.runtime.pmu_model import THROTTLE_RATIO
from tests.collect.conftest import Sim

GRAPH = Path(__file__).resolve().parents[2] / "fixtures" / "graphs" / "mlp_train.json"


def _collect(tmp_path: Path, metrics: str, iterations: int = 2, batch: int | None = None):
    from msprof_py.runtime.graph_file import load_graph_file as load_graph
    from msprof_py.runtime.sim import run

    return collect(load_graph(GRAPH, batch=batch), output=tmp_path, options={"aic_metrics": metrics}, iterations=iterations,
                   seed=5, fixed_clock=True, runner=run)


@pytest.mark.parametrize("metrics", AIC_METRICS)
def test_each_metric_set_gives_its_columns(tmp_path: Path, metrics: str) -> None:
    res = _collect(tmp_path, metrics)
    s = msprof_py.load(res.prof_dir, use_cache=False)
    aic = "PipeUtilizationExct" if metrics == "PipeUtilization" else metrics
    cols = list(s.pmu.columns)
    assert [c for c in cols if c.startswith("aic_")][2:] == ["aic_" + m.name for m in M.CALCULATORS[aic]]
    assert [c for c in cols if c.startswith("aiv_")][2:] == ["aiv_" + m.name for m in M.CALCULATORS[metrics]]
    t = s.tasks[s.tasks["task_type"].isin(["AI_CORE", "AI_VECTOR_CORE"])]
    assert len(s.pmu) == len(t)  # every kernel task got its record
    assert not [w for w in s.warnings.messages if "PMU" in w]


def test_cube_ops_mac_bound_elementwise_vector_memory(tmp_path: Path) -> None:
    res = _collect(tmp_path, "PipeUtilization", iterations=3, batch=2048)  # big enough to be compute-bound
    s = msprof_py.load(res.prof_dir, use_cache=False)
    j = s.tasks.merge(s.pmu, on=["device_id", "stream_id", "task_id", "context_id", "start_ns"])
    cube = j[j["op_type"].astype(str).str.startswith("MatMul")]
    elem = j[j["op_type"].astype(str).isin(["Gelu", "Add", "Relu", "GeluGrad"])]
    assert len(cube) and len(elem)
    assert (cube["aic_mac_ratio_extra"] > 0.5).all()
    assert (cube["aiv_total_cycles"] == 0).all()
    assert ((elem["aiv_vec_ratio"] + elem["aiv_mte2_ratio"]) > 0.5).all()
    assert (elem["aic_total_cycles"] == 0).all()
    # ratios are shares of the task's cycles
    for side in ("aic", "aiv"):
        r = j[[c for c in j.columns if c.startswith(side) and c.endswith(("ratio", "ratio_extra"))]]
        assert ((r >= 0) & (r <= 1)).all().all()
    # aicore_time = busy time: at most the task duration, at least most of it for big ops
    busy = np.where(j["aic_total_cycles"] > 0, j["aic_total_time"], j["aiv_total_time"]) * 1000
    assert (busy <= j["dur_ns"] + 1).all()
    big = j["dur_ns"] > 20_000
    assert (busy[big] > 0.5 * j["dur_ns"][big]).all()


def test_clock_drops_under_load_and_counters_follow(tmp_path: Path) -> None:
    res = _collect(tmp_path, "PipeUtilization", iterations=4, batch=2048)
    s = msprof_py.load(res.prof_dir, use_cache=False)
    f = s.aicore_freq["freq_mhz"].tolist()
    nominal = int(ATLAS_A2.aic_frequency_mhz)
    assert f[0] == nominal and round(nominal * THROTTLE_RATIO) in f  # the mlp keeps the cores busy
    # cycles / block / ceil(block / cores) / aicore_time = the clock the task ran at
    j = s.tasks.merge(s.pmu, on=["device_id", "stream_id", "task_id", "context_id", "start_ns"])
    j = j[j["aic_total_cycles"] > 0]
    waves = -(-j["block_num"] // ATLAS_A2.ai_core_num)
    mhz = j["aic_total_cycles"] / j["block_num"] * waves / j["aic_total_time"]
    assert set(np.round(mhz, -1).astype(int)) <= {nominal, 1650}


def test_op_summary_carries_the_columns(tmp_path: Path) -> None:
    res = _collect(tmp_path, "Memory")
    s = msprof_py.load(res.prof_dir, use_cache=False)
    t = s.tasks[s.tasks["start_ns"] >= 0].reset_index(drop=True)
    h, cols = op_summary_columns(s, 0, t, 0, np.arange(len(t)), t["dur_ns"].to_numpy())
    assert h[:2] == ["aicore_time(us)", "aic_total_cycles"] and "aic_main_mem_read_bw(GB/s)" in h
    assert "aic_ub_read_bw(GB/s)" not in h  # msprof's unsupported columns are left out
    assert len(cols[0].values) == len(t)


def test_task_time_off_writes_no_pmu(sim: Sim, tmp_path: Path) -> None:
    res = collect(sim.target, output=tmp_path, options={"task_time": "off"}, runner=sim.run, fixed_clock=True)
    assert not list(res.prof_dir.glob("device_*/data/ffts_profile.data.*"))
    assert not list(res.prof_dir.glob("device_*/data/lpm*"))

"""op_perf.csv / perf/{op}.csv from the cost model and a simulated run (acceptance 4)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("msprof_py.runtime.sim", reason="msprof_py.runtime.sim has not landed yet")

from msprof_py.precision.perf import COLUMNS, MODELLED, op_perf, perf_from_sim  # noqa: E402
from msprof_py.runtime import sim  # noqa: E402
from msprof_py.runtime.cost import TuneChoice  # noqa: E402
from msprof_py.runtime.workloads import get_workload  # noqa: E402

F = 1.8  # aic_frequency_mhz / 1000 of the default device: cycles per ns


@pytest.fixture(scope="module")
def small_resnet():
    return get_workload("resnet50", batch=1, image=32)


def test_columns_files_and_totals_match_the_simulated_run(small_resnet, tmp_path):
    p = op_perf(small_resnet, iterations=2, seed=4)
    res = sim.run(small_resnet, iterations=2, seed=4)
    truth = res.truth[res.truth["task_type"].astype(str).isin(["AI_CORE", "AI_VECTOR_CORE", "MIX_AIV", "AI_CPU"])]
    assert list(p.ops.columns) == list(COLUMNS)
    assert len(p.runs) == len(truth) and len(p.ops) == truth["op_name"].nunique()
    # every run's mcu_cycle is its simulated duration in cycles
    assert abs(p.ops["mcu_cycle"].sum() - truth["dur_ns"].sum() * F) <= len(truth)
    written = p.write(tmp_path)
    df = pd.read_csv(tmp_path / "op_perf.csv", keep_default_na=False, dtype=str)
    assert list(df.columns) == list(COLUMNS)
    for col in COLUMNS[1:]:
        assert (df[col] == "").all() == (col not in MODELLED), col
    one = tmp_path / "perf" / "resnet50_layer1_0_conv2_Conv2D.csv"
    assert one in written and len(pd.read_csv(one)) == 2  # one row per run
    assert (tmp_path / "op_perf_meta.json").is_file()


def test_counters_are_consistent():
    p = op_perf(get_workload("resnet50", batch=1, image=32), iterations=1, seed=0)
    r = p.ops
    conv = r[r["name"] == "resnet50/layer1/0/conv2/Conv2D"].iloc[0]
    relu = r[r["name"] == "resnet50/layer1/0/relu/Relu"].iloc[0]
    assert conv["mme_cycle"] > 0 and conv["mte_icmov_cycle"] > 0 and relu["mme_cycle"] == 0
    assert relu["vme_cycle"] > 0 and relu["mte_icmov_byte"] == 0
    for row in (conv, relu):
        assert row["mme_cycle"] <= row["mcu_cycle"] and row["vme_cycle"] <= row["mcu_cycle"]
        assert row["pal_mte_mme_cycle"] == min(row["mte_total_cycle"], row["mme_cycle"])
        assert row["mte_total_cycle"] == pytest.approx(
            row["mte_pld_cycle"] + row["mte_icmov_cycle"] + row["mte_l12llb_cycle"], abs=3)


def test_a_tuned_operator_changes_counters_with_its_time(small_resnet):
    name = "resnet50/layer2/0/conv2/Conv2D"
    base = op_perf(small_resnet, seed=1).ops.set_index("name").loc[name]
    slow = op_perf(small_resnet, seed=1, tuning={name: TuneChoice(impl="naive")}).ops.set_index("name").loc[name]
    fast = op_perf(small_resnet, seed=1, tuning={name: TuneChoice(format="FRACTAL_NZ", schedule="double_buffer")}
                   ).ops.set_index("name").loc[name]
    # the same FLOPs keep the mac pipe busy as long; the slow kernel's extra time is stalls
    assert slow["mcu_cycle"] > base["mcu_cycle"] and slow["mme_slot_wait_cycle"] > base["mme_slot_wait_cycle"]
    assert slow["mme_cycle"] == pytest.approx(base["mme_cycle"], rel=0.05)
    assert fast["mcu_cycle"] <= base["mcu_cycle"]


def test_op_perf_agrees_with_the_profilers_task_durations(small_resnet, tmp_path):
    collect = pytest.importorskip("msprof_py.collect.session")
    from msprof_py.parse.session import load

    res = collect.collect(small_resnet, output=tmp_path / "prof", iterations=2, seed=7, fixed_clock=True)
    perf = perf_from_sim(res.sim, small_resnet.graph)
    tasks = load(res.prof_dir, use_cache=False).tasks
    tasks = tasks[(tasks["dur_ns"] >= 0) & tasks["op_name"].astype(str).isin(set(perf.ops["name"]))]
    by_op = tasks.groupby(tasks["op_name"].astype(str))["dur_ns"].agg(["sum", "count"])
    ours = perf.ops.set_index("name")
    assert set(by_op.index) == set(ours.index)
    # the profiler measures on the 50 MHz device counter: each task within one 20 ns tick
    diff = np.abs(ours.loc[by_op.index, "mcu_cycle"].to_numpy(dtype=float) / F - by_op["sum"].to_numpy())
    assert (diff <= 20 * by_op["count"].to_numpy() + 1).all()
    total = ours["mcu_cycle"].sum() / F
    assert total == pytest.approx(tasks["dur_ns"].sum(), rel=1e-3)
    # and the exported op_summary (Task Duration in us), the table users read
    from click.testing import CliRunner

    from msprof_py.cli import cli

    r = CliRunner().invoke(cli, ["export", "--output", str(tmp_path / "prof")])
    assert r.exit_code == 0, r.output
    (summary,) = sorted((tmp_path / "prof").rglob("op_summary_0.csv"))
    op_sum = pd.read_csv(summary)
    op_sum = op_sum[op_sum["Op Name"].isin(set(ours.index))]
    per_op = op_sum.groupby("Op Name")["Task Duration(us)"].agg(["sum", "count"])
    assert set(per_op.index) == set(ours.index)
    diff_us = np.abs(ours.loc[per_op.index, "mcu_cycle"].to_numpy(dtype=float) / F / 1000 - per_op["sum"].to_numpy())
    assert (diff_us <= 0.021 * per_op["count"].to_numpy() + 1e-6).all()
    assert ours["mcu_cycle"].sum() / F / 1000 == pytest.approx(op_sum["Task Duration(us)"].sum(), rel=1e-3)

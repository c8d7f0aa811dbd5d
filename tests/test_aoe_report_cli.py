"""``msprof-py aoe-report``: summary, tables, exit codes, the profile join."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from msprof_py.aoe.report import aoe_report, join_profile
from msprof_py.aoe.reader import read_results
from msprof_py.cli import cli

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "aoe"
ROOT = Path(__file__).resolve().parent.parent


def test_cli_writes_csv_tables_and_reports_repairs(tmp_path):
    r = CliRunner().invoke(cli, ["aoe-report", str(FIX / "seed000_sgat_list_missing_comma.json"),
                                 str(FIX / "seed000_opat_list_clean.json"), "--output", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "2 tuning task(s)" in r.output and "1 repair(s)" in r.output
    assert "repaired: line 21: inserted a missing ','" in r.output
    ops = pd.read_csv(tmp_path / "aoe_operators.csv")
    assert ops["op_name"].tolist() == ["softmax", "Conv_125"]
    sg = pd.read_csv(tmp_path / "aoe_subgraphs.csv", dtype={"repo_key": str})
    assert sg["repo_key"].tolist() == ["1024942313106047484", "1024942313106057586"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["aoe_failed.csv", "aoe_operators.csv", "aoe_subgraphs.csv",
                                                          "aoe_tasks.csv"]


def test_cli_json_format(tmp_path):
    r = CliRunner().invoke(cli, ["aoe-report", str(FIX / "seed001_opat_report_clean.json"), "--format", "json",
                                 "--output", str(tmp_path)])
    assert r.exit_code == 0, r.output
    tasks = json.loads((tmp_path / "aoe_tasks.json").read_text())
    assert [t["tid"] for t in tasks] == ["140231", "140232"]
    assert tasks[0]["baseline_ms"] is None


def test_cli_strict_refuses(tmp_path):
    r = CliRunner().invoke(cli, ["aoe-report", "--strict", str(FIX / "seed000_opat_list_verbatim.json"),
                                 "--output", str(tmp_path)])
    assert r.exit_code == 8
    assert "strict mode refuses" in r.output and "Traceback" not in r.output
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("name, code", [("bad_empty.json", 8), ("bad_not_json.json", 8),
                                        ("bad_wrong_schema.json", 8), ("bad_wrong_types.json", 8)])
def test_cli_bad_input(tmp_path, name, code):
    r = CliRunner().invoke(cli, ["aoe-report", str(FIX / name), "--output", str(tmp_path)])
    assert r.exit_code == code
    assert r.output.startswith("msprof-py: error: ") and name in r.output
    assert r.output.count("\n") == 1 and "Traceback" not in r.output


def test_cli_empty_directory(tmp_path):
    r = CliRunner().invoke(cli, ["aoe-report", str(tmp_path), "--output", str(tmp_path / "out")])
    assert r.exit_code == 2 and "no AOE result files" in r.output


def test_profile_join():
    ops = read_results([FIX / "seed000_opat_list_clean.json"]).operators
    tasks = pd.DataFrame({
        "op_name": pd.Categorical(["softmax", "softmax", "Conv_125", "other", "hostonly"]),
        "op_type": pd.Categorical(["SoftmaxV2", "SoftmaxV2", "Conv2D", "Add", "Add"]),
        "dur_ns": [100_000, 140_000, 60_000, 100_000, -1],
    })
    j = join_profile(ops, tasks).set_index("op_name")
    assert j.loc["softmax", ["task_count", "profile_total_us", "profile_avg_us", "profile_share_pct"]].tolist() == \
        [2, 240.0, 120.0, 60.0]
    assert j.loc["Conv_125", "profile_share_pct"] == 15.0
    assert j.loc["softmax", "aoe_before_us"] == 134 and j.loc["softmax", "aoe_after_us"] == 99


def test_profile_join_via_report(tmp_path):
    tasks = pd.DataFrame({"op_name": ["softmax"], "op_type": ["SoftmaxV2"], "dur_ns": [1000]})
    out = aoe_report([FIX / "seed000_opat_list_clean.json"], output=tmp_path, profile=tmp_path,
                     load_tasks=lambda p: tasks)
    assert "1 of 2 tuned operator(s) found" in out.summary
    assert any("do not appear in the profile" in w for w in out.warnings)
    assert (tmp_path / "aoe_profile_join.csv").exists()


def test_subprocess_run(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "msprof_py", "aoe-report", str(FIX), "--output", str(tmp_path)],
                       capture_output=True, text=True, env=env, timeout=60)
    # the fixture directory holds no aoe_result_* names: a clear error, exit code 2
    assert p.returncode == 2 and "no AOE result files" in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "msprof_py", "aoe-report", str(FIX / "seed002_opat_bare_verbatim.json"),
                        "--output", str(tmp_path)], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "调优任务名" in p.stdout and p.stderr.count("repaired:") == 5

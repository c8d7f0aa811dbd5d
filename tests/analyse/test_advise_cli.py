"""msprof-py advise / diff / export's summary report: CliRunner, one real subprocess, msprof's
prof_rule layout, bad input."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import msprof_py
from msprof_py.cli import cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
OUT = "mindstudio_profiler_output"


def _skeleton(doc: dict) -> list:
    return [(kind, [(r["Rule Type"], r["Rule Description"]) for r in items]) for kind, items in doc["data"].items()]


def test_prof_rule_has_msprofs_layout(runs) -> None:
    r = CliRunner().invoke(cli, ["advise", "--output", str(runs["aicpu"])])
    assert r.exit_code == 0, r.output
    ours = json.loads((runs["aicpu"] / OUT / "prof_rule_0.json").read_text())
    real = json.loads((FIXTURES / "advise" / "prof_rule_0_real.json").read_text())
    assert list(ours) == list(real) == ["status", "data"] and ours["status"] == 0
    assert _skeleton(ours) == _skeleton(real)
    (proc,) = [x for x in ours["data"]["Op Summary"] if x["Rule Type"] == "Operator Processing"]
    assert proc["result"][0]["Tuning Data"] == ["l2/Add"]
    assert set(proc["result"][0]) == set(real["data"]["Op Summary"][1]["result"][0])
    # msprof's serial AI CPU / AI Core check: the forced AI CPU op runs alone
    (par,) = ours["data"]["Op Parallel"]
    assert par["result"][0]["Tuning Data"]["AI CPU Execution Time(us)"] > 0
    assert "time at stake: 1," in r.output and "ops: l2/Add" in r.output


def test_tune_ops_file_is_accepted_by_tune(runs) -> None:
    from msprof_py.aoe.ops import load_tune_ops_file

    r = CliRunner().invoke(cli, ["advise", "--output", str(runs["slow_kernel"]), "--format", "json"])
    assert r.exit_code == 0, r.output
    f = runs["slow_kernel"] / OUT / "aoe_tune_ops.json"
    assert load_tune_ops_file(f).names == frozenset({"l2/MatMulV2"})
    doc = json.loads((runs["slow_kernel"] / OUT / "advice.json").read_text())
    # the slow kernel is slower than its twin and (simulated PMU) keeps its cube pipe under half busy
    assert sorted(x["rule"] for x in doc["findings"]) == ["aoe_candidates", "low_utilisation"]
    assert all(x["ops"] == ["l2/MatMulV2"] for x in doc["findings"])


def test_export_prints_the_performance_summary_report(runs, tmp_path) -> None:
    import shutil
    prof = tmp_path / runs["aicpu"].name
    shutil.copytree(runs["aicpu"], prof)
    r = CliRunner().invoke(cli, ["export", "--output", str(prof)])
    assert r.exit_code == 0, r.output
    assert "Performance Summary Report:" in r.output and "1. Computation:\n\tN/A" in r.output
    assert "4. Operator Processing:\n\t1)1 operator(s) of types with AI Core kernels ran on the AI CPU" in r.output
    assert (prof / OUT / "prof_rule_0.json").exists()


def test_advise_bad_input_is_one_line(tmp_path) -> None:
    (tmp_path / "PROF_000001_20260101000000000_ABCDEFGHIJKLMNOP").mkdir()
    r = CliRunner().invoke(cli, ["advise", "--output", str(tmp_path)])
    assert r.exit_code != 0 and "Traceback" not in r.output
    r = CliRunner().invoke(cli, ["advise", "--output", str(tmp_path / "nope")])
    assert r.exit_code != 0 and "Traceback" not in r.output


def test_diff_cli_and_api(runs, tmp_path) -> None:
    r = CliRunner().invoke(cli, ["diff", str(runs["clean"]), str(runs["slow_kernel"]), "--output", str(tmp_path / "d"),
                                 "--format", "html"])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [
        "diff.html", "diff_iterations.csv", "diff_op_types.csv", "diff_ops.csv", "diff_phases.csv"]
    res = msprof_py.diff(runs["clean"], runs["slow_kernel"])
    top = res.ops.iloc[0]
    assert top["name"] == "l2/MatMulV2" and top["share"] > 0.9
    change = res.new_iteration_us - res.base_iteration_us
    assert res.ops["delta_per_iter_us"].sum() == pytest.approx(change)
    other = res.ops[res.ops["status"] == "other"]["delta_per_iter_us"].iloc[0]
    assert abs(other) < 0.05 * change  # the ops account for the change


def test_diff_renamed_added_removed(runs) -> None:
    s = msprof_py.load(runs["clean"])
    t = s.tasks.copy()
    t["op_name"] = t["op_name"].astype(str).replace({"out/Relu": "out/Relu_1"})
    b = msprof_py.load(runs["clean"])
    b.tasks = t
    res = msprof_py.diff(s, b)
    st = dict(zip(res.ops["name"], res.ops["status"]))
    assert st["out/Relu -> out/Relu_1"] == "renamed"
    t2 = s.tasks[s.tasks["op_name"].astype(str) != "l1/Add"]
    c = msprof_py.load(runs["clean"])
    c.tasks = t2
    res = msprof_py.diff(s, c)
    assert dict(zip(res.ops["name"], res.ops["status"]))["l1/Add"] == "removed"
    res = msprof_py.diff(c, s)
    assert dict(zip(res.ops["name"], res.ops["status"]))["l1/Add"] == "added"


def test_diff_reads_exported_folders(runs, tmp_path) -> None:
    import shutil
    prof = tmp_path / runs["slow_kernel"].name
    shutil.copytree(runs["slow_kernel"], prof)
    assert CliRunner().invoke(cli, ["export", "--output", str(prof)]).exit_code == 0
    a = msprof_py.diff(runs["clean"], prof)
    b = msprof_py.diff(runs["clean"], prof / OUT)
    assert a.ops.drop(columns=["share"]).round(3).equals(b.ops.drop(columns=["share"]).round(3))


def test_advise_subprocess(runs) -> None:
    r = subprocess.run([sys.executable, "-m", "msprof_py", "advise", "--output", str(runs["sync_each"])],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Synchronisation on the hot path" in r.stdout


def test_advise_unwritable_output_is_one_line(runs, tmp_path) -> None:
    import shutil
    prof = tmp_path / runs["clean"].name
    shutil.copytree(runs["clean"], prof)
    (prof / OUT).mkdir(exist_ok=True)
    (prof / OUT / "prof_rule_0.json").mkdir()  # a directory where the file must go
    r = CliRunner().invoke(cli, ["advise", "--output", str(prof)])
    assert r.exit_code != 0 and "Traceback" not in r.output and "prof_rule_0.json" in r.output


def test_diff_bad_inputs_are_one_line(runs, tmp_path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "op_summary_0.csv").write_text("not,a,summary\n1,2,3\n")
    for args in (["diff", str(tmp_path / "empty"), str(runs["clean"])],
                 ["diff", str(runs["clean"]), str(tmp_path / "bad"), "--output", str(tmp_path / "o")]):
        r = CliRunner().invoke(cli, args)
        assert r.exit_code != 0, r.output
        assert "Traceback" not in r.output and r.output.count("\n") <= 2, r.output

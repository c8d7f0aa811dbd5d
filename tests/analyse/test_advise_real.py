"""advise on the real Ascend captures of fixtures/real (copies): no error, msprof's layout, and
the PMU rule on real PipeUtilization counters."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import msprof_py
from msprof_py.analyse.advise import findings
from msprof_py.cli import cli

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
OUT = "mindstudio_profiler_output"


@pytest.mark.parametrize("name", sorted(p.name for p in REAL.iterdir() if p.is_dir()))
def test_advise_runs_on_real_captures(name: str, tmp_path: Path) -> None:
    src = next(p for p in (REAL / name).rglob("PROF_*") if p.is_dir()) if not (REAL / name / "host").exists() \
        else REAL / name
    prof = tmp_path / src.name
    shutil.copytree(src, prof)
    r = CliRunner().invoke(cli, ["advise", "--output", str(prof), "--format", "html"])
    assert r.exit_code == 0, r.output
    doc = json.loads((prof / OUT / "prof_rule_0.json").read_text())
    assert doc["status"] == 0 and list(doc["data"]) == ["Op Summary", "Op Parallel", "Model Summary"]
    assert (prof / OUT / "advice.html").stat().st_size > 0


def test_low_utilisation_on_real_pmu_counters(tmp_path: Path) -> None:
    """FastGelu on the 310B: vector pipe busy 10.6% and MTE2 12.3% of the task (PipeUtilizationExct,
    scalar-bound): flagged as low utilisation, time at stake = the PMU's busy time (3.56 us of the
    10.3 us task) x (1 - 0.106 / 0.7)."""
    prof = tmp_path / "fg"
    shutil.copytree(REAL / "310b_fastgelu", prof)
    s = msprof_py.load(prof)
    (f,) = findings(s, ["low_utilisation"])
    assert f.ops == ["FastGelu"]
    util = float(s.pmu["vec_exe_ratio"].iloc[0])
    busy = float(s.pmu["total_time"].iloc[0]) * 1000
    assert busy < int(s.tasks.loc[s.tasks["op_name"].astype(str) == "FastGelu", "dur_ns"].sum())
    assert f.time_at_stake_ns == pytest.approx(busy * (1 - util / 0.7), abs=1)
    assert findings(s, ["memory_bound"]) == []  # MTE2 is not the bottleneck there


def test_a_device_without_data_still_gets_its_prof_rule(tmp_path: Path) -> None:
    """msprof writes prof_rule_0.json (empty results) for a device folder that recorded nothing
    (a real 310B capture in ../shared/realdata has one); so do we, with exit 0."""
    src = next(p for p in (REAL / "310b_fastgelu").rglob("PROF_*") if p.is_dir())
    prof = tmp_path / src.name
    shutil.copytree(src, prof)
    shutil.rmtree(prof / "device_0" / "data")
    r = CliRunner().invoke(cli, ["advise", "--output", str(prof)])
    assert r.exit_code == 0, r.output
    doc = json.loads((prof / OUT / "prof_rule_0.json").read_text())
    assert doc["status"] == 0 and all(not x["result"] for x in doc["data"]["Op Summary"])

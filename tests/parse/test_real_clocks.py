"""Clock rule (parse/clocks.py) on trimmed real captures (fixtures/real, origin in its README):
every device task start and every API start equals, to the printed ns, what msprof wrote."""
from __future__ import annotations

import csv
import shutil
from decimal import Decimal
from pathlib import Path

import orjson
import pytest

from msprof_py.parse.clocks import rule_for
from msprof_py.parse.session import load

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
CASES = {"310b_fastgelu": "python", "910b_ascendc_add_b1": "cpp", "910b_torch_mul_b1": "cpp"}


def _copy(tmp_path: Path, name: str) -> Path:
    src = next((REAL / name).glob("PROF_*"))
    dst = tmp_path / src.name
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("mindstudio_profiler_output", "*.db"))
    return dst


def _ns(text: str) -> int:
    return int(Decimal(text.strip()) * 1000)


@pytest.mark.parametrize("name", sorted(CASES))
def test_task_and_api_times_equal_msprof(tmp_path: Path, name: str) -> None:
    prof_src = next((REAL / name).glob("PROF_*"))
    out = prof_src / "mindstudio_profiler_output"
    s = load(_copy(tmp_path, name), use_cache=False)
    from msprof_py.parse.session import result_dirs
    from msprof_py.errors import WarningLog
    host, devs = result_dirs(prof_src, WarningLog())
    assert rule_for([host, *devs]) == CASES[name]

    tt = next(out.glob("task_time_*.csv"))
    expected = {(int(r["stream_id"]), int(r["task_id"])): _ns(r["task_start(us)"])
                for r in csv.DictReader(tt.open())}
    t = s.tasks[s.tasks["start_ns"] >= 0]
    ours = {}
    for st, tk, start in zip(t["stream_id"], t["task_id"], t["start_ns"]):
        ours.setdefault((int(st), int(tk)), int(start))
    common = set(expected) & set(ours)
    assert len(common) >= min(len(expected), 5)
    off = sorted(ours[k] - expected[k] for k in common)
    assert off[0] >= -1 and off[-1] <= 1, (off[0], off[-1])  # within the printed digit

    trace = orjson.loads(next(out.glob("msprof_*.json")).read_bytes())
    api_ts = sorted(_ns(str(e["ts"])) for e in trace if e.get("ph") == "X" and str(e.get("name", "")).startswith("AscendCL@"))
    ours_api = sorted(int(v) for v, lv in zip(s.api["start_ns"], s.api["level"]) if lv == "acl")
    assert api_ts and set(api_ts) <= {v + d for v in ours_api for d in (-1, 0, 1)}


def test_api_with_begin_zero_is_kept(tmp_path: Path) -> None:
    """310B: the first aclrtSetDevice has begin 0 (it started before profiling); msprof counts it
    in api_statistic with duration = its end counter converted (178779560478.79 us there)."""
    s = load(_copy(tmp_path, "310b_fastgelu"), use_cache=False)
    assert not [m for m in s.warnings if "api_event" in m]
    sd = s.api[s.api["name"].astype(str) == "aclrtSetDevice"]
    assert len(sd) == 1
    expected = {r["API Name"]: r for r in csv.DictReader(next(
        (next((REAL / "310b_fastgelu").glob("PROF_*")) / "mindstudio_profiler_output").glob("api_statistic_*.csv")).open())}
    assert abs(int(sd["dur_ns"].iloc[0]) - _ns(expected["aclrtSetDevice"]["Time(us)"])) <= 1


@pytest.mark.parametrize("name", ["910b_ascendc_add_b1", "910b_pypto_mul_b1"])
def test_real_capture_joins_without_warning(tmp_path: Path, name: str) -> None:
    """Every host task finds its device log (MIX sub-tasks too: expandStatus ids); the lone
    device-only PLACE_HOLDER_SQE is normal (msprof shows it under its device type)."""
    s = load(_copy(tmp_path, name), use_cache=False)
    assert not (s.tasks["match"] == "host_only").any()
    assert not [m for m in s.warnings if "host/device join" in m]
    assert s.tasks["stream_id"].max() < 100  # no phantom streams from misread MIX logs

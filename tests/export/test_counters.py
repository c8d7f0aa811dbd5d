"""aicpu / dp / l2_cache / msprof_tx on the simulator: golden files, switches, timeline, bad input.

One tiny collected run (``mlp_train`` graph, 2 iterations, an aclnn NonZero, acl.prof marks and
ranges; ``--fixed-clock`` so the bytes are reproducible) exported once per module.  The golden
files were checked against msprof's own Python analysis of a copy of the same PROF dir (every
cell equal; README "AI CPU, L2 cache, data preprocess, msproftx").  Regenerate them (after
checking the diff is intended) with ``pytest tests/export/test_counters.py --regen-golden``.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import msprof_py
from msprof_py.cli import cli
from msprof_py.parse import counters
from msprof_py.raw import aicpu as raw_aicpu, l2_cache as raw_l2

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden_counters"
FILES = ("aicpu_0.csv", "dp_0.csv", "l2_cache_0.csv", "msprof_tx.csv", "msprof_tx.json")
ALL_ON = '{"aicpu": "on", "l2": "on", "msproftx": "on"}'
# the run behind the golden files (shared with benchmarks/counters_vs_msprof.py)
SCRIPT = ROOT / "fixtures" / "scripts" / "counters_train.py"


def _collect(tmp: Path, options: str | None) -> Path:
    out = tmp / "out"
    args = ["collect", "--fixed-clock", "--output", str(out)] + (["--options", options] if options else [])
    res = CliRunner().invoke(cli, args + ["--", "python", str(SCRIPT)])
    assert res.exit_code == 0, res.output
    (prof,) = [p for p in out.iterdir() if p.name.startswith("PROF_")]
    return prof


def _export(prof: Path) -> Path:
    res = CliRunner().invoke(cli, ["export", "--output", str(prof)])
    assert res.exit_code == 0, res.output
    return prof / "mindstudio_profiler_output"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    prof = _collect(tmp_path_factory.mktemp("counters"), ALL_ON)
    _export(prof)
    return prof


@pytest.mark.parametrize("name", FILES)
def test_golden(exported: Path, name: str, regen_golden: bool) -> None:
    got = (exported / "mindstudio_profiler_output" / name).read_bytes()
    if regen_golden:
        GOLDEN.mkdir(exist_ok=True)
        (GOLDEN / name).write_bytes(got)
        pytest.skip("golden file regenerated")
    assert got == (GOLDEN / name).read_bytes(), f"{name} differs from its golden file"


def test_values_follow_the_model(exported: Path) -> None:
    s = msprof_py.load(exported)
    a = s.aicpu
    assert len(a) == 3 and set(a["op_name"]) == {"metrics/NonZero", "aclnnNonZero_NonZeroAiCore_NonZero"}
    # the run lies inside its STARS task window; compute + memcpy fit in the run
    assert (a["task_ns"] > 0).all() and (a["compute_us"] + a["memcpy_us"] <= a["task_ns"] / 1000).all()
    assert (a["total_ns"] > a["task_ns"]).all()  # dispatch + the whole task window
    assert list(s.dp["size"]) == [63, 63] and set(s.dp["source"]) == {"iterator_default"}
    l2 = s.l2_cache
    assert l2["hit_rate"].isna().all()  # N/A on the 910B, as msprof
    assert ((l2["victim_rate"] >= 0) & (l2["victim_rate"] < 0.08)).all() and (l2["op_name"] != "N/A").all()
    tx = s.msproftx
    assert list(tx["message"]) == ["begin", "step 0", "execute", "step 1", "execute"]
    assert list(tx["event_type"]) == ["marker", "start/end", "push/pop", "start/end", "push/pop"]
    step0, exe0 = tx.iloc[1], tx.iloc[2]
    assert step0.start_ns <= exe0.start_ns and exe0.end_ns <= step0.end_ns


def test_timeline_has_the_msproftx_process(exported: Path) -> None:
    events = json.loads((exported / "mindstudio_profiler_output" / "msprof_0.json").read_bytes())
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    tx_pid = [p for p, n in names.items() if p & 0x3FF == (6 << 5 | 31)]
    assert len(tx_pid) == 1 and names[tx_pid[0]] == "python3"
    marks = [e for e in events if e.get("ph") == "X" and e["pid"] == tx_pid[0]]
    assert [e["name"] for e in marks] == ["begin", "step 0", "execute", "step 1", "execute"]
    assert not (exported / "mindstudio_profiler_output" / "msprof_64.json").exists()  # no host "device" file
    assert marks[0]["dur"] == 0 and marks[0]["args"] == {"Category": "0", "Payload_type": 0, "Payload_value": 0,
                                                         "Message_type": 0, "event_type": "marker"}


def test_switches_off_write_nothing(tmp_path: Path) -> None:
    prof = _collect(tmp_path, None)
    names = {p.name for p in prof.rglob("*")}
    assert not any(n.startswith(("aicpu.data", "l2_cache.data")) or "msproftx" in n for n in names)
    sample = json.loads((prof / "device_0" / "sample.json").read_text())
    assert (sample["aicpuTrace"], sample["l2CacheTaskProfiling"], sample["msproftx"]) == ("off", "off", "off")
    out = _export(prof)
    assert not [f for f in FILES if (out / f).exists()]
    assert not list(out.glob("msprof_tx*"))


def test_bad_switch_value_is_one_line_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["collect", "--workload", "single_op", "--output", str(tmp_path / "o"),
                                   "--options", '{"l2": "maybe"}'])
    assert res.exit_code != 0 and "'l2' must be one of on, off" in res.output and "Traceback" not in res.output


def test_l2_events_missing_from_sample_json_is_a_warning(exported: Path, tmp_path: Path) -> None:
    prof = tmp_path / exported.name
    shutil.copytree(exported, prof, ignore=shutil.ignore_patterns("mindstudio_profiler_*"))
    sample = prof / "device_0" / "sample.json"
    s = json.loads(sample.read_text())
    s["l2CacheTaskProfilingEvents"] = "0xfb,0x90"
    sample.write_text(json.dumps(s))
    session = msprof_py.load(prof)
    assert session.l2_cache.empty
    assert any("l2CacheTaskProfilingEvents" in w and "sample.json" in w for w in session.warnings.messages)


def test_truncated_aicpu_file_keeps_whole_records(exported: Path, tmp_path: Path) -> None:
    prof = tmp_path / exported.name
    shutil.copytree(exported, prof, ignore=shutil.ignore_patterns("mindstudio_profiler_*"))
    (f,) = (prof / "device_0" / "data").glob("aicpu.data.0.slice_0")
    data = f.read_bytes()
    f.write_bytes(data[:-100])  # the last record (the aclnnNonZero run) cut
    for done in f.parent.glob("aicpu.data.0.slice_0.done"):
        done.unlink()
    session = msprof_py.load(prof)
    assert len(session.aicpu) == 2 and len(session.dp) == 2
    assert any("aicpu.data.0.slice_0" in w for w in session.warnings.messages)


def test_l2_rates_follow_msprofs_formula() -> None:
    """hit = (0x90 + 0x91) / (0xfb + 0xfc), victim = 0x9c / (0xfb + 0xfc); 0 without requests;
    the hit rate is shown on a non-STARS chip (platform 2: 0x6a / (0x78 + 0x79))."""
    from types import SimpleNamespace

    from msprof_py.errors import WarningLog

    ev = np.zeros((3, raw_l2.N_EVENTS), np.uint64)
    ev[0, :5] = [300, 100, 200, 50, 40]
    ev[1, :5] = [3, 0, 1, 0, 0]
    l2 = {"stream_id": np.array([1, 1, 2]), "task_id": np.array([1, 2, 3]), "task_type": np.zeros(3, np.int64),
          "events": ev}
    rd = SimpleNamespace(info={"platform_version": "2"}, sample={"l2CacheTaskProfilingEvents": "0x78,0x79,0x6a,0x0,0x71"},
                         path=Path("/x"))
    import pandas as pd
    out = counters._l2(0, rd, l2, pd.DataFrame(columns=["stream_id", "task_id", "op_name"]), WarningLog())
    assert list(out["hit_rate"]) == [round(200 / 400, 6), round(1 / 3, 6), 0.0]
    assert list(out["victim_rate"]) == [round(40 / 400, 6), 0.0, 0.0]
    assert list(out["op_name"]) == ["N/A"] * 3


def test_record_layouts_are_msprofs() -> None:
    import struct

    assert raw_aicpu.NODE_DTYPE.itemsize == raw_aicpu.DP_DTYPE.itemsize == 256
    assert raw_aicpu.NODE_DTYPE.fields["version"][1] == struct.calcsize("=HHIIIQHHIQQQQQQQIIQQQQIIIH")
    assert raw_aicpu.DP_DTYPE.fields["size"][1] == struct.calcsize("=HHIIIQ16s64sQ")
    assert raw_l2.DTYPE.itemsize == struct.calcsize("=HHHH8Q")
    from msprof_py.raw import msproftx
    assert msproftx.DTYPE.itemsize == struct.calcsize("=HH3IQ2HI2H4Ii5Qi156s")
    assert msproftx.DTYPE.fields["message"][1] == struct.calcsize("=HH3IQ2HI2H4Ii5Qi")


def test_selected_iteration_keeps_its_ai_cpu_runs(exported: Path, tmp_path: Path) -> None:
    """msprof keeps the AI CPU runs inside the selected iterations (checked against its Python
    analysis with --model-id 1 --iteration-id 1 and 2: all four files equal); the dp, l2_cache
    and msprof_tx files are not cut by iteration there either."""
    prof = tmp_path / exported.name
    shutil.copytree(exported, prof, ignore=shutil.ignore_patterns("mindstudio_profiler_*"))
    res = CliRunner().invoke(cli, ["export", "--output", str(prof), "--model-id", "1", "--iteration-id", "2"])
    assert res.exit_code == 0, res.output
    out = prof / "mindstudio_profiler_output"
    rows = (out / "aicpu_0_1_2.csv").read_text().splitlines()
    full = (GOLDEN / "aicpu_0.csv").read_text().splitlines()
    assert rows == [full[0], full[2]]  # iteration 2's NonZero only (not iteration 1's, not the aclnn call after)
    assert (out / "dp_0_1_2.csv").read_bytes() == (GOLDEN / "dp_0.csv").read_bytes()
    assert (out / "l2_cache_0_1_2.csv").read_bytes() == (GOLDEN / "l2_cache_0.csv").read_bytes()

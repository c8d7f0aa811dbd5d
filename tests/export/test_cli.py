"""``msprof-py export`` end to end on the fixture PROF dir: options, msprof's messages and exit
codes, atomic writes, deterministic bytes, and one real subprocess run."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from msprof_py.cli import cli

OUT = "mindstudio_profiler_output"


def run(*args: str):
    return CliRunner().invoke(cli, ["export", *args], catch_exceptions=False)


def outputs(prof: Path) -> dict[str, bytes]:
    files = {p.name: p.read_bytes() for p in (prof / OUT).iterdir()}
    files.update({p.name: p.read_bytes() for p in prof.glob("msprof_*.db")})
    return files


def test_export_writes_named_files_readme_and_clean_log(small_prof: Path) -> None:
    r = run("--output", str(small_prof))
    assert r.exit_code == 0, r.output
    names = set(os.listdir(small_prof / OUT))
    assert {"msprof_0.json", "op_summary_0.csv", "op_statistic_0.csv", "step_trace_0.csv", "task_time_0.csv",
            "api_statistic.csv", "README.txt"} <= names
    assert (small_prof / "msprof_20260101000000.db").exists()
    readme = (small_prof / OUT / "README.txt").read_text()
    assert readme.startswith("Timeline file description:\n1.")
    assert "op_summary_0.csv:" in readme
    logs = list((small_prof / "mindstudio_profiler_log").glob("*.log"))
    assert logs and not any("[ERROR]" in p.read_text().upper() for p in logs)
    assert "wrote" in r.output and "op_summary_0.csv" in r.output


def test_parent_dir_with_several_prof_dirs(small_prof: Path) -> None:
    r = run("--output", str(small_prof.parent))
    assert r.exit_code == 0, r.output
    assert (small_prof / OUT / "op_summary_0.csv").exists()


def test_model_and_iteration_export_exactly_that_window(small_prof: Path) -> None:
    r = run("--output", str(small_prof), "--model-id", "1", "--iteration-id", "2")
    assert r.exit_code == 0, r.output
    with open(small_prof / OUT / "step_trace_0_1_2.csv", newline="") as fp:
        steps = list(csv.DictReader(fp))
    assert [s["Iteration ID"] for s in steps] == ["2"]
    end = float(steps[0]["Iteration End(us)"])
    lo = end - float(steps[0]["Iteration Time(us)"])
    with open(small_prof / OUT / "op_summary_0_1_2.csv", newline="") as fp:
        ops = list(csv.DictReader(fp))
    assert ops and all(lo < float(o["Task Start Time(us)"]) <= end for o in ops)
    assert not (small_prof / OUT / "op_summary_0.csv").exists()


@pytest.mark.parametrize("args, code, message", [
    (["--model-id", "1"], 1, "Please set 'model-id' and 'iteration-id' simultaneously"),
    (["--iteration-id", "1"], 1, "Please set 'model-id' and 'iteration-id' simultaneously"),
    (["--model-id", "7", "--iteration-id", "1"], 1,
     "The model id 7 is invalid. Must select from {1, 2}. Please enter a valid model id."),
    (["--model-id", "1", "--iteration-id", "9"], 9,
     "The exported iteration 9 is invalid for model id 1. Please enter a valid iteration within 1-3."),
])
def test_bad_ids_give_msprofs_messages(small_prof: Path, args, code, message) -> None:
    r = run("--output", str(small_prof), *args)
    assert r.exit_code == code
    assert message in r.output
    assert "Traceback" not in r.output


def test_not_a_prof_dir(tmp_path: Path) -> None:
    r = run("--output", str(tmp_path))
    assert r.exit_code == 2 and "does not have PROF dir" in r.output


def test_reports_file(small_prof: Path, tmp_path: Path) -> None:
    good = tmp_path / "reports.json"
    good.write_text('{"json_process": {"ascend": true, "cann": false}}')
    assert run("--output", str(small_prof), "--reports", str(good)).exit_code == 0
    text = (small_prof / OUT / "msprof_0.json").read_text()
    assert '"Ascend Hardware"' in text and '"CANN"' not in text
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = run("--output", str(small_prof), "--reports", str(bad))
    assert r.exit_code == 0 and "exporting every timeline layer" in r.output
    assert '"CANN"' in (small_prof / OUT / "msprof_0.json").read_text()
    r = run("--output", str(small_prof), "--reports", str(tmp_path / "missing.json"))
    assert r.exit_code == 2 and "cannot be read" in r.output


def test_summary_format_json(small_prof: Path) -> None:
    import json
    r = run("--output", str(small_prof), "--summary-format", "json")
    assert r.exit_code == 0, r.output
    rows = json.loads((small_prof / OUT / "op_summary_0.json").read_bytes())
    assert rows and rows[0]["Device_id"] == 0 and isinstance(rows[0]["Task Start Time(us)"], str)


def test_type_db_writes_only_the_db(small_prof: Path) -> None:
    r = run("--output", str(small_prof), "--type", "db")
    assert r.exit_code == 0, r.output
    assert (small_prof / "msprof_20260101000000.db").exists()
    assert not (small_prof / OUT).exists()


def test_clear_removes_the_parse_cache(small_prof: Path) -> None:
    assert run("--output", str(small_prof)).exit_code == 0
    from msprof_py.parse.cache import cache_dir
    assert cache_dir(small_prof).exists() and not (small_prof / "msprof_py_cache").exists()
    assert run("--output", str(small_prof), "--clear").exit_code == 0
    assert not cache_dir(small_prof).exists()


def test_rerun_gives_identical_bytes(small_prof: Path) -> None:
    assert run("--output", str(small_prof)).exit_code == 0
    first = outputs(small_prof)
    assert run("--output", str(small_prof), "--clear").exit_code == 0  # second run reads the cache
    assert outputs(small_prof) == first


def test_interrupted_export_leaves_no_half_written_file(small_prof: Path, monkeypatch) -> None:
    from msprof_py.export import rows

    real = rows.RowBuilder.chunks

    def dying(self, chunk_rows=rows.CHUNK_ROWS, **kw):
        it = real(self, chunk_rows=1, **kw)
        yield next(it)
        raise KeyboardInterrupt  # Ctrl-C in the middle of a file

    monkeypatch.setattr(rows.RowBuilder, "chunks", dying)
    r = CliRunner().invoke(cli, ["export", "--output", str(small_prof)])
    assert r.exit_code == 130
    out = small_prof / OUT
    leftovers = [p.name for p in out.iterdir()] if out.exists() else []
    assert leftovers == [], leftovers


def test_installed_command_subprocess(small_prof: Path) -> None:
    script = Path(sys.executable).parent / "msprof-py"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "msprof_py"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    p = subprocess.run([*cmd, "export", "--output", str(small_prof)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert (small_prof / OUT / "msprof_0.json").exists()
    assert "Traceback" not in p.stderr


def test_parse_warnings_reach_the_export_log(small_prof: Path) -> None:
    """README: parse warnings are printed once and written to the export log."""
    (small_prof / "device_0" / "data" / "mystery.data.0.slice_0").write_bytes(b"x")  # an unknown kind
    result = run("--output", str(small_prof))
    assert result.exit_code == 0
    log = (small_prof / "mindstudio_profiler_log" / "msprof_py_export.log").read_text()
    lines = [line for line in log.splitlines() if "unknown raw file kinds" in line]
    assert len(lines) == 1 and lines[0].startswith("[WARNING]") and "mystery.data" in lines[0]

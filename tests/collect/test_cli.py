"""``msprof-py collect`` through click's CliRunner, and one real subprocess run."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from msprof_py.cli import cli
from msprof_py.raw import files

HAVE_RUNTIME = importlib.util.find_spec("msprof_py.runtime.sim") is not None
needs_runtime = pytest.mark.skipif(not HAVE_RUNTIME, reason="msprof_py.runtime.sim has not landed yet")


def _invoke(*args: str):
    return CliRunner().invoke(cli, ["collect", *args])


def _prof_dirs(out: Path) -> list[Path]:
    return [p for p in out.iterdir() if files.PROF_DIR_RE.match(p.name)] if out.exists() else []


def _one_line_error(result, *needles: str) -> None:
    assert result.exit_code != 0
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("msprof-py: error: "), result.output
    assert "Traceback" not in result.output
    for n in needles:
        assert n in lines[0], lines[0]


def test_no_target_is_an_error(tmp_path: Path) -> None:
    _one_line_error(_invoke("--output", str(tmp_path)), "exactly one of")


def test_two_targets_are_an_error(tmp_path: Path) -> None:
    _one_line_error(_invoke("--workload", "resnet50", "--graph", "g.json", "--output", str(tmp_path)), "exactly one of")


def test_missing_output_is_an_error() -> None:
    _one_line_error(_invoke("--workload", "resnet50"), "no output directory")


@pytest.mark.parametrize("options, needle", [
    ('{"task_trace": "sometimes"}', "'task_trace' must be one of"),
    ('{"task_trace": "on",', "malformed JSON at line 1"),
    ("missing_options.json", "neither a JSON object nor an existing file"),
])
def test_bad_options_are_one_line_errors(tmp_path: Path, options: str, needle: str) -> None:
    _one_line_error(_invoke("--workload", "resnet50", "--output", str(tmp_path / "o"), "--options", options), needle)
    assert not (tmp_path / "o").exists()


def test_script_mode_needs_a_python_script(tmp_path: Path) -> None:
    _one_line_error(_invoke("--output", str(tmp_path), "--", "ls", "-l"), "can only profile a Python script")
    _one_line_error(_invoke("--output", str(tmp_path), "--", "python", str(tmp_path / "nope.py")), "does not exist")


def test_output_under_a_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    _one_line_error(_invoke("--workload", "resnet50", "--output", str(tmp_path / "f" / "o")),
                    "cannot create output directory")


def test_help_lists_the_three_forms() -> None:
    result = _invoke("--help")
    assert result.exit_code == 0 and "--workload" in result.output and "--graph" in result.output
    assert "python my_script.py" in result.output


@needs_runtime
def test_unknown_workload_lists_the_valid_ones(tmp_path: Path) -> None:
    _one_line_error(_invoke("--workload", "alexnet", "--output", str(tmp_path)), "alexnet", "resnet50")
    assert _prof_dirs(tmp_path) == []


@needs_runtime
def test_workload_run_prints_where_and_a_summary(tmp_path: Path) -> None:
    result = _invoke("--workload", "resnet50", "--iterations", "2", "--devices", "2", "--batch-size", "2",
                     "--output", str(tmp_path), "--seed", "5", "--fixed-clock", "--slice-size", "4096",
                     "--options", '{"runtime_api": "off", "colour": 1}')
    assert result.exit_code == 0, result.output
    (prof,) = _prof_dirs(tmp_path)
    assert f"PROF directory: {prof}" in result.output and "devices: 0,1" in result.output
    assert "msprof-py: warning: unknown profiling option 'colour' ignored" in result.output
    assert {p.name for p in prof.iterdir()} == {"host", "device_0", "device_1"}
    # binary data streams roll over at the slice size (the text dictionaries are written whole at the end)
    assert max(p.stat().st_size for p in prof.glob("*/data/*.slice_*") if "_dic." not in p.name) <= 4096


@needs_runtime
def test_malformed_graph_file_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "model.json"
    bad.write_text('{"ops": [')
    _one_line_error(_invoke("--graph", str(bad), "--output", str(tmp_path / "o")), "model.json")
    assert _prof_dirs(tmp_path / "o") == []


@needs_runtime
def test_failing_script_leaves_nothing(tmp_path: Path) -> None:
    script = tmp_path / "bad.py"
    script.write_text("import sys\nprint('working')\nsys.exit(3)\n")
    out = tmp_path / "o"
    result = _invoke("--output", str(out), "--", "python", str(script))
    assert result.exit_code != 0
    assert "failed with exit code 3" in result.output and "Traceback" not in result.output
    assert not out.exists()  # not even the folder collect made for it


@needs_runtime
def test_installed_command_runs_in_a_real_subprocess(tmp_path: Path) -> None:
    """The one real run of the command as a user types it (``python -m msprof_py`` == ``msprof-py``)."""
    proc = subprocess.run([sys.executable, "-m", "msprof_py", "collect", "--workload", "resnet50", "--iterations",
                           "2", "--devices", "2", "--batch-size", "2", "--output", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    (prof,) = _prof_dirs(tmp_path)
    assert str(prof) in proc.stdout
    assert json.loads((prof / "device_1" / "info.json.1").read_text())["devices"] == "1"


@needs_runtime
def test_script_mode_profiles_the_script(tmp_path: Path) -> None:
    script = tmp_path / "my_script.py"
    script.write_text(
        "import sys\n"
        "from msprof_py.runtime import acl\n"
        "assert sys.argv[1:] == ['--steps', '2'], sys.argv\n"
        "acl.init()\n"
        "acl.rt.set_device(0)\n"
        "s = acl.rt.create_stream()\n"
        "for _ in range(2):\n"
        "    acl.nn.matmul((64, 1024), (1024, 1024), stream=s)\n"
        "acl.rt.synchronize_stream(s)\n"
        "acl.finalize()\n")
    out = tmp_path / "o"
    result = _invoke("--output", str(out), "--fixed-clock", "--", "python", str(script), "--steps", "2")
    assert result.exit_code == 0, result.output
    (prof,) = _prof_dirs(out)
    assert f"PROF directory: {prof}" in result.output and "devices: 0 " in result.output
    assert list((prof / "device_0" / "data").glob("stars_soc.data.0.slice_*"))
    assert [p.name for p in out.iterdir()] == [prof.name]  # no temporary directory left


@needs_runtime
def test_graph_file_run(tmp_path: Path) -> None:
    graph = Path(__file__).resolve().parents[2] / "fixtures" / "graphs" / "mlp_train.json"
    result = _invoke("--graph", str(graph), "--iterations", "2", "--output", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert len(_prof_dirs(tmp_path)) == 1


@needs_runtime
@pytest.mark.parametrize("workload", ["resnet50", "no_such_workload"])
def test_collect_gives_back_the_callers_sigterm_handler(tmp_path: Path, workload: str) -> None:
    """collect turns SIGTERM into an abort only while it runs; an in-process caller (a test, a
    program, the forked export workers it starts later) keeps its own handler after it, whether
    the collection worked or failed."""
    import signal

    def mine(signum: int, frame: object) -> None:  # pragma: no cover - never delivered
        pass

    before = signal.signal(signal.SIGTERM, mine)
    try:
        result = _invoke("--workload", workload, "--iterations", "1", "--output", str(tmp_path / "out"))
        assert (result.exit_code == 0) == (workload == "resnet50"), result.output
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, before)

"""Issue #16's bad command lines: each gives a one-line error (sizes refused up front with the
estimate, never discovered by the allocator) or works; a failed collect leaves nothing behind."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from msprof_py.cli import cli
from msprof_py.runtime import limits

HUGE = str(10**30)
BIG_GRAPH = {"name": "big", "batch": 1,
             "inputs": [{"name": "x", "shape": [10**12, 10**12], "dtype": "FLOAT16", "format": "ND"}],
             "weights": [], "outputs": ["r:0"],
             "ops": [{"name": "r", "type": "Relu", "inputs": ["x"], "outputs": [{"name": "r:0", "shape": [10**12, 10**12]}]}]}


def _one_line_error(args: list[str], *needles: str) -> str:
    res = CliRunner().invoke(cli, args)
    assert res.exit_code != 0
    assert isinstance(res.exception, SystemExit), res.exception  # no traceback
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("msprof-py: error:")]
    assert len(errors) == 1, res.output
    for n in needles:
        assert n in errors[0], errors[0]
    return errors[0]


@pytest.mark.parametrize("args,needles", [
    (["--iterations", "1000000000"], ["1000000000 iteration(s)", "TiB of memory", "iteration(s) fit"]),
    (["--iterations", HUGE], [HUGE, "of memory"]),
    (["--batch-size", HUGE], ["input_images", "32-bit"]),
    (["--seed", "-1"], ["seed", "-1"]),
])
def test_collect_sizes_refused_up_front(tmp_path: Path, args: list[str], needles: list[str]) -> None:
    out = tmp_path / "out"
    _one_line_error(["collect", "--workload", "resnet50", "--output", str(out), *args], *needles)
    assert not out.exists()  # nothing left behind


def test_graph_with_impossible_shape(tmp_path: Path) -> None:
    g = tmp_path / "big.json"
    g.write_text(json.dumps(BIG_GRAPH))
    _one_line_error(["collect", "--graph", str(g), "--output", str(tmp_path / "o")], "'x'", "32-bit")
    _one_line_error(["tune", "--job_type", "1", "--graph", str(g), "--output", str(tmp_path / "t" / "u")], "'x'")
    assert not (tmp_path / "o").exists()
    assert not (tmp_path / "t").exists()  # tune made t/u, then failed: both removed


def test_tensor_bigger_than_device_memory() -> None:
    from msprof_py.errors import WorkloadError
    from msprof_py.runtime.graph import Graph, Op, Tensor

    t = Tensor("x", (200_000, 200_000))  # 80 GB of fp16: dims fit uint32, the tensor does not fit HBM
    with pytest.raises(WorkloadError, match="more than the device's"):
        limits.check_graph(Graph("g", [Op("r", "Relu", [t], [Tensor("y", (1,))])], [t]))


def test_run_size_estimate() -> None:
    from msprof_py.errors import WorkloadError

    limits.check_run("w", 2, 10, 100, memory=2 * 10 * 100 * limits.BYTES_PER_TASK)  # exactly fits
    with pytest.raises(WorkloadError, match=r"at most 10 iteration\(s\) fit"):
        limits.check_run("w", 2, 11, 100, memory=2 * 10 * 100 * limits.BYTES_PER_TASK)


def test_compare_diff_cnt_beyond_64_bits(tmp_path: Path) -> None:
    _one_line_error(["compare", "--workload", "single_op", "--diff_cnt", HUGE, "--dump_path", str(tmp_path / "d")],
                    "--diff_cnt")


def test_compare_checks_its_directories_before_the_run(tmp_path: Path) -> None:
    # the dump directory was made (and the workload run) before --cpu_dir was found missing
    dump = tmp_path / "d"
    _one_line_error(["compare", "--workload", "single_op", "--dump_path", str(dump), "--cpu_dir",
                     str(tmp_path / "nosuch")], "CPU data directory", "nosuch")
    assert not dump.exists()


def test_failed_collect_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b"
    _one_line_error(["collect", "--workload", "nosuch", "--output", str(out)], "unknown workload")
    assert list(tmp_path.iterdir()) == []


def test_failed_collect_keeps_an_existing_folder(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("x")
    _one_line_error(["collect", "--workload", "nosuch", "--output", str(tmp_path)], "unknown workload")
    assert [p.name for p in tmp_path.iterdir()] == ["mine.txt"]


def test_single_op_operator_tuning_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # was: ValueError: cannot convert float NaN to integer, and a result file containing NaN
    (tmp_path / "bank").mkdir()
    monkeypatch.setenv("TUNE_BANK_PATH", str(tmp_path / "bank"))
    res = CliRunner().invoke(cli, ["tune", "--job_type", "2", "--workload", "single_op", "--iterations", "1",
                                   "--output", str(tmp_path / "t")])
    assert res.exit_code == 0, res.output
    (result,) = [p for p in (tmp_path / "t").glob("aoe_result_opat_*.json") if "provenance" not in p.name]
    text = result.read_text()
    assert "NaN" not in text
    opat = json.loads(text)[1]["OPAT"]
    assert opat["model_baseline_performance(ms)"] > 0
    assert opat["model_performance_improvement"].endswith("%")


def test_failed_tuned_collect_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "o"
    _one_line_error(["collect", "--workload", "nosuch", "--tune-bank", str(tmp_path), "--output", str(out)],
                    "unknown workload")
    assert not out.exists()


def test_collect_removes_what_a_killed_collect_left(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    dead = tmp_path / f".msprof_py_tmp_{p.pid}_0123abcd"
    (dead / "host").mkdir(parents=True)
    alive = tmp_path / f".msprof_py_tmp_{os.getppid()}_0123abcd"
    alive.mkdir()
    res = CliRunner().invoke(cli, ["collect", "--workload", "single_op", "--output", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert not dead.exists() and alive.exists()

"""msprof-py compare from the command line; bad input (acceptance 5)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from graphs import deep_mlp, tiny_cnn
from msprof_py.cli import cli
from msprof_py.errors import InvalidPathError
from msprof_py.precision import dumpdir
from msprof_py.precision.dump import run_and_dump
from msprof_py.precision.numerics import Fault

ROOT = Path(__file__).resolve().parents[2]


def invoke(*args, env=None):
    r = CliRunner().invoke(cli, ["compare", *args], env=env)
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r


def snapshot(d: Path) -> dict:
    return {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(d.rglob("*")) if p.is_file()}


def test_compare_a_dump_from_the_environment_variable(short_dir):
    d = short_dir / "d"
    run_and_dump(deep_mlp(layers=8), str(d), seed=1, faults=(Fault("fc5"),))
    r = invoke("--atol=0.005", "--rtol=0.2", "--show_graph=False", "--max_cores", "2",
               env={"DUMP_MEMORY_PATH": str(d)})
    assert r.exit_code == 0, r.output
    assert "error starts at: fc5_bias5_gelu5" in r.output and "computation error" in r.output
    df = pd.read_csv(d / "result" / "cpu_vs_npu.csv")
    assert len(df) == 10 and df["op_name"].iloc[0].startswith("fc0_bias0_gelu0(")
    assert not list((d / "result").glob("*.png"))


def test_flags_accept_the_seed_spelling_and_bare_flags(short_dir):
    d = short_dir / "d"
    run_and_dump(tiny_cnn(), str(d), seed=0, faults=(Fault("fc"),))
    r = invoke("--dump_path", str(d), "--show_graph", "--force_compare=False", "--skip_keys", "prob",
               "--diff_cnt", "3")
    assert r.exit_code == 0, r.output
    assert len(pd.read_csv(d / "result" / "fc.csv")) == 3
    assert "prob: skipped" in (d / "result" / "compare_skip.log").read_text()


@pytest.mark.parametrize("args,env,code,msg", [
    (["--dump_path", "/tmp/no_such_dump_dir_xyz"], None, 2, "does not exist"),
    ([], {"DUMP_MEMORY_PATH": "relative/dump"}, 1, "must be an absolute path"),
    ([], {"DUMP_MEMORY_PATH": "/tmp/" + "x" * 60}, 1, "the limit is 50"),
    ([], {"DUMP_MEMORY_PATH": ""}, 1, "DUMP_MEMORY_PATH is not set"),
    (["--dump_path", "/tmp", "--atol", "-0.1"], None, 1, "--atol must be"),
    (["--dump_path", "/tmp", "--rtol", "1.2"], None, 1, "--rtol must be in [0.0, 1.0]"),
    (["--dump_path", "/tmp", "--min_bins", "200"], None, 1, "--min_bins"),
    (["--dump_path", "/tmp", "--map_node_dict", "{bad"], None, 1, "not a JSON object"),
    (["--dump_path", "/tmp", "--inject", "op=fc"], None, 1, "need --workload or --graph"),
    (["--dump_path", "/tmp", "--dump_op_perf", "1"], None, 1, "--dump_op_perf needs --workload"),
    (["--dump_path", "/tmp", "--workload", "x", "--graph", "y"], None, 1, "not both"),
])
def test_bad_input_is_a_clear_error(args, env, code, msg):
    r = invoke(*args, env=env)
    assert r.exit_code == code, r.output
    assert msg in r.output and "Traceback" not in r.output
    assert r.output.startswith("msprof-py: error:")


def test_mismatched_node_names(short_dir):
    d = short_dir / "d"
    for side, name in (("npu", "a"), ("cpu", "b")):
        (d / side).mkdir(parents=True)
        dumpdir.save_tensor(d / side, name, pd.Series([1.0]).to_numpy())
    before = snapshot(d)
    r = invoke("--dump_path", str(d))
    assert r.exit_code == 1 and "no NPU node matches a reference node" in r.output
    r = invoke("--dump_path", str(d), "--map_node_dict", '{"zz": "a"}')
    assert r.exit_code == 1 and "unknown nodes" in r.output and "zz" in r.output
    assert snapshot(d) == before and not (d / "result").exists()


def test_an_existing_directory_we_did_not_create_is_never_touched(short_dir):
    user = short_dir / "mine"
    user.mkdir()
    (user / "precious.txt").write_text("user data")
    before = snapshot(user)
    r = invoke("--dump_path", str(user), "--workload", "resnet50")
    assert r.exit_code == 2 and "not created by msprof_py" in r.output and "refusing to delete" in r.output
    with pytest.raises(InvalidPathError, match="not created by msprof_py"):
        run_and_dump(tiny_cnn(), str(user))
    assert snapshot(user) == before
    f = short_dir / "afile"
    f.write_text("x")
    with pytest.raises(InvalidPathError, match="not a directory msprof_py created"):
        run_and_dump(tiny_cnn(), str(f))
    assert f.read_text() == "x"


def test_a_directory_we_created_is_wiped_and_recreated(short_dir):
    d = short_dir / "d"
    run_and_dump(tiny_cnn(), str(d), faults=(Fault("fc"),))
    assert (d / dumpdir.MARKER).is_file() and (d / "result" / "fault_injection.log").is_file()
    run_and_dump(tiny_cnn(), str(d))
    assert not (d / "result" / "fault_injection.log").exists()


def test_a_failing_graph_does_not_cost_the_old_dump(short_dir):
    d = short_dir / "d"
    run_and_dump(tiny_cnn(), str(d))
    before = snapshot(d)
    g = tiny_cnn()
    g.ops[2].type = "NoSuchOp"
    with pytest.raises(Exception, match="NoSuchOp"):
        run_and_dump(g, str(d))
    assert snapshot(d) == before


def test_subprocess_run(short_dir):
    d = short_dir / "d"
    run_and_dump(deep_mlp(layers=4), str(d), seed=2, faults=(Fault("gelu2", "overflow"),))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DUMP_MEMORY_PATH": str(d)}
    p = subprocess.run([sys.executable, "-m", "msprof_py", "compare"], capture_output=True, text=True, env=env,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert "error starts at: fc2_bias2_gelu2" in p.stdout
    env["DUMP_MEMORY_PATH"] = "not/absolute"
    p = subprocess.run([sys.executable, "-m", "msprof_py", "compare"], capture_output=True, text=True, env=env,
                       timeout=60)
    assert p.returncode == 1 and "absolute" in p.stderr and "Traceback" not in p.stderr


def test_show_graph_without_matplotlib_is_one_clear_line(short_dir, monkeypatch):
    """matplotlib is the optional 'plots' extra: --show_graph without it fails before any work,
    with a one-line message naming the extra; without --show_graph compare still runs."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name == "matplotlib" else real(name, *a, **k))
    d = short_dir / "d"
    run_and_dump(tiny_cnn(), str(d), seed=0, faults=(Fault("fc"),))
    r = invoke("--dump_path", str(d), "--show_graph")
    assert r.exit_code != 0
    assert "msprof_py[plots]" in r.output and "Traceback" not in r.output
    assert len([ln for ln in r.output.splitlines() if ln.strip()]) == 1
    assert not (d / "result" / "cpu_vs_npu.csv").exists()  # checked before any work
    assert invoke("--dump_path", str(d)).exit_code == 0

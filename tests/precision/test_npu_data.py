"""Seed 004's NPU data analysis: dump_data/ hex slices -> npu/, and compare's options for it
(--output_dir, --exclude_node_list, --default_concat_dim, --perf_all_nodes)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from graphs import tiny_cnn
from msprof_py.cli import cli
from msprof_py.precision import npu_data
from msprof_py.precision.dump import run_and_dump


def invoke(*args):
    r = CliRunner().invoke(cli, ["compare", *args])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(st.sampled_from([np.float16, np.float32, np.int32, np.bool_]),
                  hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5)),
       st.integers(1, 4))
def test_slices_round_trip(tmp_path_factory, array, n) -> None:
    root = tmp_path_factory.mktemp("rt")
    (root / "dump_data").mkdir()
    npu_data.write_slices(root, "net/a:1", array, n_slices=n)
    res = npu_data.analyse(root)
    assert res.written == ["net/a:1"] and not res.concat_skipped
    back = np.load(root / "npu" / "net_a_1.npy")
    assert back.dtype == array.dtype and back.shape == array.shape
    assert np.array_equal(back, array, equal_nan=True)


def test_run_dumps_hex_and_the_analysis_joins_it(short_dir) -> None:
    d = short_dir / "d"
    res = run_and_dump(tiny_cnn(), str(d), seed=0)
    slices = sorted(p.name for p in (d / "dump_data").iterdir())
    assert "conv1_bn1_relu1.0.hex" in slices or any(s.endswith(".1.hex") for s in slices)
    for key in [k for op in res.npu.executed for k in [op.name]]:
        got = np.load(d / "npu" / f"{key.replace('/', '_')}.npy")
        want = res.npu.values[res.npu.executed[[o.name for o in res.npu.executed].index(key)].outputs[0].name]
        assert np.array_equal(got, want)


def test_output_dir_and_exclude_node_list(short_dir) -> None:
    d, out = short_dir / "d", short_dir / "joined"
    run_and_dump(tiny_cnn(), str(d), seed=0)
    for p in (d / "npu").iterdir():
        p.unlink()
    r = invoke("--dump_path", str(d), "--output_dir", str(out), "--exclude_node_list", "prob", "--max_cores", "2")
    assert r.exit_code == 0, r.output
    assert "npu data analysis:" in r.output and not list((d / "npu").iterdir())
    assert (out / "fc.npy").is_file() and not (out / "prob.npy").exists()
    assert "prob: in --exclude_node_list" in (d / "result" / "check_skip.log").read_text()
    names = pd.read_csv(d / "result" / "cpu_vs_npu.csv")["op_name"].astype(str)
    assert not names.str.startswith("prob").any() and names.str.startswith("fc").any()
    r2 = invoke("--dump_path", str(d), "--output_dir", str(out), "--exclude_node_list", "prob", "--max_cores", "2")
    assert r2.exit_code == 0
    assert (d / "result" / "check_skip.log").read_text().count("prob: in --exclude_node_list") == 1


def _strip_concat_dim(d: Path, stem: str) -> None:
    for p in (d / "dump_data").glob(f"{stem}.*.hex"):
        p.write_text("\n".join(line.split(" concat_dim=")[0] if line.startswith("# group") else line
                               for line in p.read_text().splitlines()) + "\n")


def test_default_concat_dim_for_slices_without_grouping_info(tmp_path) -> None:
    a = np.arange(24, dtype=np.float16).reshape(1, 4, 6)  # cut along axis 1 (the first non-1 axis)
    (tmp_path / "dump_data").mkdir()
    npu_data.write_slices(tmp_path, "x", a)
    _strip_concat_dim(tmp_path, "x")
    npu_data.analyse(tmp_path, default_concat_dim=0)
    assert np.load(tmp_path / "npu" / "x.npy").shape == (2, 2, 6)  # the user's axis, as asked
    npu_data.analyse(tmp_path, default_concat_dim=-1)
    assert np.array_equal(np.load(tmp_path / "npu" / "x.npy"), a)
    npu_data.analyse(tmp_path, default_concat_dim=5)
    assert "x: concat axis 5 out of range" in (tmp_path / "result" / "concate_skip.log").read_text()


@pytest.mark.parametrize("damage, why", [
    (lambda p: p.write_text(p.read_text() + "zz\n"), "non-hexadecimal"),
    (lambda p: p.unlink(), "slice 0 of 2 missing"),
    (lambda p: p.write_text(p.read_text().rsplit("\n", 2)[0] + "\n"), "bytes, the shape"),
    (lambda p: p.write_text(p.read_text().replace("# dtype: float16", "# dtype: complex64")), "not supported"),
])
def test_broken_slices_are_listed_not_fatal(short_dir, damage, why) -> None:
    d = short_dir / "d"
    run_and_dump(tiny_cnn(), str(d), seed=0)
    (victim,) = [p for p in (d / "dump_data").glob("fc.0.hex")]
    damage(victim)
    (d / "npu" / "fc.npy").unlink()
    r = invoke("--dump_path", str(d), "--max_cores", "2")
    assert r.exit_code == 0, r.output
    log = (d / "result" / "concate_skip.log").read_text()
    assert log.startswith("fc") and why in log, log
    assert not (d / "npu" / "fc.npy").exists()


def test_bad_default_concat_dim_is_one_line_error(short_dir) -> None:
    r = invoke("--dump_path", str(short_dir / "d"), "--default_concat_dim", "x")
    assert r.exit_code != 0 and "--default_concat_dim must be an integer" in r.output
    r = invoke("--dump_path", str(short_dir / "d"), "--output_dir", "rel/dir")
    assert r.exit_code != 0 and "--output_dir must be an absolute path" in r.output


def test_perf_all_nodes_false_hides_span_nodes(short_dir, tmp_path) -> None:
    graph = {"name": "spanned", "batch": 8,
             "inputs": [{"name": "x", "shape": [8, 64], "dtype": "FLOAT16", "format": "ND"}],
             "weights": [{"name": "w", "shape": [64, 64], "dtype": "FLOAT16", "format": "ND"}],
             "outputs": ["act:0"],
             "ops": [{"name": "fc_span_0", "type": "MatMulV2", "inputs": ["x", "w"],
                      "outputs": [{"name": "fc_span_0:0", "shape": [8, 64]}]},
                     {"name": "act", "type": "Relu", "inputs": ["fc_span_0:0"],
                      "outputs": [{"name": "act:0", "shape": [8, 64]}]}]}
    g = tmp_path / "g.json"
    g.write_text(json.dumps(graph))
    for flag, expect in (("True", True), ("False", False)):
        d = short_dir / f"d{flag}"
        r = invoke("--dump_path", str(d), "--graph", str(g), "--dump_op_perf", "1", "--perf_all_nodes", flag)
        assert r.exit_code == 0, r.output
        ops = pd.read_csv(d / "result" / "op_perf.csv")["name"].astype(str).tolist()
        assert ("fc_span_0" in ops) is expect and "act" in ops
        assert (d / "result" / "perf" / "fc_span_0.csv").exists() is expect

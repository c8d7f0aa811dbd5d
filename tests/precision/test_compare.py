"""compare on dump directories: files, columns, order, mapping, skips (acceptance 2)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from graphs import tiny_cnn
from msprof_py.errors import InvalidParamError, InvalidPathError
from msprof_py.precision import dumpdir
from msprof_py.precision.compare import CompareOptions, compare_dump, parse_map_node_dict, parse_skip_keys
from msprof_py.precision.dump import run_and_dump
from msprof_py.precision.metrics import CSV_COLUMNS, DETAIL_COLUMNS


def make_dump(root, npu: dict, cpu: dict, order=None):
    """A dump directory written by hand (as another tool might): npu/, cpu/, result/."""
    for sub in ("npu", "cpu", "result"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for k, v in npu.items():
        dumpdir.save_tensor(root / "npu", k, np.asarray(v))
    for k, v in cpu.items():
        dumpdir.save_tensor(root / "cpu", k, np.asarray(v))
    if order:
        (root / "result" / "dump_memory_nodename.log").write_text("".join(n + "\n" for n in order))
    return str(root)


def rows(root):
    return pd.read_csv(root / "result" / "cpu_vs_npu.csv", dtype=str, keep_default_na=False)


def test_csv_columns_order_and_detail_files(short_dir):
    path = make_dump(short_dir,
                     npu={"b/second": [1.0, 2.5], "a/first": [0.0, 1.0], "c": [3.0]},
                     cpu={"b/second": [1.0, 2.0], "a/first": [0.0, 1.0], "c": [3.0]},
                     order=["b/second", "a/first", "c"])
    res = compare_dump(path, CompareOptions())
    df = rows(short_dir)
    assert list(df.columns) == list(CSV_COLUMNS)
    # execution order from dump_memory_nodename.log, names restored from the sanitised file names
    assert df["op_name"].tolist() == ["b/second(atol:0.005,rtol:0.2)", "a/first(atol:0.005,rtol:0.2)",
                                      "c(atol:0.005,rtol:0.2)"]
    assert df["errors/total"].tolist() == ["1/2", "0/2", "0/1"]
    assert [n.npu_node for n in res.failed] == ["b/second"]
    det = pd.read_csv(short_dir / "result" / "b_second.csv")
    assert list(det.columns) == list(DETAIL_COLUMNS)
    assert det.values.tolist() == [[1, 2.0, 2.5, 0.5, 0.25]]
    assert not (short_dir / "result" / "a_first.csv").exists()
    cfg = pd.read_csv(short_dir / "result" / "op_config.csv", dtype=str, keep_default_na=False)
    assert cfg["atol"].tolist() == ["NA"] * 3


def test_op_config_overrides_tolerances_per_node(short_dir):
    path = make_dump(short_dir, npu={"x": [1.0, 2.5]}, cpu={"x": [1.0, 2.0]})
    (short_dir / "result" / "op_config.csv").write_text("op_name,atol,rtol\nx,1.0,NA\n")
    compare_dump(path, CompareOptions())
    assert rows(short_dir)["op_name"].tolist() == ["x(atol:1,rtol:0.2)"]
    assert rows(short_dir)["errors/total"].tolist() == ["0/2"]
    (short_dir / "result" / "op_config.csv").write_text("op_name,atol,rtol\nx,abc,NA\n")
    with pytest.raises(InvalidPathError, match="op_config.csv: op 'x'"):
        compare_dump(path, CompareOptions())


def test_force_compare_shape_mismatch_same_size(short_dir):
    a = np.arange(6, dtype=np.float32)
    path = make_dump(short_dir, npu={"t": a.reshape(3, 2), "u": np.ones(4)}, cpu={"t": a.reshape(2, 3), "u": np.ones(5)})
    res = compare_dump(path, CompareOptions())
    by = {n.npu_node: n for n in res.nodes}
    assert by["t"].cmp is None and "shape mismatch" in by["t"].reason
    assert "different size" in by["u"].reason
    assert rows(short_dir).empty
    log = (short_dir / "result" / "compare_skip.log").read_text()
    assert "t: shape mismatch" in log and "u: shape mismatch with different size" in log
    res = compare_dump(path, CompareOptions(force_compare=True))
    by = {n.npu_node: n for n in res.nodes}
    assert by["t"].cmp is not None and by["t"].cmp.errors == 0 and by["t"].cmp.shape == (2, 3)
    assert by["u"].cmp is None
    assert "force compared" in (short_dir / "result" / "compare_skip.log").read_text()


def test_skip_keys_and_empty_tensors(short_dir):
    path = make_dump(short_dir, npu={"conv_span": [9.0], "e": np.zeros(0), "ok": [1.0]},
                     cpu={"conv_span": [1.0], "e": np.zeros(0), "ok": [1.0]})
    res = compare_dump(path, CompareOptions(skip_keys=parse_skip_keys("_span, nothing")))
    by = {n.npu_node: n for n in res.nodes}
    assert "skip_keys" in by["conv_span"].reason and by["conv_span"].cmp is None
    assert "empty data" in by["e"].reason
    assert rows(short_dir)["op_name"].str.startswith("ok").tolist() == [True]
    assert not res.failed


def test_map_node_dict_and_unmapped_nodes(short_dir):
    path = make_dump(short_dir, npu={"fused_1": [1.0, 2.0], "orphan": [1.0]}, cpu={"relu_1": [1.0, 2.0], "x": [0.0]})
    res = compare_dump(path, CompareOptions(map_node_dict=parse_map_node_dict('{"relu_1": "fused_1"}')))
    by = {n.npu_node: n for n in res.nodes}
    assert by["fused_1"].cpu_node == "relu_1" and by["fused_1"].cmp.errors == 0
    assert by["orphan"].cpu_node is None
    assert (short_dir / "result" / "invalid_out_nodename.log").read_text() == "orphan\n"
    assert any("no reference node" in w for w in res.warnings)
    with pytest.raises(InvalidParamError, match="unknown nodes.*nope"):
        compare_dump(path, CompareOptions(map_node_dict={"nope": "fused_1"}))
    with pytest.raises(InvalidParamError, match="one-to-one"):
        compare_dump(path, CompareOptions(map_node_dict={"relu_1": "fused_1", "x": "fused_1"}))
    with pytest.raises(InvalidParamError, match="not a JSON object"):
        parse_map_node_dict("{relu_1: fused_1}")


def test_no_common_nodes_is_an_error_and_writes_nothing(short_dir):
    path = make_dump(short_dir, npu={"a": [1.0]}, cpu={"b": [1.0]})
    with pytest.raises(InvalidParamError, match="no NPU node matches"):
        compare_dump(path, CompareOptions())
    assert list((short_dir / "result").iterdir()) == []


def test_fusion_record_maps_fused_nodes_to_their_last_original_op(short_dir):
    d = short_dir / "dump"
    run_and_dump(tiny_cnn(), str(d), seed=0)
    res = compare_dump(str(d), CompareOptions(max_cores=2))
    by = {n.npu_node: n for n in res.nodes}
    assert by["conv1_bn1_relu1"].cpu_node == "relu1"
    assert [n.npu_node for n in res.nodes] == ["conv1_bn1_relu1", "pool1", "flat", "fc", "prob"]
    assert not res.failed and all(n.cmp.pearson > 0.999 for n in res.nodes)


def test_stale_outputs_of_a_previous_compare_are_removed_but_nothing_else(short_dir):
    path = make_dump(short_dir, npu={"x": [1.0, 2.5]}, cpu={"x": [1.0, 2.0]})
    (short_dir / "result" / "user_notes.txt").write_text("mine")
    compare_dump(path, CompareOptions())
    assert (short_dir / "result" / "x.csv").exists()
    compare_dump(path, CompareOptions(atol=1.0))
    assert not (short_dir / "result" / "x.csv").exists()
    assert (short_dir / "result" / "user_notes.txt").read_text() == "mine"


@pytest.mark.parametrize("opts,msg", [
    (CompareOptions(atol=-1), "--atol"), (CompareOptions(rtol=1.5), r"--rtol must be in \[0.0, 1.0\]"),
    (CompareOptions(atol=float("nan")), "--atol"), (CompareOptions(min_bins=0), "--min_bins"),
    (CompareOptions(max_bins=4, min_bins=5), "--min_bins"), (CompareOptions(max_cores=0), "--max_cores"),
])
def test_option_validation(opts, msg, short_dir):
    with pytest.raises(InvalidParamError, match=msg):
        compare_dump(str(short_dir), opts)


def test_missing_directories(short_dir):
    with pytest.raises(InvalidPathError, match="does not exist"):
        compare_dump(str(short_dir / "nope"), CompareOptions())
    (short_dir / "npu").mkdir()
    with pytest.raises(InvalidPathError, match="CPU data directory"):
        compare_dump(str(short_dir), CompareOptions())
    (short_dir / "cpu").mkdir()
    with pytest.raises(InvalidPathError, match="holds no .npy"):
        compare_dump(str(short_dir), CompareOptions())


def test_same_seed_same_bytes(short_dir):
    from msprof_py.precision.locate import locate
    from msprof_py.precision.numerics import Fault

    outs = []
    for name in ("a", "b"):
        d = short_dir / name
        run_and_dump(tiny_cnn(), str(d), seed=11, faults=(Fault("fc", "overflow"),))
        locate(compare_dump(str(d), CompareOptions()))
        outs.append({p.relative_to(d): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()})
    assert outs[0].keys() == outs[1].keys() and len(outs[0]) > 25
    assert outs[0] == outs[1]

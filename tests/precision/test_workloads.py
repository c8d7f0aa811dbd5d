"""Numerics on the runtime's built-in workloads at small shapes."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

pytest.importorskip("msprof_py.runtime.sim", reason="msprof_py.runtime.sim has not landed yet")

from msprof_py.cli import cli  # noqa: E402
from msprof_py.precision.compare import CompareOptions, compare_dump  # noqa: E402
from msprof_py.precision.dump import run_and_dump  # noqa: E402
from msprof_py.precision.locate import locate  # noqa: E402
from msprof_py.precision.numerics import Fault  # noqa: E402
from msprof_py.precision.workloads import load_workload  # noqa: E402

CONV = "resnet50/layer2/1/conv2/Conv2D"


@pytest.fixture(scope="module")
def resnet():
    return load_workload("resnet50", {"batch": 1, "image": 32})


def test_resnet50_device_graph_runs_in_the_logical_layout(resnet):
    assert resnet.workload.graph.ops[1].outputs[0].format == "NC1HWC0"
    conv = next(op for op in resnet.npu_graph.ops if op.name == "resnet50/conv1/Conv2D")
    assert conv.outputs[0].shape == (1, 64, 16, 16) and conv.inputs[1].shape == (64, 16, 7, 7)
    fc = [op.name for op in resnet.cpu_graph.ops if op.name.startswith("resnet50/fc/")]
    assert fc == ["resnet50/fc/MatMul", "resnet50/fc/BiasAdd"]  # the fused fc, split for the reference


def test_resnet50_fault_is_located(resnet, short_dir):
    d = str(short_dir / "d")
    res = run_and_dump(resnet.cpu_graph, d, npu_graph=resnet.npu_graph, seed=0, faults=(Fault(CONV),))
    assert any("backward pass" in why for _, why in res.npu.skipped)
    cmp = compare_dump(d, CompareOptions())
    by = {n.npu_node: n for n in cmp.nodes}
    assert by["resnet50/fc/MatMulV2"].cpu_node == "resnet50/fc/BiasAdd"
    # nodes before the fault carry only fp16 rounding error; the fault's node is named
    assert by["resnet50/conv1/Conv2D"].cmp.mre < 0.01
    loc = locate(cmp)
    assert loc.verdict == "computation error" and loc.error_node == CONV
    # every earlier jump candidate was refuted by its isolated re-run
    names = [c.node for c in loc.candidates]
    assert all(c.confirmed is False for c in loc.candidates[:names.index(CONV)])


def test_cli_runs_a_workload_dumps_compares_and_writes_op_perf(short_dir):
    d = short_dir / "d"
    r = CliRunner().invoke(cli, ["compare", "--dump_path", str(d), "--workload", "single_op", "--param", "batch=4",
                                 "--param", "size=64", "--inject", "op=aclnnRelu_ReluAiCore_Relu,kind=overflow"])
    assert r.exit_code == 0, r.output
    assert "error starts at: aclnnRelu_ReluAiCore_Relu" in r.output and "computation error" in r.output
    assert "fault injected" in r.output
    perf = pd.read_csv(d / "result" / "op_perf.csv")
    assert "aclnnMatmul_MatMulCommon_MatMulV2" in set(perf["name"])
    order = (d / "result" / "node_runtime.file").read_text().splitlines()
    assert order[1].split("\t")[1] == "aclnnMatmul_MatMulCommon_MatMulV2" and int(order[2].split("\t")[2]) > 0
    r = CliRunner().invoke(cli, ["compare", "--dump_path", str(d), "--workload", "resnet50"])
    assert r.exit_code == 1 and "GFLOP" in r.output and "--param" in r.output
    assert (d / "result" / "op_perf.csv").is_file()  # the refused run left the old dump alone


def test_cli_runs_a_user_graph_file(short_dir):
    from pathlib import Path

    graph = Path(__file__).resolve().parents[2] / "fixtures" / "graphs" / "mlp_train.json"
    if not graph.is_file():
        pytest.skip("the runtime's example graph file has not landed yet")
    d = short_dir / "d"
    r = CliRunner().invoke(cli, ["compare", "--dump_path", str(d), "--graph", str(graph), "--param", "batch=4",
                                 "--inject", "op=fc1/BiasAdd"])
    assert r.exit_code == 0, r.output
    # the fault sits in an original op inside the fused fc1/MatMulV2: the fused node is named
    assert "error starts at: fc1/MatMulV2" in r.output and "computation error" in r.output
    import orjson

    meta = orjson.loads((d / "result" / "compare_meta.json").read_bytes())
    assert meta["mapping"]["fc1/MatMulV2"] == "fc1/BiasAdd" and meta["mapping_source"]["fc1/MatMulV2"] == "fusion record"
    r = CliRunner().invoke(cli, ["compare", "--dump_path", str(short_dir / "e"), "--graph", str(graph),
                                 "--param", "layers=3"])
    assert r.exit_code == 1 and "only --param batch" in r.output


def test_dump_op_perf_1_writes_only_performance_data(short_dir):
    d = short_dir / "d"
    r = CliRunner().invoke(cli, ["compare", "--dump_path", str(d), "--workload", "single_op", "--param", "batch=4",
                                 "--param", "size=64"], env={"DUMP_OP_PERF": "1"})
    assert r.exit_code == 0, r.output
    assert (d / "result" / "op_perf.csv").is_file() and (d / "result" / "perf").is_dir()
    assert not list((d / "npu").glob("*.npy")) and not (d / "result" / "cpu_vs_npu.csv").exists()


# ---------------------------------------------------------------- transformers --------------------

SMALL = {"resnet50": {"batch": 1, "image": 32},
         "bert": {"batch": 2, "seq_len": 8, "layers": 2, "hidden": 128},
         "llm_decoder": {"batch": 1, "seq_len": 8, "layers": 2, "hidden": 256, "vocab": 1000},
         "single_op": {"batch": 4, "size": 64}}


def _params(name: str) -> list[str]:
    return [a for k, v in SMALL[name].items() for a in ("--param", f"{k}={v}")]


def _natural_shape(op, ins) -> tuple[int, ...]:
    """The shape an op's computation has before any reshape to the declared output: a matmul's
    broadcast batch dims + (M, N), else what the kernel returned."""
    from msprof_py.precision.kernels.cube import _mm_operands

    a, b = _mm_operands(op, ins[0], ins[1])
    return tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2])) + (a.shape[-2], b.shape[-1])


@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.parametrize("graph", ["npu_graph", "cpu_graph"])
def test_every_builtin_workload_is_shape_consistent(name, graph):
    """Each forward op computes exactly the outputs its graph declares, from the inputs it is
    given: compute ops may not rely on a silent reshape of a same-size result (only data-movement
    ops may present their result in another view, as GE folds Reshape into them)."""
    from msprof_py.precision.kernels import CUBE_TYPES, LAYOUT_TYPES, kernel_for
    from msprof_py.precision.numerics import CPU, is_forward, make_leaves

    g = getattr(load_workload(name, SMALL[name]), graph)
    values = dict(make_leaves(g, 0))
    ran = 0
    for op in g.ops:
        if not is_forward(op):
            continue
        ins = [values[t.name] for t in op.inputs]
        for t, a in zip(op.inputs, ins):
            assert a.shape == t.shape, (op.name, t.name, a.shape, t.shape)
        with np.errstate(all="ignore"):
            outs = kernel_for(op)(op, [a if a.dtype.kind in "iub" else a.astype(np.float32) for a in ins], CPU.q)
        assert 1 <= len(outs) <= len(op.outputs), op.name
        for i, (t, y) in enumerate(zip(op.outputs, outs)):
            y = np.asarray(y)
            if op.type in LAYOUT_TYPES:
                assert y.size == t.numel, (op.name, t.name, y.shape, t.shape)
            elif op.type in CUBE_TYPES - {"Conv2D", "FlashAttentionScore", "Conv2DBackpropInput"} and i == 0:
                assert _natural_shape(op, ins) == t.shape, (op.name, _natural_shape(op, ins), t.shape)
            else:
                assert y.shape == t.shape, (op.name, t.name, y.shape, t.shape)
            values[t.name] = y.reshape(t.shape)
        ran += 1
    assert ran > 5


@pytest.mark.parametrize("name,n_fwd", [("bert", 2 * 18 + 8), ("llm_decoder", 2 * 13 + 6)])
def test_transformer_compare_end_to_end_without_fault(name, n_fwd, short_dir):
    d = short_dir / "d"
    r = CliRunner().invoke(cli, ["compare", "--dump_path", str(d), "--workload", name, *_params(name)])
    assert r.exit_code == 0, r.output
    assert f"dumped {n_fwd} NPU nodes" in r.output
    assert "verdict: accumulated error" in r.output and "computation error found" in r.output
    assert "fault injected" not in r.output
    table = pd.read_csv(d / "result" / "cpu_vs_npu.csv")
    assert len(table) >= n_fwd
    perf = pd.read_csv(d / "result" / "op_perf.csv")
    fwd = {op.name for op in load_workload(name, SMALL[name]).npu_graph.ops if op.phase not in ("bp", "update")}
    assert len(fwd) == n_fwd and fwd <= set(perf["name"])


@pytest.mark.parametrize("name,op", [("bert", "bert/encoder/layer_1/intermediate/Gelu"),
                                     ("bert", "bert/encoder/layer_0/attention/self/SoftmaxV2"),
                                     ("llm_decoder", "model/layers/1/self_attn/RotaryMul"),
                                     ("llm_decoder", "model/layers/0/self_attn/FlashAttentionScore")])
def test_transformer_fault_is_named_as_a_computation_error(name, op, short_dir):
    d = short_dir / "d"
    r = CliRunner().invoke(cli, ["compare", "--dump_path", str(d), "--workload", name, *_params(name),
                                 "--inject", f"op={op}"])
    assert r.exit_code == 0, r.output
    assert f"error starts at: {op} " in r.output and "verdict: computation error" in r.output


@pytest.mark.parametrize("name", sorted(SMALL))
def test_backward_matmuls_are_shape_consistent_too(name):
    """The backward pass is not executed numerically, but the profiler times it from its shapes:
    every MatMul/BatchMatMul gradient must multiply operands that fit and give its declared output."""
    from msprof_py.precision.kernels.cube import _mm_operands

    g = load_workload(name, SMALL[name]).workload.graph
    mms = [op for op in g.ops if op.type in ("MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2")]
    for op in mms:
        a, b = (np.empty(t.shape, np.float16) for t in op.inputs[:2])
        assert _natural_shape(op, [a, b]) == op.outputs[0].shape, op.name
        _mm_operands(op, a, b)
    if name == "bert":
        assert sum(op.phase == "bp" for op in mms) == 2 * sum(op.phase == "fp" for op in mms)  # dX and dW each

"""Numeric execution: kernels vs naive references, precision policy, fusion, faults."""
from __future__ import annotations

import numpy as np
import pytest

from graphs import T, deep_mlp, tiny_cnn
from msprof_py.errors import WorkloadError
from msprof_py.precision import numerics as nm
from msprof_py.precision.kernels import KERNELS, conv2d
from msprof_py.runtime.graph import Graph, Op


def naive_conv(x, w, stride, pad):
    n, c, h, wd = x.shape
    co, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, co, oh, ow))
    for b in range(n):
        for o in range(co):
            for i in range(oh):
                for j in range(ow):
                    y[b, o, i, j] = np.sum(xp[b, :, i * stride:i * stride + kh, j * stride:j * stride + kw] * w[o])
    return y


@pytest.mark.parametrize("stride,pad,h", [(1, 1, 7), (2, 1, 8), (1, 0, 6), (2, 0, 9)])
def test_conv2d_matches_a_naive_loop_with_inferred_stride_and_padding(stride, pad, h):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, h, h)).astype(np.float32)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    ref = naive_conv(x, w, stride, pad)
    op = Op("c", "Conv2D", [T("x", *x.shape), T("w", *w.shape)], [T("y", *ref.shape)])
    (y,) = conv2d(op, [x, w], lambda a: a)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_npu_side_stores_fp16_and_cpu_side_fp32():
    g = tiny_cnn()
    leaves = nm.make_leaves(g, 0)
    cpu = nm.execute(g, nm.CPU, leaves)
    npu = nm.execute(nm.fuse(g), nm.NPU, leaves, originals={op.name: op for op in g.ops})
    assert cpu.values["out"].dtype == np.float32 and npu.values["out"].dtype == np.float16
    # fp16 storage: close, not equal
    diff = np.abs(npu.values["out"].astype(np.float64) - cpu.values["out"])
    assert 0 < diff.max() < 5e-3
    np.testing.assert_allclose(cpu.values["out"].sum(axis=1), 1.0, rtol=1e-5)


def test_same_seed_same_values_other_seed_other_values():
    g = tiny_cnn()
    a = nm.execute(g, nm.CPU, nm.make_leaves(g, 7)).values["out"]
    b = nm.execute(g, nm.CPU, nm.make_leaves(g, 7)).values["out"]
    c = nm.execute(g, nm.CPU, nm.make_leaves(g, 8)).values["out"]
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_fuse_absorbs_epilogues_and_fused_run_skips_intermediate_rounding():
    g = tiny_cnn()
    f = nm.fuse(g)
    assert [op.name for op in f.ops] == ["conv1_bn1_relu1", "pool1", "flat", "fc", "prob"]
    assert f.ops[0].fused_from == ("conv1", "bn1", "relu1")
    leaves = nm.make_leaves(g, 0)
    fused = nm.execute(f, nm.NPU, leaves, originals={op.name: op for op in g.ops}).values["r1"]
    unfused = nm.execute(g, nm.NPU, leaves).values["r1"]  # rounds c1 and b1 to fp16 in between
    cpu = nm.execute(g, nm.CPU, leaves).values["r1"]
    err = lambda a: np.abs(a.astype(np.float64) - cpu).mean()  # noqa: E731
    assert err(fused) <= err(unfused)
    assert not np.array_equal(fused, unfused)


def test_cube_accumulates_in_fp32():
    # 4096 products of 1.0 * (1 + 2^-10): fp16 accumulation would stall at 2048, fp32 does not
    k = 4096
    op = Op("mm", "MatMulV2", [T("a", 1, k), T("b", k, 1)], [T("y", 1, 1)])
    g = Graph("g", [op], [T("a", 1, k)], [T("y", 1, 1)], [T("b", k, 1)])
    leaves = {"a": np.ones((1, k), np.float32), "b": np.full((k, 1), 1 + 2 ** -10, np.float32)}
    y = nm.execute(g, nm.NPU, leaves).values["y"]
    assert y.dtype == np.float16 and float(y[0, 0]) == pytest.approx(k * (1 + 2 ** -10), rel=1e-3)


def test_faults_change_only_the_npu_side():
    g = deep_mlp(layers=4)
    f = nm.fuse(g)
    leaves = nm.make_leaves(g, 0)
    orig = {op.name: op for op in g.ops}
    clean = nm.execute(f, nm.NPU, leaves, originals=orig).values
    bad = nm.execute(f, nm.NPU, leaves, originals=orig, faults=(nm.Fault("fc2"),)).values
    assert np.array_equal(clean["act1"], bad["act1"]) and not np.array_equal(clean["act2"], bad["act2"])
    ovf = nm.execute(f, nm.NPU, leaves, originals=orig, faults=(nm.Fault("bias1", "overflow"),)).values
    assert np.isinf(ovf["act1"]).any()
    cpu = nm.execute(g, nm.CPU, leaves, faults=(nm.Fault("fc2"),)).values
    assert np.isfinite(cpu["act3"]).all()


def test_isolated_rerun_on_cpu_inputs():
    g = deep_mlp(layers=6)
    f = nm.fuse(g)
    leaves = nm.make_leaves(g, 0)
    orig = {op.name: op for op in g.ops}
    cpu = nm.execute(g, nm.CPU, leaves).values
    op = f.ops[3]
    (clean,) = nm.rerun_isolated(op, cpu, originals=orig)
    (faulty,) = nm.rerun_isolated(op, cpu, originals=orig, faults=(nm.Fault(op.name),))
    ref = cpu[op.outputs[0].name]
    assert np.abs(clean - ref).max() < 0.02
    assert np.abs(faulty.astype(np.float64) - ref).max() > 0.5


def test_unknown_op_type_names_the_op():
    op = Op("mystery", "FancyOp", [T("x", 2)], [T("y", 2)])
    g = Graph("g", [op], [T("x", 2)], [T("y", 2)])
    with pytest.raises(WorkloadError, match="'mystery'.*'FancyOp'"):
        nm.execute(g, nm.CPU, nm.make_leaves(g, 0))


def test_bad_fault_specs():
    with pytest.raises(WorkloadError, match="unknown fault kind"):
        nm.parse_fault("op=x,kind=melt")
    with pytest.raises(WorkloadError, match="op=NAME"):
        nm.parse_fault("kind=overflow")
    with pytest.raises(WorkloadError, match="not in graph"):
        nm.check_faults((nm.Fault("nope"),), tiny_cnn())
    g = tiny_cnn()
    g.ops[-1].phase = "bp"
    with pytest.raises(WorkloadError, match="backward"):
        nm.check_faults((nm.Fault("prob"),), g)
    assert nm.parse_fault("op=fc,kind=overflow,scale=10") == nm.Fault("fc", "overflow", 10.0)


def test_backward_ops_are_skipped_with_a_reason():
    g = tiny_cnn()
    g.ops.append(Op("fc_grad", "MatMulV2", [T("out", 2, 10), T("fw", 64, 10)], [T("gf", 2, 64)], phase="bp"))
    run = nm.execute(g, nm.CPU, nm.make_leaves(g, 0))
    assert run.skipped == [("fc_grad", "bp op: only the forward pass is executed")]


def _run1(op_type, ins, outs, attrs=None, leaves=None):
    op = Op("o", op_type, ins, outs, attrs=attrs or {})
    g = Graph("g", [op], list(ins), list(outs))
    lv = leaves or nm.make_leaves(g, 0)
    return lv, nm.execute(g, nm.CPU, lv).values


def test_vector_kernels_against_numpy_formulas():
    lv, v = _run1("LayerNorm", [T("x", 4, 8), T("g", 8), T("b", 8)], [T("y", 4, 8)])
    x = lv["x"]
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * lv["g"] + lv["b"]
    np.testing.assert_allclose(v["y"], ref, rtol=1e-4, atol=1e-5)
    lv, v = _run1("RmsNorm", [T("x", 4, 8), T("g", 8)], [T("y", 4, 8)])
    x = lv["x"]
    np.testing.assert_allclose(v["y"], x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * lv["g"], rtol=1e-4)
    lv, v = _run1("Swiglu", [T("x", 3, 8)], [T("y", 3, 4)])
    a, b = lv["x"][:, :4], lv["x"][:, 4:]
    np.testing.assert_allclose(v["y"], a / (1 + np.exp(-a)) * b, rtol=1e-5)
    lv, v = _run1("RotaryMul", [T("x", 2, 4), T("c", 2, 4), T("s", 2, 4)], [T("y", 2, 4)])
    np.testing.assert_allclose(lv["c"] ** 2 + lv["s"] ** 2, 1.0, rtol=1e-5)
    x = lv["x"]
    rot = np.concatenate([-x[:, 2:], x[:, :2]], -1)
    np.testing.assert_allclose(v["y"], x * lv["c"] + rot * lv["s"], rtol=1e-5)
    lv, v = _run1("MaxPool", [T("x", 1, 2, 4, 4)], [T("y", 1, 2, 2, 2)], attrs={"ksize": 2, "strides": 2})
    np.testing.assert_allclose(v["y"], lv["x"].reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)))
    # without attrs: ResNet's 3x3 / stride 2 / pad 1 window is inferred from the shapes
    lv, v = _run1("MaxPool", [T("x", 1, 1, 5, 5)], [T("y", 1, 1, 3, 3)])
    xp = np.pad(lv["x"][0, 0], 1, constant_values=-np.inf)
    assert v["y"][0, 0, 1, 1] == xp[2:5, 2:5].max()
    lv, v = _run1("ReduceMeanD", [T("x", 2, 3, 4)], [T("y", 2, 4)])
    np.testing.assert_allclose(v["y"], lv["x"].mean(1), rtol=1e-6)


def test_flash_attention_matches_explicit_attention():
    q, k, vv = T("q", 1, 2, 4, 8), T("k", 1, 2, 4, 8), T("v", 1, 2, 4, 8)
    lv, v = _run1("FlashAttentionScore", [q, k, vv], [T("o", 1, 2, 4, 8)], attrs={"input_layout": "BNSD"})
    s = lv["q"] @ lv["k"].transpose(0, 1, 3, 2) / np.sqrt(8)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(v["o"], p @ lv["v"], rtol=1e-4, atol=1e-6)


def test_kernel_table_covers_the_brief_op_types():
    for t in ("Conv2D", "MatMul", "MatMulV2", "BatchMatMul", "Add", "Mul", "Relu", "Gelu", "Softmax",
              "LayerNorm", "RmsNorm", "BNInfer", "MaxPool", "Cast", "Swiglu", "RotaryMul", "FlashAttentionScore"):
        assert t in KERNELS


def test_transformer_kernels_against_numpy_formulas():
    """The kernels the bert / llm_decoder graphs added: Muls/Adds, ConfusionTransposeD, SplitD
    with num_split, per-head RotaryMul on a BSH tensor, TopKV2."""
    lv, v = _run1("Muls", [T("x", 2, 3)], [T("y", 2, 3)], attrs={"value": 0.125})
    np.testing.assert_allclose(v["y"], lv["x"] * 0.125, rtol=1e-6)
    lv, v = _run1("Adds", [T("x", 2, 3)], [T("y", 2, 3)], attrs={"value": -3.0})
    np.testing.assert_allclose(v["y"], lv["x"] - 3.0, rtol=1e-6)
    with pytest.raises(WorkloadError, match="'value' attribute"):
        _run1("Muls", [T("x", 2, 3)], [T("y", 2, 3)])
    # (B*S, 3*N*D) -> (3, B, N, S, D): element [c, b, n, s, d] is row b*S+s, column c*N*D + n*D + d
    lv, v = _run1("ConfusionTransposeD", [T("x", 2 * 3, 3 * 2 * 4)], [T("y", 3, 2, 2, 3, 4)],
                  attrs={"perm": (2, 0, 3, 1, 4), "shape": (2, 3, 3, 2, 4), "transpose_first": False})
    assert v["y"][2, 1, 0, 2, 3] == lv["x"][1 * 3 + 2, 2 * 8 + 0 * 4 + 3]
    lv, v = _run1("ConfusionTransposeD", [T("x", 2, 2, 3, 4)], [T("y", 6, 8)],
                  attrs={"perm": (0, 2, 1, 3), "shape": (6, 8), "transpose_first": True})
    assert v["y"][1 * 3 + 2, 1 * 4 + 3] == lv["x"][1, 1, 2, 3]
    x = T("x", 2, 5, 12)
    op = Op("s", "SplitD", [x], [T(f"y{i}", 2, 5, 4) for i in range(3)], attrs={"split_dim": 2, "num_split": 3})
    g = Graph("g", [op], [x], list(op.outputs))
    lv = nm.make_leaves(g, 0)
    vals = nm.execute(g, nm.CPU, lv).values
    np.testing.assert_array_equal(vals["y2"], lv["x"][..., 8:])
    # BSH input, per-head tables (1, S, 1, D): each head rotates its own halves
    lv, v = _run1("RotaryMul", [T("x", 1, 3, 8), T("c", 1, 3, 1, 4), T("s", 1, 3, 1, 4)], [T("y", 1, 3, 8)])
    xh = lv["x"].reshape(1, 3, 2, 4)
    rot = np.concatenate([-xh[..., 2:], xh[..., :2]], -1)
    np.testing.assert_allclose(v["y"], (xh * lv["c"] + rot * lv["s"]).reshape(1, 3, 8), rtol=1e-5)
    lv, v = _run1("TopKV2", [T("x", 2, 1, 10, dtype="FLOAT")],
                  [T("val", 2, 1, 3, dtype="FLOAT"), T("idx", 2, 1, 3, dtype="INT32")], attrs={"k": 3})
    ref = np.argsort(-lv["x"], axis=-1)[..., :3]
    np.testing.assert_array_equal(v["idx"], ref)
    np.testing.assert_array_equal(v["val"], np.take_along_axis(lv["x"], ref, -1))


def test_attention_masks_are_zero_one_with_a_padding_tail():
    x = T("input_mask", 4, 1, 1, 16, dtype="INT32")
    op = Op("c", "Cast", [x], [T("y", 4, 1, 1, 16)])
    m = nm.make_leaves(Graph("g", [op], [x], list(op.outputs)), 0)["input_mask"]
    assert set(np.unique(m)) <= {0, 1} and (m[..., 0] == 1).all()
    assert (np.diff(m, axis=-1) <= 0).all()  # ones, then zeros: padding sits at the tail

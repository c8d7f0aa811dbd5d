"""Small hand-built graphs for the precision tests (the Graph IR, as a workload would build it)."""
from __future__ import annotations

from msprof_py.runtime.graph import Graph, Op, Tensor


def T(name: str, *shape: int, dtype: str = "FLOAT16") -> Tensor:
    return Tensor(name, tuple(shape), dtype)


def tiny_cnn(n: int = 2) -> Graph:
    """conv -> bn -> relu -> maxpool -> reshape -> matmul -> softmax (NCHW, 8x8 images)."""
    x = T("x", n, 3, 8, 8)
    w = T("w1", 4, 3, 3, 3)
    bn = [T(f"bn_{k}", 4) for k in ("scale", "offset", "mean", "var")]
    fw = T("fw", 64, 10)
    ops = [
        Op("conv1", "Conv2D", [x, w], [T("c1", n, 4, 8, 8)]),
        Op("bn1", "BNInfer", [T("c1", n, 4, 8, 8), *bn], [T("b1", n, 4, 8, 8)]),
        Op("relu1", "Relu", [T("b1", n, 4, 8, 8)], [T("r1", n, 4, 8, 8)]),
        Op("pool1", "MaxPool", [T("r1", n, 4, 8, 8)], [T("p1", n, 4, 4, 4)]),
        Op("flat", "Reshape", [T("p1", n, 4, 4, 4)], [T("f", n, 64)]),
        Op("fc", "MatMulV2", [T("f", n, 64), fw], [T("o", n, 10)]),
        Op("prob", "SoftmaxV2", [T("o", n, 10)], [T("out", n, 10)]),
    ]
    return Graph("tiny_cnn", ops, [x], [T("out", n, 10)], [w, *bn, fw])


def deep_mlp(layers: int = 24, width: int = 64, batch: int = 16) -> Graph:
    """``layers`` x (MatMul -> bias Add -> Gelu) with a LayerNorm every 4 layers: a deep fp16
    network whose error only accumulates."""
    x = T("x", batch, width)
    ops, weights = [], []
    cur = x
    for i in range(layers):
        w, b = T(f"w{i}", width, width), T(f"b{i}", width)
        weights += [w, b]
        mm, ad, act = T(f"mm{i}", batch, width), T(f"add{i}", batch, width), T(f"act{i}", batch, width)
        ops += [Op(f"fc{i}", "MatMulV2", [cur, w], [mm]),
                Op(f"bias{i}", "Add", [mm, b], [ad]),
                Op(f"gelu{i}", "Gelu", [ad], [act])]
        cur = act
        if i % 4 == 3:
            g, be = T(f"ln{i}_g", width), T(f"ln{i}_b", width)
            weights += [g, be]
            ln = T(f"ln{i}", batch, width)
            ops.append(Op(f"norm{i}", "LayerNorm", [cur, g, be], [ln]))
            cur = ln
    return Graph("deep_mlp", ops, [x], [cur], weights)

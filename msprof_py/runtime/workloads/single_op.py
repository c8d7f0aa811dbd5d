"""Single-operator mode: a loop of ``aclnn*`` calls (a small MLP step written op by op, as a
PyTorch eager program would issue them), each launched every iteration with fresh task ids.

Op names follow msprof's single-op naming ``<aclnn API>_<kernel>_<op type>``; ``attrs["api"]``
is the aclnn API the call goes through.  ``aclnnNonZero`` runs on the AI CPU with a dynamic
output shape.
"""
from __future__ import annotations

from msprof_py.runtime.graph import Graph
from msprof_py.runtime.workloads._builder import GraphBuilder


def build(batch: int = 16, size: int = 1024) -> Graph:
    b = GraphBuilder("single_op")
    x = b.input("x", (batch, size))
    w = b.weight("w", (size, size))
    bias = b.weight("bias", (size,))

    def call(api: str, kernel: str, type_: str, inputs, outputs, **kw):
        return b.op(f"{api}_{kernel}_{type_}", type_, inputs, outputs, attrs={"api": api, **kw.pop("attrs", {})},
                    **kw)

    y = call("aclnnMatmul", "MatMulCommon", "MatMulV2", [x, w], [((batch, size),)])[0]
    y = call("aclnnAdd", "AddAiCore", "Add", [y, bias], [(y.shape,)])[0]
    y = call("aclnnRelu", "ReluAiCore", "Relu", [y], [(y.shape,)])[0]
    y32 = call("aclnnCast", "CastAiCore", "Cast", [y], [(y.shape, "FLOAT")])[0]
    s = call("aclnnSoftmax", "SoftmaxV2AiCore", "SoftmaxV2", [y32], [(y.shape, "FLOAT")])[0]
    g = call("aclnnLayerNorm", "LayerNormV3AiCore", "LayerNormV3", [s], [(y.shape, "FLOAT"), ((batch, 1), "FLOAT"),
                                                                        ((batch, 1), "FLOAT")])[0]
    m = call("aclnnMul", "MulAiCore", "Mul", [g, s], [(y.shape, "FLOAT")])[0]
    r = call("aclnnReduceSum", "ReduceSumAiCore", "ReduceSum", [m], [((batch,), "FLOAT")])[0]
    call("aclnnNonZero", "NonZeroAiCpu", "NonZero", [r], [((batch, 1), "INT64")], dynamic=True)
    return b.graph

"""GE-style UB fusion of an unfused graph (the NPU side runs the fused graph) and its inverse
where it is known (a device graph whose fused ops carry only their originals' names)."""
from __future__ import annotations

from msprof_py.precision.kernels import CUBE_TYPES
from msprof_py.precision.optypes import is_forward
from msprof_py.runtime.graph import Graph, Op, Tensor

# elementwise ops a compute op absorbs when they follow it (bias, batch norm, activation, residual add)
EPILOGUE_TYPES = frozenset({"BiasAdd", "Add", "AddV2", "Mul", "Relu", "Relu6", "LeakyRelu", "Gelu",
                            "FastGelu", "Sigmoid", "Swish", "Silu", "Tanh", "BNInfer", "BNInference",
                            "BNInferenceD", "BatchNorm", "BN", "FusedBatchNorm", "FusedBatchNormV3",
                            "Cast"})


def fuse(graph: Graph) -> Graph:
    """GE-style UB fusion of an unfused graph: a compute op absorbs the chain of elementwise
    epilogue ops (bias, batch norm, activation, residual add) that follows it when each link
    tensor has exactly one consumer and is not a graph output.  The fused op is named after its
    original ops joined by "_" and keeps the type of the first; ``fused_from`` lists the originals.
    """
    consumers: dict[str, int] = {}
    for op in graph.ops:
        for t in op.inputs:
            consumers[t.name] = consumers.get(t.name, 0) + 1
    outputs = {t.name for t in graph.outputs}
    ops = graph.ops
    fused: list[Op] = []
    i = 0
    while i < len(ops):
        group = [ops[i]]
        while i + 1 < len(ops):
            nxt, tail = ops[i + 1], group[-1]
            link = tail.outputs[0].name if len(tail.outputs) == 1 else None
            if (link is None or nxt.type not in EPILOGUE_TYPES or not is_forward(nxt)
                    or not is_forward(tail) or link not in {t.name for t in nxt.inputs}
                    or consumers.get(link, 0) != 1 or link in outputs):
                break
            group.append(nxt)
            i += 1
        i += 1
        if len(group) == 1:
            fused.append(group[0])
            continue
        inner = {t.name for g in group[:-1] for t in g.outputs}
        ins, seen = [], set()
        for g in group:
            for t in g.inputs:
                if t.name not in inner and t.name not in seen:
                    ins.append(t)
                    seen.add(t.name)
        head = group[0]
        fused.append(Op(name="_".join(g.name for g in group), type=head.type, inputs=ins,
                        outputs=list(group[-1].outputs), attrs=dict(head.attrs), task_type=head.task_type,
                        stream=head.stream, phase=head.phase,
                        fused_from=tuple(g.name for g in group)))
    return Graph(graph.name, fused, list(graph.inputs), list(graph.outputs), list(graph.weights))


def unfuse(graph: Graph) -> Graph:
    """The original ops of a device graph whose fused ops carry only ``fused_from`` names.

    A fused op whose originals are not in the graph is split where the split is known: a cube
    op with a bias input fused from two ops becomes the cube op (first name) and a ``BiasAdd``
    (second name).  Other fused ops stay as they are (the reference then runs them as one op,
    under the fused name).
    """
    names = {op.name for op in graph.ops}
    ops: list[Op] = []
    for op in graph.ops:
        if (op.fused_from and not any(n in names for n in op.fused_from if n != op.name)
                and op.type in CUBE_TYPES and len(op.fused_from) == 2 and len(op.inputs) == 3):
            mid = Tensor(f"{op.fused_from[0]}:0", op.outputs[0].shape, op.outputs[0].dtype, op.outputs[0].format)
            ops.append(Op(op.fused_from[0], op.type, op.inputs[:2], [mid], dict(op.attrs), op.task_type,
                          op.stream, op.phase))
            ops.append(Op(op.fused_from[1], "BiasAdd", [mid, op.inputs[2]], list(op.outputs), {}, "",
                          op.stream, op.phase))
        else:
            ops.append(op)
    return Graph(graph.name, ops, list(graph.inputs), list(graph.outputs), list(graph.weights))

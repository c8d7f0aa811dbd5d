"""What kind of op a numeric run sees: forward or not (backward and optimizer-update ops are not
executed), cube or pure data movement, and a rough forward FLOP count of a graph."""
from __future__ import annotations

import math

from msprof_py.precision.kernels import CUBE_TYPES, LAYOUT_TYPES
from msprof_py.runtime.graph import Graph, Op


def is_forward(op: Op) -> bool:
    """Whether the numeric run executes ``op`` (not a backward / optimizer-update op)."""
    return op.phase not in ("bp", "update")


def is_cube(op: Op) -> bool:
    return op.type in CUBE_TYPES


def is_layout(op: Op) -> bool:
    return op.type in LAYOUT_TYPES


def forward_flops(graph: Graph) -> float:
    """A rough FLOP count of the forward pass (cube ops: 2 * output * reduction size; others: a
    few per output element), to refuse shapes numpy would take minutes on."""
    total = 0.0
    for op in graph.ops:
        if not is_forward(op) or not op.outputs:
            continue
        out = max(math.prod(t.shape) for t in op.outputs)
        if op.type in CUBE_TYPES and len(op.inputs) > 1:
            w = op.inputs[1].shape
            red = math.prod(w[1:]) if op.type.startswith("Conv") else (w[-2] if len(w) >= 2 else 1)
            if op.type == "FlashAttentionScore":
                red = 4 * max(op.inputs[1].shape[-2], 1)
            total += 2.0 * out * red
        else:
            total += 10.0 * out
    return total

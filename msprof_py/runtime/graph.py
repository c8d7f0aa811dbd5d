"""The graph IR shared by the simulator, the tuner and the precision tools.

A :class:`Graph` is a list of :class:`Op` in execution order.  Edges are tensor names: an op
input names either a graph input, an earlier op's output, or a constant/weight (listed in
``Graph.weights``).  Shapes are element counts per dimension, data types and formats use
GE's names (``FLOAT16``, ``NC1HWC0``, ...), as they appear in op_summary.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

DTYPE_BYTES: dict[str, int] = {"FLOAT16": 2, "BF16": 2, "FLOAT": 4, "DOUBLE": 8, "INT8": 1, "UINT8": 1,
                               "INT16": 2, "UINT16": 2, "INT32": 4, "UINT32": 4, "INT64": 8, "UINT64": 8,
                               "BOOL": 1}
# GE task types an op can run as (node_basic_info.GE_TASK_TYPES names)
TASK_TYPES = ("AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV", "AI_CPU", "HCCL")


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str = "FLOAT16"
    format: str = "ND"

    @property
    def numel(self) -> int:
        return math.prod(self.shape) if self.shape else 1

    @property
    def nbytes(self) -> int:
        return self.numel * DTYPE_BYTES[self.dtype]


@dataclass
class Op:
    """One node.  ``task_type`` empty means "derive from the op type" (the cost model does)."""

    name: str
    type: str
    inputs: list[Tensor]
    outputs: list[Tensor]
    attrs: dict[str, Any] = field(default_factory=dict)
    task_type: str = ""
    stream: int = 0  # logical stream inside the model (0 = the model's main stream)
    phase: str = ""  # "fp", "bp", "update" or "" (where FP/BP step-trace points fall)
    fused_from: tuple[str, ...] = ()  # names of the original ops when GE fused them into this one
    dynamic: bool = False  # dynamic-shape op (node_basic_info from the aging stream)


@dataclass
class Graph:
    name: str
    ops: list[Op]
    inputs: list[Tensor] = field(default_factory=list)  # data copied host -> device per execution
    outputs: list[Tensor] = field(default_factory=list)  # copied device -> host per execution
    weights: list[Tensor] = field(default_factory=list)  # constants resident on the device

    def producers(self) -> dict[str, Op]:
        """Tensor name -> the op that writes it."""
        return {t.name: op for op in self.ops for t in op.outputs}

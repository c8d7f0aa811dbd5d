"""What every kernel family shares: the kernel signature and reading an op's attributes.

A kernel is ``kernel(op, inputs, q) -> outputs``: ``inputs`` are float32 arrays (values already
rounded to the side's storage precision), ``q`` rounds an intermediate to that precision
(fp16 on the NPU, a no-op for the fp32 CPU reference), and the result is one float32 array per
op output, in the op's output order, each of the declared output shape.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from msprof_py.errors import WorkloadError
from msprof_py.runtime.graph import Op

Q = Callable[[np.ndarray], np.ndarray]
Kernel = Callable[[Op, list[np.ndarray], Q], list[np.ndarray]]


def attr(op: Op, *names: str, default=None):
    """The first of ``names`` found in ``op.attrs`` (graph files spell one attribute several ways)."""
    for n in names:
        if n in op.attrs:
            return op.attrs[n]
    return default


def out_shape(op: Op, i: int = 0) -> tuple[int, ...]:
    """The declared shape of output ``i``."""
    return tuple(op.outputs[i].shape)


def bad(op: Op, why: str) -> WorkloadError:
    """The error a kernel raises for an op it cannot compute, naming the op."""
    return WorkloadError(f"op {op.name!r} ({op.type}): {why}")

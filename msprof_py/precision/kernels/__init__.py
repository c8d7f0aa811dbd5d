"""numpy kernels for the op types of the built-in workloads and user graph files.

A kernel gets its inputs as float32 arrays (values already rounded to the side's storage
precision), the op (attrs, output tensors) and ``q``, the side's rounding function for values a
device would store in its own precision between steps (fp16 on the NPU, a no-op for the fp32
CPU reference).  It returns one float32 array per op output; it may leave out trailing outputs that only the
backward pass reads (e.g. MaxPoolWithArgmax's argmax mask), which are then not dumped.  The executor rounds the final
outputs; kernels call ``q`` only on intermediates (e.g. softmax's exponentials).

One module per family, each with its own ``KERNELS`` table: :mod:`.cube` (Conv2D, MatMul,
FlashAttentionScore; ``CUBE_TYPES``), :mod:`.elementwise`, :mod:`.norm`, :mod:`.reduce`
(pooling, ReduceMean/Sum) and :mod:`.layout` (pure data movement; ``LAYOUT_TYPES``).  Shape-derived
attributes (conv stride/padding, pool windows, transposes) are read from attrs when present,
else inferred from the tensor shapes.
"""
from __future__ import annotations

from typing import Sequence

from msprof_py.errors import WorkloadError
from msprof_py.precision.kernels import cube, elementwise, layout, norm, reduce
from msprof_py.precision.kernels.common import Kernel, Q
from msprof_py.precision.kernels.cube import CUBE_TYPES, conv2d, flash_attention, matmul
from msprof_py.precision.kernels.layout import LAYOUT_TYPES
from msprof_py.runtime.graph import Op

__all__ = ["CUBE_TYPES", "KERNELS", "LAYOUT_TYPES", "Kernel", "Q", "conv2d", "flash_attention", "kernel_for",
           "matmul", "supported_types"]

# every op type has one family: a type registered twice would silently lose one kernel
_FAMILIES = (cube.KERNELS, elementwise.KERNELS, norm.KERNELS, reduce.KERNELS, layout.KERNELS)
KERNELS: dict[str, Kernel] = {t: k for family in _FAMILIES for t, k in family.items()}
assert len(KERNELS) == sum(map(len, _FAMILIES)), "an op type is registered in two kernel families"


def kernel_for(op: Op) -> Kernel:
    """The kernel of ``op.type``; an unknown type is a WorkloadError naming the op."""
    k = KERNELS.get(op.type)
    if k is None:
        raise WorkloadError(f"op {op.name!r}: op type {op.type!r} has no numeric kernel "
                            f"(supported: {', '.join(sorted(KERNELS))})")
    return k


def supported_types() -> Sequence[str]:
    return sorted(KERNELS)

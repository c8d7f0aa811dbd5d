"""How each side of a numeric run stores tensors: the NPU rounds FLOAT16 tensors to fp16 and BF16
ones to bfloat16 (kept in float32 arrays); the CPU reference keeps fp32.  Integer tensors are
int32 (int64 for INT64) on both sides."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from msprof_py.runtime.graph import Tensor

# the largest finite fp16 value
FP16_MAX = 65504.0


def round_bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 to bfloat16 (nearest even), returned as float32."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = (b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return rounded.view(np.float32)


@dataclass(frozen=True)
class Side:
    """How one side stores tensors.  ``npu`` rounds FLOAT16/BF16 tensors; ``cpu`` keeps fp32."""

    name: str  # "npu" or "cpu"

    @property
    def low_precision(self) -> bool:
        return self.name == "npu"

    def q(self, x: np.ndarray) -> np.ndarray:
        """Rounding of a vector intermediate on this side (fp16 on the NPU)."""
        if not self.low_precision:
            return x
        with np.errstate(over="ignore"):
            return x.astype(np.float16).astype(np.float32)

    def store(self, x: np.ndarray, t: Tensor) -> np.ndarray:
        """The array as this side keeps ``t`` in memory (and dumps it)."""
        if t.dtype.startswith(("INT", "UINT")) or t.dtype == "BOOL":
            return np.asarray(x).astype(np.int64 if t.dtype == "INT64" else np.int32)
        if not self.low_precision or t.dtype in ("FLOAT", "DOUBLE"):
            return np.asarray(x, dtype=np.float32)
        if t.dtype == "BF16":
            return round_bf16(np.asarray(x, dtype=np.float32))
        with np.errstate(over="ignore"):
            return np.asarray(x, dtype=np.float32).astype(np.float16)


NPU = Side("npu")
CPU = Side("cpu")

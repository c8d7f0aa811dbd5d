"""Deliberate NPU-side errors (``compare --inject``), so tests and demos have a known first error:
parsing ``op=NAME[,kind=...][,scale=X]`` and checking that the named op runs on the NPU."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from msprof_py.errors import WorkloadError
from msprof_py.precision.optypes import is_forward
from msprof_py.runtime.graph import Graph

FAULT_KINDS = ("wrong_result", "overflow")


@dataclass(frozen=True)
class Fault:
    """A deliberate NPU-side error in op ``op``.

    - ``wrong_result``: the tail half of the output (row-major) comes out negated, an error
      concentrated in one part of the tensor like the seed's example of a computation error.
    - ``overflow``: the op's result is scaled by ``scale`` (default 1e5) before it is stored,
      so values leave the fp16 range (65504) and become +-inf.
    """

    op: str
    kind: str = "wrong_result"
    scale: float = 1e5

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise WorkloadError(f"unknown fault kind {self.kind!r} (use one of {', '.join(FAULT_KINDS)})")

    def apply(self, y: np.ndarray) -> np.ndarray:
        if self.kind == "overflow":
            return (y * np.float32(self.scale)).astype(np.float32)
        y = y.copy()
        flat = y.reshape(-1)
        flat[flat.size // 2:] *= -1
        return y

    def as_dict(self) -> dict:
        d = {"op": self.op, "kind": self.kind}
        if self.kind == "overflow":
            d["scale"] = self.scale
        return d


def parse_fault(text: str) -> Fault:
    """``op=NAME[,kind=wrong_result|overflow][,scale=X]`` -> Fault."""
    parts = dict(p.split("=", 1) for p in text.split(",") if "=" in p)
    if "op" not in parts:
        raise WorkloadError(f"fault {text!r}: expected op=NAME[,kind=...]")
    try:
        scale = float(parts.get("scale", 1e5))
    except ValueError:
        raise WorkloadError(f"fault {text!r}: scale is not a number") from None
    return Fault(parts["op"], parts.get("kind", "wrong_result"), scale)


def check_faults(faults: tuple[Fault, ...], npu_graph: Graph) -> None:
    """Every fault must name an NPU op or an original op inside a fused one."""
    fwd = [op for op in npu_graph.ops if is_forward(op)]
    names = {op.name for op in fwd} | {n for op in fwd for n in op.fused_from}
    for f in faults:
        if f.op not in names:
            where = ("a backward/update op, which the numeric run does not execute"
                     if any(op.name == f.op for op in npu_graph.ops) else f"not in graph {npu_graph.name!r}")
            raise WorkloadError(f"fault names op {f.op!r}: {where}")

"""A small helper to write workload graphs tersely: tensors get ``<op name>:<i>`` names and ops
are appended in execution order."""
from __future__ import annotations

from typing import Any, Sequence

from msprof_py.runtime.graph import Graph, Op, Tensor

Shape = tuple[int, ...]


class GraphBuilder:
    def __init__(self, name: str, dtype: str = "FLOAT16") -> None:
        self.graph = Graph(name=name, ops=[])
        self.dtype = dtype

    def input(self, name: str, shape: Shape, dtype: str | None = None, fmt: str = "ND") -> Tensor:
        t = Tensor(name, tuple(shape), dtype or self.dtype, fmt)
        self.graph.inputs.append(t)
        return t

    def weight(self, name: str, shape: Shape, dtype: str | None = None, fmt: str = "ND") -> Tensor:
        t = Tensor(name, tuple(shape), dtype or self.dtype, fmt)
        self.graph.weights.append(t)
        return t

    def op(self, name: str, type_: str, inputs: Sequence[Tensor], outputs: Sequence[tuple], *,
           phase: str = "", attrs: dict[str, Any] | None = None, fused_from: Sequence[str] = (),
           dynamic: bool = False, task_type: str = "", stream: int = 0) -> list[Tensor]:
        """Append an op.  ``outputs``: ``(shape,)``, ``(shape, dtype)`` or ``(shape, dtype, format)``."""
        outs = []
        for i, spec in enumerate(outputs):
            shape = tuple(spec[0])
            dtype = spec[1] if len(spec) > 1 and spec[1] else self.dtype
            fmt = spec[2] if len(spec) > 2 else "ND"
            outs.append(Tensor(f"{name}:{i}", shape, dtype, fmt))
        self.graph.ops.append(Op(name=name, type=type_, inputs=list(inputs), outputs=outs, attrs=dict(attrs or {}),
                                 task_type=task_type, stream=stream, phase=phase,
                                 fused_from=tuple(fused_from), dynamic=dynamic))
        return outs

    def like(self, name: str, type_: str, inputs: Sequence[Tensor], ref: Tensor, **kw: Any) -> Tensor:
        """An op with one output shaped like ``ref``."""
        return self.op(name, type_, inputs, [(ref.shape, ref.dtype, ref.format)], **kw)[0]

    def output(self, t: Tensor) -> None:
        self.graph.outputs.append(t)

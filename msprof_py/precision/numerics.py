"""Numeric execution of a Graph with numpy: the NPU side and the CPU reference.

- **CPU reference**: the *unfused* graph, every tensor stored in fp32.
- **NPU**: the *fused* graph as the device runs it.  Tensors declared FLOAT16 are stored in fp16
  (BF16 is rounded to bfloat16 and kept in a float32 array), FLOAT in fp32.  Cube ops multiply
  the stored fp16 operands with fp32 accumulation; vector kernels round their intermediates to
  fp16 (see :mod:`kernels`).  A fused op (``Op.fused_from``) runs its original ops back to back
  with the intermediate tensors kept in fp32 (they never leave the core), and only its outputs
  are stored in fp16.
- **Leaf tensors** (graph inputs, weights) are drawn once per name from ``seed`` in fp32 and
  rounded by each side to its storage precision, so both sides see the same data.
- **Faults** (:class:`Fault`) are applied on the NPU side only, to the named op (an original op
  inside a fused op works too).  They exist so tests and demos have a known first error.

Ops of the backward pass and the optimizer update (``phase`` "bp"/"update") are not executed:
precision comparison covers the forward pass; they are reported as skipped.

The parts live in their own modules: :mod:`.storage` (``Side``, ``NPU``, ``CPU``), :mod:`.leaves`
(``make_leaves``), :mod:`.faults` (``Fault``), :mod:`.fusion` (``fuse``, ``unfuse``) and
:mod:`.optypes` (``is_forward``, ``forward_flops``); this module executes a graph and re-exports
them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from msprof_py.errors import WorkloadError
from msprof_py.precision.faults import FAULT_KINDS, Fault, check_faults, parse_fault
from msprof_py.precision.fusion import EPILOGUE_TYPES, fuse, unfuse
from msprof_py.precision.kernels import kernel_for
from msprof_py.precision.leaves import make_leaves
from msprof_py.precision.optypes import forward_flops, is_cube, is_forward, is_layout
from msprof_py.precision.storage import CPU, FP16_MAX, NPU, Side
from msprof_py.runtime.graph import Graph, Op, Tensor

__all__ = ["CPU", "EPILOGUE_TYPES", "FAULT_KINDS", "FP16_MAX", "NPU", "Execution", "Fault", "Side", "check_faults",
           "execute", "forward_flops", "fuse", "is_cube", "is_forward", "is_layout", "make_leaves", "parse_fault",
           "rerun_isolated", "run_op", "unfuse"]


@dataclass
class Execution:
    """The result of running one side: tensor name -> stored array, and which ops ran."""

    side: str
    values: dict[str, np.ndarray]
    executed: list[Op] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (op name, reason)


def execute(graph: Graph, side: Side, leaves: dict[str, np.ndarray], *,
            faults: tuple[Fault, ...] = (), originals: dict[str, Op] | None = None) -> Execution:
    """Run the forward ops of ``graph`` on ``side``.

    ``originals`` maps original op names to ops, for running fused ops component by component
    (the NPU side); without it a fused op runs as its own type.  Faults are applied on the NPU
    side only.
    """
    by_fault = {f.op: f for f in faults} if side.low_precision else {}
    values: dict[str, np.ndarray] = {}
    decl = {t.name: t for t in (*graph.inputs, *graph.weights)}
    for op in graph.ops:
        for t in op.inputs:
            decl.setdefault(t.name, t)
    for name, arr in leaves.items():
        values[name] = side.store(arr, decl[name]) if name in decl else arr
    run = Execution(side.name, values)
    for op in graph.ops:
        if not is_forward(op):
            run.skipped.append((op.name, f"{op.phase} op: only the forward pass is executed"))
            continue
        outs = run_op(op, values, side, by_fault, originals)
        for t, y in zip(op.outputs, outs):
            values[t.name] = side.store(y, t)
        for t in op.outputs[len(outs):]:
            run.skipped.append((f"{op.name} output {t.name}", "not computed: only the backward pass reads it"))
        run.executed.append(op)
    return run


def run_op(op: Op, values: dict[str, np.ndarray], side: Side, faults: dict[str, Fault],
           originals: dict[str, Op] | None) -> list[np.ndarray]:
    """Outputs of one (possibly fused) op as float32 arrays, before storage rounding."""
    comps = [originals[n] for n in op.fused_from if n in originals] if originals and op.fused_from else []
    if comps and len(comps) == len(op.fused_from):
        local: dict[str, np.ndarray] = {}
        last: list[np.ndarray] = []
        for c in comps:
            last = _call(c, [local.get(t.name, values.get(t.name)) for t in c.inputs], side, faults, c.inputs)
            for t, y in zip(c.outputs, last):
                local[t.name] = y  # stays fp32 inside the fused kernel
        outs = []
        for i, t in enumerate(op.outputs):
            if t.name in local:
                outs.append(local[t.name])
            elif i < len(last):
                outs.append(last[i])
            else:
                break  # a trailing output the originals do not produce
        if op.name in faults:
            outs = [faults[op.name].apply(outs[0])] + outs[1:]
        return outs
    return _call(op, [values.get(t.name) for t in op.inputs], side, faults, op.inputs)


def _call(op: Op, ins: list, side: Side, faults: dict[str, Fault], decl: list[Tensor]) -> list[np.ndarray]:
    missing = [t.name for t, a in zip(decl, ins) if a is None]
    if missing:
        raise WorkloadError(f"op {op.name!r}: input tensor(s) {', '.join(missing)} are produced by no "
                            "earlier op and are not graph inputs or weights")
    kernel = kernel_for(op)
    args = [a if a.dtype.kind in "iub" else np.asarray(a, dtype=np.float32) for a in ins]
    try:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            outs = kernel(op, args, side.q)
    except (IndexError, ValueError, TypeError, KeyError) as err:
        # the graph's shapes or inputs do not fit the op's semantics
        shapes = ", ".join(str(tuple(a.shape)) for a in args)
        raise WorkloadError(f"op {op.name!r} ({op.type}): cannot compute it from inputs of shapes {shapes} "
                            f"to {[tuple(t.shape) for t in op.outputs]}: {err}") from None
    if not outs:
        raise WorkloadError(f"op {op.name!r}: kernel produced no output")
    outs = [np.asarray(y) for y in outs[:len(op.outputs)]]
    for t, y in zip(op.outputs, outs):
        if y.size != math.prod(t.shape):
            raise WorkloadError(f"op {op.name!r}: computed {t.name} with shape {y.shape}, the graph declares {t.shape}")
    outs = [y.reshape(t.shape) for t, y in zip(op.outputs, outs)]
    if op.name in faults:
        outs = [faults[op.name].apply(outs[0])] + outs[1:]
    return outs


def rerun_isolated(op: Op, cpu_values: dict[str, np.ndarray], *, faults: tuple[Fault, ...] = (),
                   originals: dict[str, Op] | None = None) -> list[np.ndarray]:
    """Run one NPU op in NPU precision on the CPU reference's inputs (stored as the NPU would).

    This separates an error the op makes itself (it is still there with golden inputs) from
    error it inherits from its producers (it disappears).  Returns the stored NPU outputs.
    """
    values = {}
    for t in op.inputs:
        if t.name not in cpu_values:
            raise WorkloadError(f"op {op.name!r}: CPU reference value of input {t.name!r} is missing")
        values[t.name] = NPU.store(cpu_values[t.name], t)
    by_fault = {f.op: f for f in faults}
    outs = run_op(op, values, NPU, by_fault, originals)
    return [NPU.store(y, t) for t, y in zip(op.outputs, outs)]

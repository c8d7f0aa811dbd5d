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
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import numpy as np

from msprof_py.errors import WorkloadError
from msprof_py.precision.kernels import CUBE_TYPES, LAYOUT_TYPES, kernel_for
from msprof_py.runtime.graph import Graph, Op, Tensor

FAULT_KINDS = ("wrong_result", "overflow")
FP16_MAX = 65504.0


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


# ---------------------------------------------------------------- precision ------------------------

def _round_bf16(x: np.ndarray) -> np.ndarray:
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
            return _round_bf16(np.asarray(x, dtype=np.float32))
        with np.errstate(over="ignore"):
            return np.asarray(x, dtype=np.float32).astype(np.float16)


NPU = Side("npu")
CPU = Side("cpu")


# ---------------------------------------------------------------- leaf data ------------------------

def _rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def make_leaves(graph: Graph, seed: int, only: set[str] | None = None,
                skip: set[str] | dict | None = None) -> dict[str, np.ndarray]:
    """fp32 (or integer) data for every tensor no op produces: graph inputs and weights.

    The distribution depends on what consumes the tensor, so that a deep network stays in a
    sane range: He/LeCun-scaled cube weights, positive variances, unit-ish norm scales, valid
    gather indices, 0/1 attention masks (integer tensors named ``*mask``), matching cos/sin
    tables.  ``only`` / ``skip`` restrict the names drawn (a
    tensor's values depend on its name, its consumer and the seed only).
    """
    produced = {t.name for op in graph.ops for t in op.outputs}
    declared = {t.name: t for t in (*graph.inputs, *graph.weights)}
    consumer: dict[str, tuple[Op, int]] = {}
    for op in graph.ops:
        if not is_forward(op):
            continue
        for slot, t in enumerate(op.inputs):
            declared.setdefault(t.name, t)
            consumer.setdefault(t.name, (op, slot))
    leaves = {}
    for name, t in declared.items():
        if name in produced or name not in consumer:  # only what the forward pass reads
            continue
        if (only is not None and name not in only) or (skip is not None and name in skip):
            continue
        op, slot = consumer.get(name, (None, 0))
        leaves[name] = _init(t, op, slot, _rng(seed, name), seed)
    return leaves


def _init(t: Tensor, op: Op | None, slot: int, rng: np.random.Generator, seed: int) -> np.ndarray:
    shape = tuple(t.shape)
    typ = op.type if op is not None else ""
    if t.dtype.startswith(("INT", "UINT")) or t.dtype == "BOOL":
        hi = 10
        if op is not None and typ in ("GatherV2", "Gather", "Embedding"):
            table = op.inputs[0] if slot == 1 else op.inputs[1]
            hi = max(1, table.shape[0])
        elif op is not None and typ == "SoftmaxCrossEntropyWithLogits":
            hi = max(1, op.inputs[0].shape[-1])
        elif t.name.lower().endswith("mask") and shape:
            # an attention mask: 1 for the tokens of each sequence, 0 for its padding tail
            keep = rng.integers(max(1, shape[-1] // 2), shape[-1] + 1, size=shape[:-1] + (1,))
            return (np.arange(shape[-1]) < keep).astype(np.int64)
        return rng.integers(0, hi, size=shape).astype(np.int64)
    normal = lambda std: (rng.standard_normal(shape) * std).astype(np.float32)  # noqa: E731
    uniform = lambda lo, hi: rng.uniform(lo, hi, size=shape).astype(np.float32)  # noqa: E731
    if op is None:
        return normal(1.0)
    if typ == "Conv2D" and slot == 1:
        fan_in = math.prod(shape[1:]) if len(shape) > 1 else 1
        return normal(math.sqrt(2.0 / fan_in))
    if typ in CUBE_TYPES and slot == 1:
        fan_in = op.inputs[0].shape[-1] if op.inputs[0].shape else 1
        return normal(1.0 / math.sqrt(fan_in))
    if typ in CUBE_TYPES and slot >= 2 and typ != "FlashAttentionScore":
        return normal(0.1)
    if typ == "BNTrainingUpdate" and slot >= 3:
        return uniform(0.5, 1.5) if slot == 3 else normal(0.1)
    if typ.startswith(("BN", "BatchNorm", "FusedBatchNorm")) and slot >= 1:
        return uniform(0.5, 1.5) if slot in (1, 4) else normal(0.1)
    if typ.startswith(("LayerNorm", "RmsNorm")) and slot >= 1:
        return uniform(0.8, 1.2) if slot == 1 else normal(0.1)
    if typ == "RotaryMul" and slot in (1, 2):
        angle = _rng(seed, f"{op.name}:rope").uniform(0, 2 * np.pi, size=shape).astype(np.float32)
        return np.cos(angle) if slot == 1 else np.sin(angle)
    if typ in ("Log", "Sqrt", "Rsqrt"):
        return uniform(0.5, 2.0)
    if typ in ("Mul", "RealDiv", "Div") and slot >= 1:
        return uniform(0.5, 1.5)
    if slot >= 1:
        return normal(0.1)
    return normal(1.0)


# ---------------------------------------------------------------- execution ------------------------

@dataclass
class Execution:
    """The result of running one side: tensor name -> stored array, and which ops ran."""

    side: str
    values: dict[str, np.ndarray]
    executed: list[Op] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (op name, reason)


def is_forward(op: Op) -> bool:
    return op.phase not in ("bp", "update")


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


def check_faults(faults: tuple[Fault, ...], npu_graph: Graph) -> None:
    """Every fault must name an NPU op or an original op inside a fused one."""
    fwd = [op for op in npu_graph.ops if is_forward(op)]
    names = {op.name for op in fwd} | {n for op in fwd for n in op.fused_from}
    for f in faults:
        if f.op not in names:
            where = ("a backward/update op, which the numeric run does not execute"
                     if any(op.name == f.op for op in npu_graph.ops) else f"not in graph {npu_graph.name!r}")
            raise WorkloadError(f"fault names op {f.op!r}: {where}")


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


# ---------------------------------------------------------------- fusion ---------------------------

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


def is_cube(op: Op) -> bool:
    return op.type in CUBE_TYPES


def is_layout(op: Op) -> bool:
    return op.type in LAYOUT_TYPES

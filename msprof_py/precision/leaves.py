"""Leaf data of a numeric run: graph inputs and weights drawn once per name from the seed, in fp32
(integers for index, label and mask tensors), scaled by what consumes them so that a deep
network stays in a sane range.  Both sides round the same draw to their storage precision."""
from __future__ import annotations

import math
import zlib

import numpy as np

from msprof_py.precision.kernels import CUBE_TYPES
from msprof_py.precision.optypes import is_forward
from msprof_py.runtime.graph import Graph, Op, Tensor


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

"""Vector-unit elementwise kernels: binary ops with broadcasting, tensor-scalar ops, activations,
Cast, SwiGLU and RotaryMul.

Activations compute in float32 on inputs already rounded to the side's precision; fused ops
(SwiGLU, RotaryMul) round their intermediate products with ``q`` as the device stores them.
"""
from __future__ import annotations

import numpy as np

from msprof_py.precision.kernels.common import Kernel, Q, attr, bad
from msprof_py.runtime.graph import Op


def _binary(fn) -> Kernel:
    def k(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
        y = ins[0]
        for other in ins[1:]:
            y = fn(y, _align(op, y, other))
        return [y]
    return k


def _align(op: Op, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Broadcast b against a; a 1-D per-channel vector meets an NCHW tensor on axis 1."""
    try:
        np.broadcast_shapes(a.shape, b.shape)
        return b
    except ValueError:
        if b.ndim == 1 and a.ndim == 4 and a.shape[1] == b.shape[0]:
            return b.reshape(1, -1, 1, 1)
        raise bad(op, f"operands {a.shape} and {b.shape} do not broadcast") from None


def _unary(fn) -> Kernel:
    return lambda op, ins, q: [fn(ins[0]).astype(np.float32)]


def _scalar(fn) -> Kernel:
    """Ascend's tensor-scalar ops (``Muls``, ``Adds``): the scalar is the ``value`` attribute."""
    def k(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
        value = attr(op, "value")
        if value is None:
            raise bad(op, f"{op.type} needs a 'value' attribute (the scalar operand)")
        return [fn(ins[0], np.float32(value)).astype(np.float32)]
    return k


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(np.float32(0.7978845608) * (x + np.float32(0.044715) * x ** 3)))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def cast(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    dt = op.outputs[0].dtype
    x = ins[0]
    if dt == "FLOAT16":
        x = x.astype(np.float16)
    elif dt.startswith("INT") or dt.startswith("UINT"):
        x = np.trunc(x)
    return [x.astype(np.float32)]


def swiglu(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    if len(ins) >= 2:
        a, b = ins[0], ins[1]
    else:
        dim = int(attr(op, "dim", "axis", default=-1))
        a, b = np.split(ins[0], 2, axis=dim)
    return [q(a * _sigmoid(a)) * b]


def rotary_mul(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    if len(ins) != 3:
        raise bad(op, f"RotaryMul needs x, cos and sin inputs, the graph gives {len(ins)}")
    x, cos, sin = ins[0], ins[1], ins[2]
    shape = x.shape
    d = cos.shape[-1]
    if shape[-1] != d:  # x in BSH layout (B, S, N*D) with per-head tables (1, S, 1, D): rotate each head
        if shape[-1] % d or cos.ndim != x.ndim + 1:
            raise bad(op, f"cannot apply cos/sin of shape {cos.shape} to x of shape {shape}")
        x = x.reshape(*shape[:-1], shape[-1] // d, d)
    x1, x2 = np.split(x, 2, axis=-1)
    rot = np.concatenate([-x2, x1], axis=-1)
    return [(q(x * cos) + q(rot * sin)).reshape(shape)]


KERNELS: dict[str, Kernel] = {
    "Add": _binary(np.add), "AddV2": _binary(np.add), "BiasAdd": _binary(np.add),
    "Sub": _binary(np.subtract), "Mul": _binary(np.multiply),
    "Muls": _scalar(np.multiply), "Adds": _scalar(np.add),
    "RealDiv": _binary(np.divide), "Div": _binary(np.divide),
    "Maximum": _binary(np.maximum), "Minimum": _binary(np.minimum),
    "AddN": _binary(np.add),
    "Relu": _unary(lambda x: np.maximum(x, 0)),
    "Relu6": _unary(lambda x: np.clip(x, 0, 6)),
    "LeakyRelu": _unary(lambda x: np.where(x > 0, x, 0.01 * x)),
    "Gelu": _unary(_gelu), "FastGelu": _unary(_gelu),
    "Sigmoid": _unary(_sigmoid), "Tanh": _unary(np.tanh),
    "Swish": _unary(lambda x: x * _sigmoid(x)), "Silu": _unary(lambda x: x * _sigmoid(x)),
    "Exp": _unary(np.exp), "Log": _unary(np.log), "Sqrt": _unary(np.sqrt),
    "Rsqrt": _unary(lambda x: 1.0 / np.sqrt(x)), "Neg": _unary(np.negative),
    "Abs": _unary(np.abs), "Square": _unary(np.square),
    "Cast": cast,
    "Swiglu": swiglu, "SwiGlu": swiglu,
    "RotaryMul": rotary_mul,
}

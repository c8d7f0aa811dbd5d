"""Cube-unit kernels: Conv2D, the MatMul family and FlashAttentionScore.

Cube ops multiply fp16 operands with fp32 accumulation: numpy float32 matmul on
fp16-representable inputs does exactly that.  Conv stride / padding and matmul transposes are
read from attrs when present, else inferred from the tensor shapes.
"""
from __future__ import annotations

import math

import numpy as np

from msprof_py.precision.kernels.common import Kernel, Q, attr, bad, out_shape
from msprof_py.precision.kernels.windows import window_params, windows
from msprof_py.runtime.graph import Op

# ops run on the cube unit (fp16 operands, fp32 accumulation)
CUBE_TYPES = frozenset({"Conv2D", "MatMul", "MatMulV2", "MatMulV3", "BatchMatMul", "BatchMatMulV2",
                        "FlashAttentionScore", "Conv2DBackpropInput"})


def conv2d(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    x, w = ins[0], ins[1]
    if x.ndim != 4 or w.ndim != 4:
        raise bad(op, f"Conv2D needs NCHW input and (Cout, Cin/groups, kh, kw) weight, got {x.shape} and {w.shape}")
    n, c, h, wd = x.shape
    co, cig, kh, kw = w.shape
    oshape = out_shape(op)
    if len(oshape) != 4:
        raise bad(op, f"Conv2D output must be NCHW, got {oshape}")
    groups = int(attr(op, "groups", "group", default=max(1, c // cig)))
    sh, sw, *pads = window_params(op, h, wd, kh, kw, oshape[2], oshape[3],
                                  attr(op, "strides", "stride"), attr(op, "pads", "padding"))
    win = windows(x, kh, kw, sh, sw, pads, 0.0)  # N, C, OH, OW, kh, kw
    outs = []
    cpg, opg = c // groups, co // groups
    for g in range(groups):
        wg = win[:, g * cpg:(g + 1) * cpg]
        outs.append(np.einsum("nchwij,ocij->nohw", wg, w[g * opg:(g + 1) * opg], optimize=True))
    y = np.concatenate(outs, axis=1) if groups > 1 else outs[0]
    if len(ins) > 2:
        y = y + ins[2].reshape(1, -1, 1, 1)
    if y.shape != oshape:
        raise bad(op, f"computed output {y.shape} does not match the declared {oshape}")
    return [y.astype(np.float32)]


def _mm_operands(op: Op, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ta = bool(attr(op, "transpose_a", "transpose_x1", "adj_x1", default=False))
    tb = attr(op, "transpose_b", "transpose_x2", "adj_x2")
    if ta:
        a = np.swapaxes(a, -1, -2)
    if tb is None:  # infer: (.., M, K) @ (K, N), or (N, K) stored transposed
        tb = a.shape[-1] != b.shape[-2] and b.ndim >= 2 and a.shape[-1] == b.shape[-1]
    if tb:
        b = np.swapaxes(b, -1, -2)
    if a.shape[-1] != b.shape[-2]:
        raise bad(op, f"matmul inner dimensions differ: {a.shape} x {b.shape}")
    return a, b


def matmul(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    a, b = _mm_operands(op, ins[0], ins[1])
    y = np.matmul(a, b, dtype=np.float32)
    if len(ins) > 2:
        y = y + ins[2]
    return [y.reshape(out_shape(op)) if y.size == math.prod(out_shape(op)) else y]


def flash_attention(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    """softmax(Q K^T * scale) V; the fused kernel keeps scores and softmax in fp32 internally."""
    qq, k, v = ins[0], ins[1], ins[2]
    layout = str(attr(op, "input_layout", default="BNSD" if qq.ndim == 4 else "BSH"))
    heads = int(attr(op, "head_num", "num_heads", default=1))
    shape0 = qq.shape

    def split(t):
        if layout == "BSH":
            b, s, hd = t.shape
            return t.reshape(b, s, heads, hd // heads).transpose(0, 2, 1, 3)
        if layout == "BSND":
            return t.transpose(0, 2, 1, 3)
        return t

    Qm, Km, Vm = split(qq), split(k), split(v)
    scale = float(attr(op, "scale_value", "scale", default=1.0 / math.sqrt(Qm.shape[-1])))
    s = np.matmul(Qm, np.swapaxes(Km, -1, -2), dtype=np.float32) * np.float32(scale)
    if bool(attr(op, "causal", default=False)):
        sq, sk = s.shape[-2], s.shape[-1]
        s = np.where(np.tril(np.ones((sq, sk), bool), sk - sq), s, -np.inf)
    mx = s.max(axis=-1, keepdims=True)
    e = np.exp(s - mx)
    den = e.sum(axis=-1, keepdims=True)
    p = q(e / den)  # probabilities are stored in fp16 before the second matmul
    o = np.matmul(p, Vm, dtype=np.float32)
    if layout == "BSH":
        o = o.transpose(0, 2, 1, 3).reshape(shape0[0], shape0[1], -1)
    elif layout == "BSND":
        o = o.transpose(0, 2, 1, 3)
    outs = []
    stats = [mx, den]  # further outputs, in Ascend's order: softmax_max, softmax_sum
    for t in op.outputs:
        if tuple(t.shape) == o.shape:
            outs.append(o)
        elif stats and t.shape and math.prod(t.shape) == mx.size * t.shape[-1]:
            st = stats.pop(0)
            outs.append(np.broadcast_to(st, mx.shape[:-1] + (t.shape[-1],)).reshape(t.shape).copy())
        else:
            raise bad(op, f"cannot produce output {t.name} of shape {t.shape}")
    return outs


KERNELS: dict[str, Kernel] = {
    "Conv2D": conv2d,
    "MatMul": matmul, "MatMulV2": matmul, "MatMulV3": matmul,
    "BatchMatMul": matmul, "BatchMatMulV2": matmul,
    "FlashAttentionScore": flash_attention,
}

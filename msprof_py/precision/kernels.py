"""numpy kernels for the op types of the built-in workloads and user graph files.

A kernel gets its inputs as float32 arrays (values already rounded to the side's storage
precision), the op (attrs, output tensors) and ``q``, the side's rounding function for values a
device would store in its own precision between steps (fp16 on the NPU, a no-op for the fp32
CPU reference).  It returns one float32 array per op output; it may leave out trailing outputs that only the
backward pass reads (e.g. MaxPoolWithArgmax's argmax mask), which are then not dumped.  The executor rounds the final
outputs; kernels call ``q`` only on intermediates (e.g. softmax's exponentials).

Cube ops (``CUBE_TYPES``) multiply fp16 operands with fp32 accumulation: numpy float32 matmul on
fp16-representable inputs does exactly that.  Shape-derived attributes (conv stride/padding, pool
windows, transposes) are read from attrs when present, else inferred from the tensor shapes.
"""
from __future__ import annotations

import itertools
import math
from typing import Callable, Sequence

import numpy as np

from msprof_py.errors import WorkloadError
from msprof_py.runtime.graph import Op

Q = Callable[[np.ndarray], np.ndarray]
Kernel = Callable[[Op, list[np.ndarray], Q], list[np.ndarray]]

CUBE_TYPES = frozenset({"Conv2D", "MatMul", "MatMulV2", "MatMulV3", "BatchMatMul", "BatchMatMulV2",
                        "FlashAttentionScore", "Conv2DBackpropInput"})
# ops that are pure data movement: no arithmetic, so no rounding of their own
LAYOUT_TYPES = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "ExpandDims", "Identity",
                          "TransData", "Transpose", "TransposeD", "Concat", "ConcatD", "ConcatV2",
                          "GatherV2", "Gather", "Embedding", "Dropout", "DropOutDoMask", "Split",
                          "SplitD", "Slice", "StridedSlice", "ConfusionTransposeD"})


def _attr(op: Op, *names: str, default=None):
    for n in names:
        if n in op.attrs:
            return op.attrs[n]
    return default


def _out_shape(op: Op, i: int = 0) -> tuple[int, ...]:
    return tuple(op.outputs[i].shape)


def _bad(op: Op, why: str) -> WorkloadError:
    return WorkloadError(f"op {op.name!r} ({op.type}): {why}")


# ---------------------------------------------------------------- cube ----------------------------

def _pair(v, default: int) -> tuple[int, int]:
    if v is None:
        return default, default
    if isinstance(v, int):
        return v, v
    v = list(v)
    if len(v) == 4:  # NCHW-style [1, 1, sh, sw]
        return int(v[2]), int(v[3])
    if len(v) == 2:
        return int(v[0]), int(v[1])
    return int(v[0]), int(v[0])


def _window_params(op: Op, h: int, w: int, kh: int, kw: int, oh: int, ow: int,
                   strides_attr, pads_attr) -> tuple[int, int, int, int, int, int]:
    """(sh, sw, pt, pb, pl, pr) from attrs, else the smallest stride/padding giving the output."""
    if strides_attr is not None:
        sh, sw = _pair(strides_attr, 1)
        if pads_attr is not None:
            p = list(pads_attr) if not isinstance(pads_attr, int) else [pads_attr] * 4
            if len(p) == 2:
                p = [p[0], p[0], p[1], p[1]]
            return sh, sw, int(p[0]), int(p[1]), int(p[2]), int(p[3])
        cand_s = [(sh, sw)]
    else:
        cand_s = [(s, s) for s in (1, 2, 3, 4)]
    for sh, sw in cand_s:
        for ph in sorted({(kh - 1) // 2, 0, kh // 2}):
            for pw in sorted({(kw - 1) // 2, 0, kw // 2}):
                if (h + 2 * ph - kh) // sh + 1 == oh and (w + 2 * pw - kw) // sw + 1 == ow:
                    return sh, sw, ph, ph, pw, pw
    raise _bad(op, f"cannot infer stride/padding for {h}x{w} -> {oh}x{ow} with a {kh}x{kw} window")


def _windows(x: np.ndarray, kh: int, kw: int, sh: int, sw: int, pads, fill: float) -> np.ndarray:
    """(N, C, OH, OW, kh, kw) view of padded x."""
    pt, pb, pl, pr = pads
    if any(pads):
        x = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=fill)
    v = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    return v[:, :, ::sh, ::sw]


def conv2d(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    x, w = ins[0], ins[1]
    if x.ndim != 4 or w.ndim != 4:
        raise _bad(op, f"Conv2D needs NCHW input and (Cout, Cin/groups, kh, kw) weight, got {x.shape} and {w.shape}")
    n, c, h, wd = x.shape
    co, cig, kh, kw = w.shape
    oshape = _out_shape(op)
    if len(oshape) != 4:
        raise _bad(op, f"Conv2D output must be NCHW, got {oshape}")
    groups = int(_attr(op, "groups", "group", default=max(1, c // cig)))
    sh, sw, *pads = _window_params(op, h, wd, kh, kw, oshape[2], oshape[3],
                                   _attr(op, "strides", "stride"), _attr(op, "pads", "padding"))
    win = _windows(x, kh, kw, sh, sw, pads, 0.0)  # N, C, OH, OW, kh, kw
    outs = []
    cpg, opg = c // groups, co // groups
    for g in range(groups):
        wg = win[:, g * cpg:(g + 1) * cpg]
        outs.append(np.einsum("nchwij,ocij->nohw", wg, w[g * opg:(g + 1) * opg], optimize=True))
    y = np.concatenate(outs, axis=1) if groups > 1 else outs[0]
    if len(ins) > 2:
        y = y + ins[2].reshape(1, -1, 1, 1)
    if y.shape != oshape:
        raise _bad(op, f"computed output {y.shape} does not match the declared {oshape}")
    return [y.astype(np.float32)]


def _mm_operands(op: Op, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ta = bool(_attr(op, "transpose_a", "transpose_x1", "adj_x1", default=False))
    tb = _attr(op, "transpose_b", "transpose_x2", "adj_x2")
    if ta:
        a = np.swapaxes(a, -1, -2)
    if tb is None:  # infer: (.., M, K) @ (K, N), or (N, K) stored transposed
        tb = a.shape[-1] != b.shape[-2] and b.ndim >= 2 and a.shape[-1] == b.shape[-1]
    if tb:
        b = np.swapaxes(b, -1, -2)
    if a.shape[-1] != b.shape[-2]:
        raise _bad(op, f"matmul inner dimensions differ: {a.shape} x {b.shape}")
    return a, b


def matmul(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    a, b = _mm_operands(op, ins[0], ins[1])
    y = np.matmul(a, b, dtype=np.float32)
    if len(ins) > 2:
        y = y + ins[2]
    return [y.reshape(_out_shape(op)) if y.size == math.prod(_out_shape(op)) else y]


def flash_attention(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    """softmax(Q K^T * scale) V; the fused kernel keeps scores and softmax in fp32 internally."""
    qq, k, v = ins[0], ins[1], ins[2]
    layout = str(_attr(op, "input_layout", default="BNSD" if qq.ndim == 4 else "BSH"))
    heads = int(_attr(op, "head_num", "num_heads", default=1))
    shape0 = qq.shape

    def split(t):
        if layout == "BSH":
            b, s, hd = t.shape
            return t.reshape(b, s, heads, hd // heads).transpose(0, 2, 1, 3)
        if layout == "BSND":
            return t.transpose(0, 2, 1, 3)
        return t

    Qm, Km, Vm = split(qq), split(k), split(v)
    scale = float(_attr(op, "scale_value", "scale", default=1.0 / math.sqrt(Qm.shape[-1])))
    s = np.matmul(Qm, np.swapaxes(Km, -1, -2), dtype=np.float32) * np.float32(scale)
    if bool(_attr(op, "causal", default=False)):
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
            raise _bad(op, f"cannot produce output {t.name} of shape {t.shape}")
    return outs


# ---------------------------------------------------------------- vector ---------------------------

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
        raise _bad(op, f"operands {a.shape} and {b.shape} do not broadcast") from None


def _unary(fn) -> Kernel:
    return lambda op, ins, q: [fn(ins[0]).astype(np.float32)]


def _scalar(fn) -> Kernel:
    """Ascend's tensor-scalar ops (``Muls``, ``Adds``): the scalar is the ``value`` attribute."""
    def k(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
        value = _attr(op, "value")
        if value is None:
            raise _bad(op, f"{op.type} needs a 'value' attribute (the scalar operand)")
        return [fn(ins[0], np.float32(value)).astype(np.float32)]
    return k


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(np.float32(0.7978845608) * (x + np.float32(0.044715) * x ** 3)))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def softmax(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    axis = _attr(op, "axis", "axes", "dim", default=-1)
    axis = int(axis[0] if isinstance(axis, (list, tuple)) else axis)
    x = ins[0]
    e = q(np.exp(x - x.max(axis=axis, keepdims=True)))  # the vector unit stores exp in fp16
    return [e / e.sum(axis=axis, keepdims=True, dtype=np.float32)]


def layer_norm(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    x = ins[0]
    gamma = ins[1] if len(ins) > 1 else None
    nd = gamma.ndim if gamma is not None else 1
    axis = _attr(op, "begin_norm_axis", default=x.ndim - nd)
    axes = tuple(range(int(axis) % x.ndim, x.ndim))
    eps = np.float32(_attr(op, "epsilon", "eps", default=1e-5))
    mean = x.mean(axis=axes, keepdims=True, dtype=np.float32)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True, dtype=np.float32)
    y = q((x - mean) / np.sqrt(var + eps))
    if gamma is not None:
        y = y * gamma
    if len(ins) > 2:
        y = y + ins[2]
    # extra outputs: the mean, then the variance (LayerNorm) or 1/sqrt(var + eps) (LayerNormV3)
    second = 1.0 / np.sqrt(var + eps) if op.type == "LayerNormV3" else var
    return [y] + [st.reshape(t.shape) for st, t in zip((mean, second), op.outputs[1:3])]


def rms_norm(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    x = ins[0]
    gamma = ins[1] if len(ins) > 1 else None
    eps = np.float32(_attr(op, "epsilon", "eps", default=1e-6))
    ms = (x * x).mean(axis=-1, keepdims=True, dtype=np.float32)
    rstd = 1.0 / np.sqrt(ms + eps)
    y = q(x * rstd)
    if gamma is not None:
        y = y * gamma
    outs = [y]
    if len(op.outputs) > 1:
        outs.append(rstd.reshape(op.outputs[1].shape))
    return outs


def batch_norm(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    """Inference batch norm: inputs x, scale, offset, mean, variance (NCHW, channel axis 1)."""
    x = ins[0]
    c = x.shape[1]
    scale, offset, mean, var = (ins[i].reshape(1, c, *([1] * (x.ndim - 2))) if len(ins) > i else None
                                for i in (1, 2, 3, 4))
    eps = np.float32(_attr(op, "epsilon", "eps", default=1e-5))
    if mean is None:  # training-mode BN: batch statistics
        axes = (0,) + tuple(range(2, x.ndim))
        mean = x.mean(axis=axes, keepdims=True)
        var = x.var(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if scale is not None:
        y = y * scale
    if offset is not None:
        y = y + offset
    return [y.astype(np.float32)] + [np.zeros(t.shape, np.float32) for t in op.outputs[1:]]


def _pool(kind: str) -> Kernel:
    def k(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
        x = ins[0]
        oshape = _out_shape(op)
        if x.ndim != 4:
            raise _bad(op, f"pooling needs NCHW input, got {x.shape}")
        n, c, h, w = x.shape
        if oshape[-2:] == (1, 1) or _attr(op, "global_pooling", default=False):
            red = x.max(axis=(2, 3), keepdims=True) if kind == "max" else x.mean(axis=(2, 3), keepdims=True, dtype=np.float32)
            return [red.reshape(oshape)]
        ks = _attr(op, "ksize", "kernel_size", "window")
        cands = [_pair(ks, 1)] if ks is not None else [(3, 3), (2, 2), (1, 1)]
        for kh, kw in cands:
            try:
                sh, sw, *pads = _window_params(op, h, w, kh, kw, oshape[2], oshape[3],
                                               _attr(op, "strides", "stride"), _attr(op, "pads"))
                break
            except WorkloadError:
                continue
        else:
            raise _bad(op, f"cannot infer the pooling window for {x.shape} -> {oshape}")
        fill = -np.inf if kind == "max" else 0.0
        win = _windows(x, kh, kw, sh, sw, pads, fill)
        y = win.max(axis=(4, 5)) if kind == "max" else win.mean(axis=(4, 5), dtype=np.float32)
        return [y.astype(np.float32)]
    return k


def reduce(kind: str) -> Kernel:
    def k(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
        x = ins[0]
        oshape = _out_shape(op)
        axes = _attr(op, "axes", "axis", "dim")
        if axes is None:
            axes = _infer_reduce_axes(op, x.shape, oshape)
        axes = tuple(int(a) % x.ndim for a in (axes if isinstance(axes, (list, tuple)) else [axes]))
        y = x.mean(axis=axes, dtype=np.float32) if kind == "mean" else x.sum(axis=axes, dtype=np.float32)
        return [y.reshape(oshape)]
    return k


def _infer_reduce_axes(op: Op, ishape: tuple[int, ...], oshape: tuple[int, ...]) -> tuple[int, ...]:
    if len(oshape) == len(ishape):  # keepdims
        return tuple(i for i, (a, b) in enumerate(zip(ishape, oshape)) if a != b and b == 1)
    for axes in itertools.combinations(range(len(ishape)), len(ishape) - len(oshape)):
        if tuple(s for i, s in enumerate(ishape) if i not in axes) == tuple(oshape):
            return axes
    raise _bad(op, f"cannot infer reduce axes for {ishape} -> {oshape}")


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
        dim = int(_attr(op, "dim", "axis", default=-1))
        a, b = np.split(ins[0], 2, axis=dim)
    return [q(a * _sigmoid(a)) * b]


def rotary_mul(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    if len(ins) != 3:
        raise _bad(op, f"RotaryMul needs x, cos and sin inputs, the graph gives {len(ins)}")
    x, cos, sin = ins[0], ins[1], ins[2]
    shape = x.shape
    d = cos.shape[-1]
    if shape[-1] != d:  # x in BSH layout (B, S, N*D) with per-head tables (1, S, 1, D): rotate each head
        if shape[-1] % d or cos.ndim != x.ndim + 1:
            raise _bad(op, f"cannot apply cos/sin of shape {cos.shape} to x of shape {shape}")
        x = x.reshape(*shape[:-1], shape[-1] // d, d)
    x1, x2 = np.split(x, 2, axis=-1)
    rot = np.concatenate([-x2, x1], axis=-1)
    return [(q(x * cos) + q(rot * sin)).reshape(shape)]


# ---------------------------------------------------------------- layout ---------------------------

def reshape(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    oshape = _out_shape(op)
    if ins[0].size != math.prod(oshape):
        raise _bad(op, f"cannot reshape {ins[0].shape} to {oshape}")
    return [ins[0].reshape(oshape)]


def transpose(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    x = ins[0]
    oshape = _out_shape(op)
    perm = _attr(op, "perm", "axes")
    if perm is None:
        perms = [p for p in itertools.permutations(range(x.ndim))
                 if tuple(x.shape[i] for i in p) == tuple(oshape)]
        if not perms:
            raise _bad(op, f"no permutation maps {x.shape} to {oshape}")
        # several permutations fit when dims repeat: prefer one that moves something
        moving = [p for p in perms if p != tuple(range(x.ndim))]
        perm = moving[0] if moving else perms[0]
    return [np.transpose(x, perm)]


def confusion_transpose(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    """GE's fused Reshape + Transpose (attrs ``perm``, ``shape``, ``transpose_first``): reshape to
    ``shape`` then transpose by ``perm``, or (``transpose_first``) transpose then reshape."""
    perm, shape = _attr(op, "perm"), _attr(op, "shape")
    if perm is None or shape is None:
        raise _bad(op, "ConfusionTransposeD needs 'perm' and 'shape' attributes")
    x = ins[0]
    if bool(_attr(op, "transpose_first", default=False)):
        return [np.transpose(x, tuple(perm)).reshape(tuple(shape))]
    return [np.transpose(x.reshape(tuple(shape)), tuple(perm))]


def concat(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    axis = _attr(op, "axis", "concat_dim", "dim")
    if axis is None:
        oshape = _out_shape(op)
        diff = [i for i, (a, b) in enumerate(zip(ins[0].shape, oshape)) if a != b]
        axis = diff[0] if diff else 0
    return [np.concatenate(ins, axis=int(axis))]


def gather(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    table, idx = ins[0], ins[1]
    if table.ndim < idx.ndim or np.issubdtype(type(table.flat[0]), np.integer):
        table, idx = idx, table
    return [table[np.clip(idx.astype(np.int64), 0, table.shape[0] - 1)]]


def split(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    x = ins[0]
    shapes = [tuple(t.shape) for t in op.outputs]
    axis = _attr(op, "axis", "split_dim")
    num = _attr(op, "num_split")
    if num is not None:  # equal parts along ``split_dim`` (SplitD's attrs)
        return list(np.split(x, int(num), axis=int(axis or 0)))
    if axis is None:
        axis = next(i for i in range(x.ndim) if shapes[0][i] != x.shape[i]) if shapes[0] != x.shape else 0
    bounds = np.cumsum([s[int(axis)] for s in shapes])[:-1]
    return list(np.split(x, bounds, axis=int(axis)))


def trans_data(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    """A format change.  In the logical layout it is a reshape, or, from NCHW into NC1HWC0,
    padding the channels up to a multiple of C0 with zeros (cropping them on the way back)."""
    x = ins[0]
    oshape = _out_shape(op)
    if x.size == math.prod(oshape):
        return [x.reshape(oshape)]
    if x.ndim == len(oshape) == 4 and x.shape[0] == oshape[0] and x.shape[2:] == oshape[2:]:
        c = oshape[1]
        if c > x.shape[1]:
            return [np.pad(x, ((0, 0), (0, c - x.shape[1]), (0, 0), (0, 0)))]
        return [x[:, :c]]
    raise _bad(op, f"cannot change {x.shape} into {oshape}")


def bn_training_reduce(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    """Per-channel sum and sum of squares over N, H, W (fp32 statistics)."""
    x = ins[0].astype(np.float32)
    axes = (0,) + tuple(range(2, x.ndim))
    return [x.sum(axis=axes, keepdims=True).reshape(_out_shape(op, 0)),
            (x * x).sum(axis=axes, keepdims=True).reshape(_out_shape(op, 1))]


def bn_training_update(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    """Batch norm with the batch statistics: inputs x, sum, square_sum, gamma, beta."""
    x, s, sq = ins[0], ins[1], ins[2]
    c = x.shape[1]
    count = x.size / c
    shape = (1, c) + (1,) * (x.ndim - 2)
    mean = s.reshape(shape) / np.float32(count)
    var = np.maximum(sq.reshape(shape) / np.float32(count) - mean * mean, 0)
    eps = np.float32(_attr(op, "epsilon", "eps", default=1e-5))
    y = (x - mean) / np.sqrt(var + eps)
    if len(ins) > 3:
        y = y * _channel(op, ins[3], c, shape)
    if len(ins) > 4:
        y = y + _channel(op, ins[4], c, shape)
    outs = [y.astype(np.float32)]
    for t, st in zip(op.outputs[1:], (mean, var)):
        outs.append(st.reshape(t.shape))
    return outs


def _channel(op: Op, v: np.ndarray, c: int, shape: tuple[int, ...]) -> np.ndarray:
    if v.size == c:
        return v.reshape(shape)
    if v.size < c:  # channels padded to a multiple of C0: the pad channels get 0
        return np.pad(v.ravel(), (0, c - v.size)).reshape(shape)
    raise _bad(op, f"per-channel parameter of {v.size} elements for {c} channels")


def softmax_cross_entropy(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    """(loss per sample, gradient softmax - onehot) from logits and integer labels."""
    logits, labels = ins[0], ins[1].astype(np.int64).ravel()
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    p = e / e.sum(axis=-1, keepdims=True)
    rows = np.arange(logits.shape[0])
    lab = np.clip(labels, 0, logits.shape[-1] - 1)
    loss = -(z[rows, lab] - np.log(e.sum(axis=-1)))
    grad = p.copy()
    grad[rows, lab] -= 1
    return [loss.reshape(_out_shape(op, 0)), grad.reshape(_out_shape(op, 1))][:len(op.outputs)]


def strided_slice(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    x = ins[0]
    oshape = _out_shape(op)
    begin = _attr(op, "begin", "offsets")
    if begin is None:  # no attrs: the leading part of every axis
        return [x[tuple(slice(0, n) for n in oshape)].reshape(oshape)] if x.ndim == len(oshape) else [reshape(op, ins, q)[0]]
    end = _attr(op, "end", default=[b + n for b, n in zip(begin, oshape)])
    strides = _attr(op, "strides", default=[1] * len(begin))
    sl = tuple(slice(int(b), int(e), int(st)) for b, e, st in zip(begin, end, strides))
    return [x[sl].reshape(oshape)]


def non_zero(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    """Indices of the non-zero elements (a dynamic shape): rows beyond the count found are -1,
    so the result fills the declared (maximum) output shape."""
    idx = np.argwhere(ins[0] != 0)
    oshape = _out_shape(op)
    out = np.full((math.prod(oshape) // max(idx.shape[1], 1), idx.shape[1]), -1, dtype=np.int64)
    n = min(len(idx), out.shape[0])
    out[:n] = idx[:n]
    return [out.reshape(oshape)]


def top_k(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    """The ``k`` largest values along the last axis (k from the ``k`` attr or the output shape),
    sorted descending, and their indices; ties keep the lower index first."""
    x = ins[0]
    k = int(_attr(op, "k", default=_out_shape(op)[-1]))
    if not 0 < k <= x.shape[-1]:
        raise _bad(op, f"k={k} for a last axis of {x.shape[-1]}")
    idx = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return [np.take_along_axis(x, idx, axis=-1), idx.astype(np.int64)]


def dropout_gen_mask(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    """Dropout is off in a precision comparison (as in inference): the mask keeps every element."""
    t = op.outputs[0]
    if t.dtype in ("UINT8", "INT8"):  # a bit mask, 8 elements per byte
        return [np.full(t.shape, 255, dtype=np.float32)]
    return [np.ones(t.shape, dtype=np.float32)]


KERNELS: dict[str, Kernel] = {
    "Conv2D": conv2d,
    "MatMul": matmul, "MatMulV2": matmul, "MatMulV3": matmul,
    "BatchMatMul": matmul, "BatchMatMulV2": matmul,
    "FlashAttentionScore": flash_attention,
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
    "Softmax": softmax, "SoftmaxV2": softmax,
    "LayerNorm": layer_norm, "LayerNormV3": layer_norm,
    "RmsNorm": rms_norm,
    "BatchNorm": batch_norm, "BN": batch_norm, "BNInfer": batch_norm, "BNInference": batch_norm,
    "BNInferenceD": batch_norm, "FusedBatchNorm": batch_norm, "FusedBatchNormV3": batch_norm,
    "MaxPool": _pool("max"), "MaxPoolV3": _pool("max"), "AvgPool": _pool("avg"),
    "AvgPoolV2": _pool("avg"), "GlobalAveragePool": _pool("avg"),
    "ReduceMean": reduce("mean"), "ReduceMeanD": reduce("mean"),
    "ReduceSum": reduce("sum"), "ReduceSumD": reduce("sum"),
    "Cast": cast,
    "Swiglu": swiglu, "SwiGlu": swiglu,
    "RotaryMul": rotary_mul,
    "TransData": trans_data,
    "BNTrainingReduce": bn_training_reduce, "BNTrainingUpdate": bn_training_update,
    "MaxPoolWithArgmaxV1": _pool("max"), "MaxPoolWithArgmaxV2": _pool("max"),
    "SoftmaxCrossEntropyWithLogits": softmax_cross_entropy,
    "StridedSliceD": strided_slice, "StridedSlice": strided_slice, "Slice": strided_slice,
    "Reshape": reshape, "Flatten": reshape, "Squeeze": reshape, "Unsqueeze": reshape,
    "ExpandDims": reshape, "Identity": reshape,
    # dropout is off in a precision comparison (as in inference): the mask is not applied
    "Dropout": reshape, "DropOutDoMask": reshape, "DropOutDoMaskV3": reshape,
    "Transpose": transpose, "TransposeD": transpose, "ConfusionTransposeD": confusion_transpose,
    "Concat": concat, "ConcatD": concat, "ConcatV2": concat,
    "GatherV2": gather, "Gather": gather, "Embedding": gather,
    "Split": split, "SplitD": split,
    "NonZero": non_zero, "TopKV2": top_k, "TopK": top_k,
    "DropOutGenMask": dropout_gen_mask, "DropOutGenMaskV3": dropout_gen_mask,
}


def kernel_for(op: Op) -> Kernel:
    """The kernel of ``op.type``; an unknown type is a WorkloadError naming the op."""
    k = KERNELS.get(op.type)
    if k is None:
        raise WorkloadError(f"op {op.name!r}: op type {op.type!r} has no numeric kernel "
                            f"(supported: {', '.join(sorted(KERNELS))})")
    return k


def supported_types() -> Sequence[str]:
    return sorted(KERNELS)

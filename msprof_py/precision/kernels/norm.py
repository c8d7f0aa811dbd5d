"""Normalisation kernels: Softmax, LayerNorm, RmsNorm, the BatchNorm family (inference and the
training pair BNTrainingReduce / BNTrainingUpdate) and SoftmaxCrossEntropyWithLogits.

Statistics (means, variances, sums) are kept in float32, as the device's vector unit does; the
normalised values and softmax's exponentials are rounded with ``q`` where the device stores them.
"""
from __future__ import annotations

import numpy as np

from msprof_py.precision.kernels.common import Kernel, Q, attr, bad, out_shape
from msprof_py.runtime.graph import Op


def softmax(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    axis = attr(op, "axis", "axes", "dim", default=-1)
    axis = int(axis[0] if isinstance(axis, (list, tuple)) else axis)
    x = ins[0]
    e = q(np.exp(x - x.max(axis=axis, keepdims=True)))  # the vector unit stores exp in fp16
    return [e / e.sum(axis=axis, keepdims=True, dtype=np.float32)]


def layer_norm(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    x = ins[0]
    gamma = ins[1] if len(ins) > 1 else None
    nd = gamma.ndim if gamma is not None else 1
    axis = attr(op, "begin_norm_axis", default=x.ndim - nd)
    axes = tuple(range(int(axis) % x.ndim, x.ndim))
    eps = np.float32(attr(op, "epsilon", "eps", default=1e-5))
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
    eps = np.float32(attr(op, "epsilon", "eps", default=1e-6))
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
    eps = np.float32(attr(op, "epsilon", "eps", default=1e-5))
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


def bn_training_reduce(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    """Per-channel sum and sum of squares over N, H, W (fp32 statistics)."""
    x = ins[0].astype(np.float32)
    axes = (0,) + tuple(range(2, x.ndim))
    return [x.sum(axis=axes, keepdims=True).reshape(out_shape(op, 0)),
            (x * x).sum(axis=axes, keepdims=True).reshape(out_shape(op, 1))]


def bn_training_update(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    """Batch norm with the batch statistics: inputs x, sum, square_sum, gamma, beta."""
    x, s, sq = ins[0], ins[1], ins[2]
    c = x.shape[1]
    count = x.size / c
    shape = (1, c) + (1,) * (x.ndim - 2)
    mean = s.reshape(shape) / np.float32(count)
    var = np.maximum(sq.reshape(shape) / np.float32(count) - mean * mean, 0)
    eps = np.float32(attr(op, "epsilon", "eps", default=1e-5))
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
    raise bad(op, f"per-channel parameter of {v.size} elements for {c} channels")


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
    return [loss.reshape(out_shape(op, 0)), grad.reshape(out_shape(op, 1))][:len(op.outputs)]


KERNELS: dict[str, Kernel] = {
    "Softmax": softmax, "SoftmaxV2": softmax,
    "LayerNorm": layer_norm, "LayerNormV3": layer_norm,
    "RmsNorm": rms_norm,
    "BatchNorm": batch_norm, "BN": batch_norm, "BNInfer": batch_norm, "BNInference": batch_norm,
    "BNInferenceD": batch_norm, "FusedBatchNorm": batch_norm, "FusedBatchNormV3": batch_norm,
    "BNTrainingReduce": bn_training_reduce, "BNTrainingUpdate": bn_training_update,
    "SoftmaxCrossEntropyWithLogits": softmax_cross_entropy,
}

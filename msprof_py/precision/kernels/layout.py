"""Data-movement kernels: no arithmetic, so no rounding of their own (``LAYOUT_TYPES``) —
reshapes, transposes, concat / split, gather, slices, TransData's format change — plus the
index and mask producers NonZero, TopK and DropOutGenMask."""
from __future__ import annotations

import itertools
import math

import numpy as np

from msprof_py.precision.kernels.common import Kernel, Q, attr, bad, out_shape
from msprof_py.runtime.graph import Op

# ops that are pure data movement: no arithmetic, so no rounding of their own
LAYOUT_TYPES = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "ExpandDims", "Identity",
                          "TransData", "Transpose", "TransposeD", "Concat", "ConcatD", "ConcatV2",
                          "GatherV2", "Gather", "Embedding", "Dropout", "DropOutDoMask", "Split",
                          "SplitD", "Slice", "StridedSlice", "ConfusionTransposeD"})


def reshape(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    oshape = out_shape(op)
    if ins[0].size != math.prod(oshape):
        raise bad(op, f"cannot reshape {ins[0].shape} to {oshape}")
    return [ins[0].reshape(oshape)]


def transpose(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    x = ins[0]
    oshape = out_shape(op)
    perm = attr(op, "perm", "axes")
    if perm is None:
        perms = [p for p in itertools.permutations(range(x.ndim))
                 if tuple(x.shape[i] for i in p) == tuple(oshape)]
        if not perms:
            raise bad(op, f"no permutation maps {x.shape} to {oshape}")
        # several permutations fit when dims repeat: prefer one that moves something
        moving = [p for p in perms if p != tuple(range(x.ndim))]
        perm = moving[0] if moving else perms[0]
    return [np.transpose(x, perm)]


def confusion_transpose(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    """GE's fused Reshape + Transpose (attrs ``perm``, ``shape``, ``transpose_first``): reshape to
    ``shape`` then transpose by ``perm``, or (``transpose_first``) transpose then reshape."""
    perm, shape = attr(op, "perm"), attr(op, "shape")
    if perm is None or shape is None:
        raise bad(op, "ConfusionTransposeD needs 'perm' and 'shape' attributes")
    x = ins[0]
    if bool(attr(op, "transpose_first", default=False)):
        return [np.transpose(x, tuple(perm)).reshape(tuple(shape))]
    return [np.transpose(x.reshape(tuple(shape)), tuple(perm))]


def concat(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    axis = attr(op, "axis", "concat_dim", "dim")
    if axis is None:
        oshape = out_shape(op)
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
    axis = attr(op, "axis", "split_dim")
    num = attr(op, "num_split")
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
    oshape = out_shape(op)
    if x.size == math.prod(oshape):
        return [x.reshape(oshape)]
    if x.ndim == len(oshape) == 4 and x.shape[0] == oshape[0] and x.shape[2:] == oshape[2:]:
        c = oshape[1]
        if c > x.shape[1]:
            return [np.pad(x, ((0, 0), (0, c - x.shape[1]), (0, 0), (0, 0)))]
        return [x[:, :c]]
    raise bad(op, f"cannot change {x.shape} into {oshape}")


def strided_slice(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    x = ins[0]
    oshape = out_shape(op)
    begin = attr(op, "begin", "offsets")
    if begin is None:  # no attrs: the leading part of every axis
        return [x[tuple(slice(0, n) for n in oshape)].reshape(oshape)] if x.ndim == len(oshape) else [reshape(op, ins, q)[0]]
    end = attr(op, "end", default=[b + n for b, n in zip(begin, oshape)])
    strides = attr(op, "strides", default=[1] * len(begin))
    sl = tuple(slice(int(b), int(e), int(st)) for b, e, st in zip(begin, end, strides))
    return [x[sl].reshape(oshape)]


def non_zero(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    """Indices of the non-zero elements (a dynamic shape): rows beyond the count found are -1,
    so the result fills the declared (maximum) output shape."""
    idx = np.argwhere(ins[0] != 0)
    oshape = out_shape(op)
    out = np.full((math.prod(oshape) // max(idx.shape[1], 1), idx.shape[1]), -1, dtype=np.int64)
    n = min(len(idx), out.shape[0])
    out[:n] = idx[:n]
    return [out.reshape(oshape)]


def top_k(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    """The ``k`` largest values along the last axis (k from the ``k`` attr or the output shape),
    sorted descending, and their indices; ties keep the lower index first."""
    x = ins[0]
    k = int(attr(op, "k", default=out_shape(op)[-1]))
    if not 0 < k <= x.shape[-1]:
        raise bad(op, f"k={k} for a last axis of {x.shape[-1]}")
    idx = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return [np.take_along_axis(x, idx, axis=-1), idx.astype(np.int64)]


def dropout_gen_mask(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
    """Dropout is off in a precision comparison (as in inference): the mask keeps every element."""
    t = op.outputs[0]
    if t.dtype in ("UINT8", "INT8"):  # a bit mask, 8 elements per byte
        return [np.full(t.shape, 255, dtype=np.float32)]
    return [np.ones(t.shape, dtype=np.float32)]


KERNELS: dict[str, Kernel] = {
    "TransData": trans_data,
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

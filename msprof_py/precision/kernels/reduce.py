"""Reduction kernels: pooling over NCHW windows (max / average, global or windowed) and
ReduceMean / ReduceSum over axes (from attrs, else inferred from the output shape).  Sums and
means accumulate in float32."""
from __future__ import annotations

import itertools

import numpy as np

from msprof_py.errors import WorkloadError
from msprof_py.precision.kernels.common import Kernel, Q, attr, bad, out_shape
from msprof_py.precision.kernels.windows import pair, window_params, windows
from msprof_py.runtime.graph import Op


def _pool(kind: str) -> Kernel:
    def k(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
        x = ins[0]
        oshape = out_shape(op)
        if x.ndim != 4:
            raise bad(op, f"pooling needs NCHW input, got {x.shape}")
        n, c, h, w = x.shape
        if oshape[-2:] == (1, 1) or attr(op, "global_pooling", default=False):
            red = x.max(axis=(2, 3), keepdims=True) if kind == "max" else x.mean(axis=(2, 3), keepdims=True, dtype=np.float32)
            return [red.reshape(oshape)]
        ks = attr(op, "ksize", "kernel_size", "window")
        cands = [pair(ks, 1)] if ks is not None else [(3, 3), (2, 2), (1, 1)]
        for kh, kw in cands:
            try:
                sh, sw, *pads = window_params(op, h, w, kh, kw, oshape[2], oshape[3],
                                              attr(op, "strides", "stride"), attr(op, "pads"))
                break
            except WorkloadError:
                continue
        else:
            raise bad(op, f"cannot infer the pooling window for {x.shape} -> {oshape}")
        fill = -np.inf if kind == "max" else 0.0
        win = windows(x, kh, kw, sh, sw, pads, fill)
        y = win.max(axis=(4, 5)) if kind == "max" else win.mean(axis=(4, 5), dtype=np.float32)
        return [y.astype(np.float32)]
    return k


def reduce(kind: str) -> Kernel:
    def k(op: Op, ins: list[np.ndarray], q: Q) -> list[np.ndarray]:
        x = ins[0]
        oshape = out_shape(op)
        axes = attr(op, "axes", "axis", "dim")
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
    raise bad(op, f"cannot infer reduce axes for {ishape} -> {oshape}")


KERNELS: dict[str, Kernel] = {
    "MaxPool": _pool("max"), "MaxPoolV3": _pool("max"), "AvgPool": _pool("avg"),
    "AvgPoolV2": _pool("avg"), "GlobalAveragePool": _pool("avg"),
    # the argmax mask is a backward-pass output: left out (not dumped)
    "MaxPoolWithArgmaxV1": _pool("max"), "MaxPoolWithArgmaxV2": _pool("max"),
    "ReduceMean": reduce("mean"), "ReduceMeanD": reduce("mean"),
    "ReduceSum": reduce("sum"), "ReduceSumD": reduce("sum"),
}

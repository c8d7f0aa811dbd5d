"""Device formats -> the logical (origin) layout the numpy kernels and the dumps use.

A device graph declares GE's storage formats: activations in NC1HWC0 (``N, C1, H, W, C0`` with
the channels padded to ``C1 * C0``), convolution filters in FRACTAL_Z (``C1*kh*kw, Cout1, 16,
16``).  Numerics run on the logical view with the same element count: NC1HWC0 ->
``(N, C1*C0, H, W)``, FRACTAL_Z -> ``(Cout1*16, C1*16, kh, kw)``, where ``kh*kw`` comes from
the consuming convolution (``ksize`` attr, or ``dim0 / C1``).  The generated weights are drawn in
the logical layout directly, so no data is reordered; dumps are written in the origin layout
(NCHW / ND), the form msaccucmp converts device dumps to before comparing.
"""
from __future__ import annotations

import math
from dataclasses import replace

from msprof_py.runtime.graph import Graph, Op, Tensor


def _logical(t: Tensor, kernel: tuple[int, int] | None) -> Tensor:
    s = t.shape
    if t.format == "NC1HWC0" and len(s) == 5:
        return replace(t, shape=(s[0], s[1] * s[4], s[2], s[3]), format="NCHW")
    if t.format == "FRACTAL_Z" and len(s) == 4 and kernel is not None:
        kh, kw = kernel
        c1 = s[0] // (kh * kw)
        return replace(t, shape=(s[1] * s[2], c1 * s[3], kh, kw), format="NCHW")
    return t


def _conv_kernel(op: Op) -> tuple[int, int] | None:
    """(kh, kw) of a Conv2D whose filter is FRACTAL_Z."""
    ks = op.attrs.get("ksize") or op.attrs.get("kernel_size")
    if ks is not None:
        ks = list(ks) if not isinstance(ks, int) else [ks, ks]
        return int(ks[-2]), int(ks[-1])
    x, w = op.inputs[0], op.inputs[1]
    c1 = x.shape[1] if x.format == "NC1HWC0" and len(x.shape) == 5 else math.ceil(x.shape[1] / 16)
    k2 = w.shape[0] // max(c1, 1)
    k = int(round(math.sqrt(k2)))
    return (k, k) if k * k == k2 else None


def to_logical(graph: Graph) -> Graph:
    """A copy of ``graph`` with every tensor in its logical layout (see the module docstring)."""
    kernels: dict[str, tuple[int, int]] = {}
    for op in graph.ops:
        if op.type.startswith("Conv2D") and len(op.inputs) > 1 and op.inputs[1].format == "FRACTAL_Z":
            k = _conv_kernel(op)
            if k is not None:
                kernels[op.inputs[1].name] = k
    conv = lambda t: _logical(t, kernels.get(t.name))  # noqa: E731
    ops = [replace(op, inputs=[conv(t) for t in op.inputs], outputs=[conv(t) for t in op.outputs],
                   attrs=dict(op.attrs)) for op in graph.ops]
    return Graph(graph.name, ops, [conv(t) for t in graph.inputs], [conv(t) for t in graph.outputs],
                 [conv(t) for t in graph.weights])

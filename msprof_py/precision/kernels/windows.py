"""Sliding windows for Conv2D and pooling: stride / padding from attrs or inferred from shapes,
and the (N, C, OH, OW, kh, kw) window view of an NCHW tensor."""
from __future__ import annotations

import numpy as np

from msprof_py.precision.kernels.common import bad
from msprof_py.runtime.graph import Op


def pair(v, default: int) -> tuple[int, int]:
    """(height, width) of a window size or stride attr: one int, [h, w], or NCHW-style [1, 1, h, w]."""
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


def window_params(op: Op, h: int, w: int, kh: int, kw: int, oh: int, ow: int,
                  strides_attr, pads_attr) -> tuple[int, int, int, int, int, int]:
    """(sh, sw, pt, pb, pl, pr) from attrs, else the smallest stride/padding giving the output."""
    if strides_attr is not None:
        sh, sw = pair(strides_attr, 1)
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
    raise bad(op, f"cannot infer stride/padding for {h}x{w} -> {oh}x{ow} with a {kh}x{kw} window")


def windows(x: np.ndarray, kh: int, kw: int, sh: int, sw: int, pads, fill: float) -> np.ndarray:
    """(N, C, OH, OW, kh, kw) view of padded x."""
    pt, pb, pl, pr = pads
    if any(pads):
        x = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=fill)
    v = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    return v[:, :, ::sh, ::sw]

"""Parts.col gathers a field over every part's chunks in one copy (issue 12 phase 13): the same
values, dtype and shape as the formulation it replaced (a copy per part, their concatenation, then
a cast), with views, subarray fields, empty chunks, empty parts and no parts."""
from __future__ import annotations

import numpy as np
import pytest

from msprof_py.parse.reader import Decoded, Stream
from msprof_py.parse.records.parts import Parts

DT = np.dtype([("a", "<u2"), ("b", "<i8"), ("c", "<u4", (3,)), ("d", "<f8")])
VIEW = np.dtype([("x", "<u2"), ("z", "<i8"), ("w", "<u2", (6,)), ("v", "<i8")])  # the same size


def _reference(parts: Parts, name: str, dtype=None, view=None) -> np.ndarray:
    arrays = [p.field(name, view) for p in parts.parts]
    if not arrays:
        layout = view if view is not None else parts.dtype
        base = layout[name] if layout is not None and name in layout.names else np.dtype(np.int64)
        return np.zeros((0, *base.shape), dtype=dtype or base.base)
    out = np.concatenate(arrays) if len(arrays) > 1 else arrays[0]
    return out.astype(dtype, copy=False) if dtype is not None else out


def _parts(rng: np.random.Generator, sizes: list[list[int]]) -> Parts:
    decs = []
    for chunks in sizes:
        arrs = []
        for n in chunks:
            a = np.zeros(n, DT)
            a["a"] = rng.integers(0, 65536, n)
            a["b"] = rng.integers(-2**62, 2**62, n)
            a["c"] = rng.integers(0, 2**32, (n, 3))
            a["d"] = rng.normal(0, 1e12, n)
            a.setflags(write=False)  # (the chunks are read-only maps of the files)
            arrs.append(a)
        decs.append(Decoded(arrs, Stream("x.data", True), 0, DT))
    return Parts(decs, DT, "x")


SHAPES = [[], [[]], [[0]], [[5]], [[0], [7]], [[3, 0, 4]], [[1], [], [2, 6]], [[65536, 1], [65535]], [[9, 9], [9]]]


@pytest.mark.parametrize("sizes", SHAPES)
@pytest.mark.parametrize("name,dtype,view", [("a", None, None), ("a", np.int64, None), ("b", None, None),
                                             ("b", np.int32, None), ("c", None, None), ("c", np.int64, None),
                                             ("d", None, None), ("d", np.int64, None), ("x", None, VIEW),
                                             ("z", np.float64, VIEW), ("w", None, VIEW)])
def test_col_equals_the_copy_per_part(sizes: list[list[int]], name: str, dtype, view) -> None:
    parts = _parts(np.random.default_rng(len(sizes)), sizes)
    got, want = parts.col(name, dtype, view), _reference(parts, name, dtype, view)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()
    assert got.flags.c_contiguous and got.flags.writeable  # a column of its own (decoders write into some)
    if len(got):
        assert not any(np.shares_memory(got, c) for p in parts.parts for c in p.chunks)

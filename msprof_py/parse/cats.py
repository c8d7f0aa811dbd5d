"""Small helpers for string columns kept as pandas Categoricals end to end: rows are moved
and combined through their integer codes, so no per-row Python string work happens."""
from __future__ import annotations

import numpy as np
import pandas as pd


def from_codes(codes: np.ndarray, categories) -> pd.Categorical:
    """A Categorical from codes over possibly repeated category labels (merged)."""
    labels = [str(c) for c in categories]
    codes = np.asarray(codes)
    if len(set(labels)) == len(labels):  # already distinct: use the codes as they are
        return pd.Categorical.from_codes(codes.astype(np.int32, copy=False), categories=pd.Index(labels, dtype=object))
    labels = np.asarray(labels, dtype=object)
    if len(labels) == 0:
        return pd.Categorical.from_codes(np.full(len(codes), -1, np.int32), categories=pd.Index([], dtype=object))
    uniq, inv = np.unique(labels.astype(str), return_inverse=True)
    codes = np.asarray(codes)
    out = np.where(codes >= 0, inv[np.maximum(codes, 0)], -1).astype(np.int32)
    return pd.Categorical.from_codes(out, categories=pd.Index(uniq, dtype=object))


def const(value: str, n: int) -> pd.Categorical:
    return pd.Categorical.from_codes(np.zeros(n, np.int32), categories=pd.Index([value], dtype=object))


def take(cat: pd.Categorical, idx: np.ndarray, default: str) -> pd.Categorical:
    """``cat[idx]`` where ``idx >= 0``, else ``default`` (also for missing values)."""
    cats = list(cat.categories)
    if default not in cats:
        cats.append(default)
    d = cats.index(default)
    idx = np.asarray(idx)
    src = np.asarray(cat.codes)
    # one gather from the source codes (a missing one as ``default``) plus a last slot, ``default``,
    # that index -1 picks
    table = np.empty(len(src) + 1, code_dtype(len(cats)))
    table[:-1] = src
    if len(src) and int(src.min()) < 0:
        table[:-1][src < 0] = d
    table[-1] = d
    return of_codes(table[idx], cats)


def where(mask: np.ndarray, a: pd.Categorical, b: pd.Categorical) -> pd.Categorical:
    """Row-wise ``a if mask else b`` for two categoricals of equal length."""
    a_cats = list(a.categories)
    pos = {c: i for i, c in enumerate(a_cats)}
    extra = [c for c in b.categories if c not in pos]
    cats = a_cats + extra
    pos.update({c: len(a_cats) + i for i, c in enumerate(extra)})
    # b's codes into the joined categories; a missing code (-1) picks the last slot: -1
    remap = np.array([pos[c] for c in b.categories] + [-1], dtype=code_dtype(len(cats)))
    return of_codes(np.where(mask, np.asarray(a.codes), remap[np.asarray(b.codes)]), cats)


def code_dtype(n: int) -> type:
    """The smallest signed integer type holding codes 0 .. n - 1 and -1 (what pandas keeps)."""
    return np.int8 if n <= 127 else np.int16 if n <= 32767 else np.int32 if n < 2**31 else np.int64


def of_codes(codes: np.ndarray, cats: list) -> pd.Categorical:
    """A Categorical of valid ``codes`` (-1 .. len(cats) - 1) over distinct ``cats``, without
    pandas' check of every code."""
    return pd.Categorical.from_codes(codes, categories=pd.Index(cats, dtype=object), validate=False)


def isin(cat: pd.Categorical, values) -> np.ndarray:
    """Row mask: category label in ``values``."""
    hit = np.array([c in set(values) for c in cat.categories], dtype=bool)
    codes = np.asarray(cat.codes)
    return (codes >= 0) & (hit[np.maximum(codes, 0)] if len(hit) else False)


def label_mask(cat: pd.Categorical, pred) -> np.ndarray:
    """Row mask: ``pred(label)`` evaluated once per category."""
    hit = np.array([bool(pred(c)) for c in cat.categories], dtype=bool)
    codes = np.asarray(cat.codes)
    return (codes >= 0) & (hit[np.maximum(codes, 0)] if len(hit) else False)


def concat(parts: list[pd.Categorical]) -> pd.Categorical:
    """Concatenate categoricals (union of their categories, codes remapped)."""
    pos: dict[str, int] = {}
    codes = []
    for p in parts:
        remap = np.array([pos.setdefault(str(c), len(pos)) for c in p.categories], dtype=np.int32)
        pc = np.asarray(p.codes)
        codes.append(np.where(pc >= 0, remap[np.maximum(pc, 0)] if len(remap) else -1, -1).astype(np.int32))
    allc = np.concatenate(codes) if codes else np.zeros(0, np.int32)
    return pd.Categorical.from_codes(allc, categories=pd.Index(list(pos), dtype=object))


def frame(columns: dict) -> pd.DataFrame:
    """A DataFrame over the given column arrays without copying or consolidating them."""
    return pd.DataFrame(columns, copy=False)


def normalize(df: pd.DataFrame) -> pd.DataFrame:
    """Every categorical column: unused categories dropped, the rest sorted (a canonical form,
    so the same data always gives the same codes whatever path built the column).  A column in
    that form already (every category used, sorted, plain strings) is left as it is."""
    for c in df.columns:
        if isinstance(df[c].dtype, pd.CategoricalDtype):
            cat = df[c].array
            codes = np.asarray(cat.codes)
            labels = np.asarray(cat.categories, dtype=object)
            used = np.flatnonzero(np.bincount(codes.astype(np.intp) + 1, minlength=len(labels) + 1)[1:]) \
                if len(labels) else np.zeros(0, np.intp)
            names = labels[used].astype(str)
            order = np.argsort(names, kind="stable")
            if (len(used) == len(labels) and cat.categories.dtype == object
                    and np.array_equal(order, np.arange(len(order))) and all(type(x) is str for x in labels)):
                continue
            remap = np.full(len(labels) + 1, -1, code_dtype(len(used)))  # the last slot: a missing code
            remap[used[order]] = np.arange(len(used))
            df[c] = of_codes(remap[codes], list(names[order]))
    return df


def concat_rows(parts: list[pd.DataFrame], sort_by: list[str] | None = None) -> pd.DataFrame:
    """Row-concatenation of frames with the same columns, built column by column (categorical
    columns stay categorical: union of categories), optionally stably sorted by ``sort_by``
    (numeric columns).

    One copy per column and no consolidated intermediate frame: ``pd.concat`` then
    ``sort_values`` copied every row twice and held both copies at once (the task table of a
    PROF dir: ~125 MB per million tasks each)."""
    parts = [p for p in parts if len(p)] or parts[:1]
    if len(parts) == 1 and (not sort_by or in_order([parts[0][c].to_numpy() for c in sort_by])):
        return parts[0]  # one frame, in order already (a device's joined tasks usually are): no copy

    def joined(c: str):
        arrays = [p[c].array for p in parts]
        if all(isinstance(a, pd.Categorical) for a in arrays):
            return concat(arrays) if len(arrays) > 1 else arrays[0]
        if all(isinstance(a.dtype, np.dtype) and a.dtype == arrays[0].dtype for a in arrays):
            return np.concatenate([np.asarray(a) for a in arrays])
        return pd.concat([p[c] for p in parts], ignore_index=True).array

    keys = {c: joined(c) for c in sort_by or ()}
    order = None
    if sort_by and not in_order([np.asarray(keys[c]) for c in sort_by]):
        order = np.lexsort([np.asarray(keys[c]) for c in reversed(sort_by)])
    out = {}
    for c in parts[0].columns:
        col = keys.pop(c) if c in keys else joined(c)
        out[c] = col if order is None else (col.take(order) if not isinstance(col, np.ndarray) else col[order])
    return frame(out)


def in_order(keys: list[np.ndarray]) -> bool:
    """Whether rows are in the order ``np.lexsort(keys[::-1])`` (stable) gives them already:
    sorted by the first key, ties by the next... (a pass per key; a device's joined tasks
    usually are, by start)."""
    n = len(keys[0]) if keys else 0
    if n < 2:
        return True
    tie = np.ones(n - 1, bool)
    for k in keys:
        a, b = k[:-1], k[1:]
        if (tie & (b < a)).any():
            return False
        tie &= b == a
        if not tie.any():
            break
    return True

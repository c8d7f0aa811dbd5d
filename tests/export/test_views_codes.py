"""views' categorical helpers compared as codes (as_cat, cat_where, op_info, info_names,
info_types, shown_task_types, quoted) against the per-row string formulations they replaced:
same texts per row and, for as_cat / cat_where, the same categories in the same order."""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from msprof_py.export import views
from msprof_py.export.summary_format import quoted


def old_as_cat(col):
    if isinstance(col, pd.Categorical) or isinstance(getattr(col, "dtype", None), pd.CategoricalDtype):
        c = pd.Categorical(col)
        codes = np.asarray(c.codes, dtype=np.int64)
        cats = [str(x) for x in c.categories.tolist()]
    else:
        codes, uniq = pd.factorize(pd.Series(col, dtype=object), sort=False)
        codes = np.asarray(codes, dtype=np.int64)
        cats = [str(x) for x in uniq.tolist()]
    if (codes < 0).any() or "N/A" not in cats:
        cats = cats + ["N/A"]
        codes = np.where(codes < 0, len(cats) - 1, codes)
    if len(set(cats)) == len(cats):
        return pd.Categorical.from_codes(codes, categories=pd.Index(cats, dtype=object))
    uniq, inverse = np.unique(np.array(cats, dtype=object), return_inverse=True)
    return pd.Categorical.from_codes(inverse[codes], categories=pd.Index(list(uniq), dtype=object))


def old_cat_where(cond, a, b):
    cats = pd.Index(list(dict.fromkeys([*a.categories, *b.categories])), dtype=object)
    ca = cats.get_indexer(a.categories)[a.codes]
    cb = cats.get_indexer(b.categories)[b.codes]
    return pd.Categorical.from_codes(np.where(cond, ca, cb), categories=cats)


def old_op_info(t):
    name = np.asarray(old_as_cat(t["op_name"]), dtype=object)
    host_c = old_as_cat(t["host_task_type"])
    host = np.asarray(host_c, dtype=object)
    named_op = (name != host) & (name != np.asarray(old_as_cat(t["device_task_type"]), dtype=object)) & (name != "N/A")
    kernel = np.asarray([str(c).startswith("KERNEL") or str(c) in ("STARS_COMMON", "FFTS_PLUS")
                         for c in host_c.categories], dtype=bool)[host_c.codes] if len(t) else np.zeros(0, bool)
    white = views.cat_isin(host_c, views.KERNEL_COMPUTE_WHITE_LIST)
    has_kernel_name = ~views.cat_isin(old_as_cat(t["kernel_name"]), ["N/A"])
    return ~views.cat_isin(old_as_cat(t["op_type"]), ["N/A"]) | (named_op & kernel) | (has_kernel_name & white)


def old_info_names(t):
    name, host, dev = old_as_cat(t["op_name"]), old_as_cat(t["host_task_type"]), old_as_cat(t["device_task_type"])
    n = np.asarray(name, dtype=object)
    kernel_only = (n == np.asarray(host, dtype=object)) | (n == np.asarray(dev, dtype=object)) | (n == "N/A")
    kernel_only &= views.cat_isin(old_as_cat(t["op_type"]), ["N/A"])
    return old_cat_where(kernel_only, old_as_cat(t["kernel_name"]), name)


def old_info_types(t, level0):
    n = len(t)
    if level0:
        na = pd.Categorical.from_codes(np.zeros(n, np.int64), categories=pd.Index(["N/A"], dtype=object))
        return na, na
    op_type = old_as_cat(t["op_type"])
    no_op = views.cat_isin(op_type, ["N/A"])
    host = old_as_cat(t["host_task_type"])
    ge = pd.Categorical(np.asarray([views.RTS_TO_GE.get(str(c), str(c)) for c in host.categories],
                                   dtype=object)[host.codes])
    return (old_cat_where(no_op, old_as_cat(t["kernel_name"]), op_type),
            old_cat_where(no_op, old_as_cat(ge), old_as_cat(t["task_type"])))


def old_shown_task_types(t, level0):
    _, info_tt = old_info_types(t, level0)
    use_info = old_op_info(t) & ~views.cat_isin(info_tt, ["N/A"])
    host = old_as_cat(t["host_task_type"])
    asc = old_cat_where(views.cat_isin(host, views.NO_HOST_TYPE), old_as_cat(t["device_task_type"]), host)
    return old_cat_where(use_info, info_tt, asc)


def old_quoted(col):
    c = old_as_cat(col)
    cats = [x if x == "N/A" or (len(x) >= 2 and x[0] == x[-1] == '"') else f'"{x}"' for x in map(str, c.categories)]
    return old_as_cat(np.asarray(cats, dtype=object)[np.asarray(c.codes)])


def same(a: pd.Categorical, b: pd.Categorical, order: bool = True) -> None:
    assert np.asarray(a, dtype=object).tolist() == np.asarray(b, dtype=object).tolist()
    if order:
        assert list(a.categories) == list(b.categories)
        assert a.codes.tolist() == b.codes.tolist()


# texts that collide as strings (1 and "1"), "N/A" present or not, missing values, task types
WORDS = ["N/A", "KERNEL_AICORE", "KERNEL_AICPU", "FFTS_PLUS", "UNKNOWN", "AI_CORE", "conv", "1", 1, None,
         '"[1]"', "[1]", "MEMCPY_ASYNC", "STARS_COMMON"]
cells = st.sampled_from(WORDS)
COLS = ["op_name", "op_type", "task_type", "host_task_type", "device_task_type", "kernel_name"]


def column(values: list, kind: int):
    if kind == 0:
        return pd.Series(pd.Categorical(values))
    if kind == 1:  # unused categories, in another order
        return pd.Series(pd.Categorical(values, categories=list(dict.fromkeys(
            [w for w in reversed(WORDS) if w is not None] + [v for v in values if v is not None]))))
    return pd.Series(values, dtype=object)


@given(st.lists(cells, max_size=30), st.integers(0, 2))
@settings(max_examples=300, deadline=None)
def test_as_cat_and_quoted_as_before(values: list, kind: int) -> None:
    col = column(values, kind)
    same(views.as_cat(col), old_as_cat(col))
    same(views.as_cat(col.array if kind < 2 else col), old_as_cat(col.array if kind < 2 else col))
    same(quoted(col), old_quoted(col), order=False)


@given(st.lists(st.tuples(cells, cells, st.booleans()), max_size=30), st.integers(0, 2), st.integers(0, 2))
@settings(max_examples=300, deadline=None)
def test_cat_where_as_before(rows: list, ka: int, kb: int) -> None:
    a = views.as_cat(column([r[0] for r in rows], ka))
    b = views.as_cat(column([r[1] for r in rows], kb))
    cond = np.array([r[2] for r in rows], dtype=bool)
    same(views.cat_where(cond, a, b), old_cat_where(cond, a, b))
    raw = pd.Categorical([r[0] for r in rows])  # codes -1 (missing): the mapping's last entry, as before
    if len(raw.categories) and len(set(map(str, raw.categories))) == len(raw.categories):
        same(views.cat_where(cond, raw, b), old_cat_where(cond, raw, b))


@given(st.lists(st.tuples(*[cells] * len(COLS)), max_size=30), st.integers(0, 2), st.booleans())
@settings(max_examples=300, deadline=None)
def test_task_info_rules_as_before(rows: list, kind: int, level0: bool) -> None:
    t = pd.DataFrame({c: column([r[i] for r in rows], kind) for i, c in enumerate(COLS)})
    assert views.op_info(t).tolist() == old_op_info(t).tolist()
    same(views.info_names(t), old_info_names(t))
    for got, want in zip(views.info_types(t, level0), old_info_types(t, level0)):
        same(got, want)
    same(views.shown_task_types(t, level0), old_shown_task_types(t, level0))

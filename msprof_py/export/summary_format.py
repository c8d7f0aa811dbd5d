"""Formatting helpers shared by the summary tables (:mod:`summaries`, :mod:`legacy_summaries`,
:mod:`counter_export`): integer columns, texts with "N/A" for missing values, msprof's
``DoubleToStr``, quoted shape cells, output file stems and the count/sum/min/max of groups."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.export.base import Naming
from msprof_py.export.views import as_cat

def i64(col: Any) -> np.ndarray:
    """An integer column as int64 (missing -> -1) without a detour through float."""
    s = pd.Series(col)
    if s.dtype.kind in "iu":
        return s.to_numpy(dtype=np.int64)
    return pd.to_numeric(pd.Series(col), errors="coerce").fillna(-1).to_numpy(dtype=np.int64)


def text(col: Any) -> pd.Series:
    s = pd.Series(col)
    if isinstance(s.dtype, pd.CategoricalDtype):
        return s
    return s.astype(object).where(s.notna(), "N/A").astype(str)


def dbl(values: Any) -> list[str]:
    """msprof's DoubleToStr: 3 decimals, trailing zeros (and a bare point) stripped.  Used for
    grouped tables only (one value per group, not per task)."""
    out = []
    for v in np.asarray(values, dtype=np.float64).tolist():
        s = f"{round(v, 3):.3f}".rstrip("0").rstrip(".")
        out.append("0" if s in ("-0", "") else s)
    return out


def quoted(col: Any) -> pd.Categorical:
    """Shape cells as msprof writes them: the value inside literal double quotes (its
    ``AddQuotation``; the CSV then shows ``\"\"\"1024\"\"\"``), ``N/A`` as is."""
    c = as_cat(col)
    cats = [x if x == "N/A" or (len(x) >= 2 and x[0] == x[-1] == '"') else f'"{x}"' for x in map(str, c.categories)]
    # per category, not per row: two texts quoted alike (``x`` and ``"x"``) become one category
    uniq, inverse = np.unique(np.array(cats, dtype=object), return_inverse=True)
    return pd.Categorical.from_codes(inverse.astype(np.int32)[np.asarray(c.codes)],
                                     categories=pd.Index(list(uniq), dtype=object), validate=False)


def stem(out_dir: Path, naming: Naming, name: str, device: bool = True) -> Path:
    return out_dir / naming.file(name, "x", device=device)[:-2]


def _stats(df: pd.DataFrame, keys: list[str], dur: str = "dur_ns") -> pd.DataFrame:
    g = df.groupby(keys, observed=True, sort=False)[dur]
    st = g.agg(count="count", total="sum", min="min", max="max").reset_index()
    return st

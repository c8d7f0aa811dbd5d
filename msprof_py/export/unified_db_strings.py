"""``STRING_IDS``: the unified DB's interned strings (other tables hold their ids)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from msprof_py.export.unified_db_insert import Lookup


class StringIds:
    """Interns strings; ids in first-seen order (deterministic for the same session)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def one(self, s: str) -> int:
        return self.ids.setdefault(s, len(self.ids))

    def copy(self) -> StringIds:
        """The same ids, interned apart (what a table would intern, found without interning it)."""
        other = StringIds()
        other.ids = dict(self.ids)
        return other

    def column(self, values: Any) -> np.ndarray:
        """int64 ids of ``values`` (missing -> "N/A").  New strings are interned in the order the
        first version of this method used (a categorical's categories in their order, else the
        sorted distinct strings; then "N/A"), so the STRING_IDS table keeps its bytes."""
        return self.intern(*factor(values))

    def intern(self, codes: np.ndarray, cats: list[str]) -> np.ndarray:
        """int64 ids of ``cats[codes]`` (code -1 -> "N/A"), ``cats`` then "N/A" interned in order
        (:func:`factor` gives both without interning: what :meth:`column` interns, later)."""
        return self.lookup(codes, cats)[:]

    def lookup(self, codes: np.ndarray, cats: list[str]) -> Lookup:
        """:meth:`intern` (the strings interned now), the ids made a slice at a time."""
        return Lookup(np.array([self.one(c) for c in cats] + [self.one("N/A")], dtype=np.int64), codes)


def factor(values: Any) -> tuple[np.ndarray, list[str]]:
    """(codes, texts) of a string column as :meth:`StringIds.column` interns it: a
    categorical's categories in their order, else the sorted distinct strings; code -1 =
    missing ("N/A").  Codes in the smallest integer type that holds them (a DB written one
    device at a time keeps them until the table's turn)."""
    if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        cat = pd.Categorical(values)
        codes, cats = np.asarray(cat.codes), [str(c) for c in cat.categories.tolist()]
    else:
        factored = _factor_str(values)
        if factored is None:  # values that are not all strings: the general (slow) path
            return factor(pd.Categorical(pd.Series(values).astype(object)
                                         .where(pd.Series(values).notna(), "N/A").astype(str).to_numpy()))
        codes, cats = _sorted_codes(*factored)
    return codes.astype(np.min_scalar_type(-max(len(cats), 1)), copy=False), cats


def _factor_str(values: Any) -> tuple[np.ndarray, list[str]] | None:
    """(codes, distinct values) (missing -> code -1; a categorical's unused categories included),
    or None unless every value is a str."""
    if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        cat = pd.Categorical(values)
        codes, uniq = cat.codes, cat.categories.tolist()
    else:
        codes, uniq = pd.factorize(pd.Series(values, dtype=object) if not isinstance(values, pd.Series) else values)
        uniq = uniq.tolist()
    if not all(type(u) is str for u in uniq):
        return None
    return np.asarray(codes, dtype=np.int64), uniq


def _sorted_codes(codes: np.ndarray, strs: list[str]) -> tuple[np.ndarray, list[str]]:
    """Re-code ``strs[codes]`` (code -1 = missing = "N/A") onto the sorted distinct strings, as
    ``pd.Categorical`` of the string column would (the sort touches the distinct values only)."""
    present = np.zeros(len(strs) + 1, dtype=bool)
    present[np.where(codes < 0, len(strs), codes)] = True
    used = {s for s, p in zip(strs, present[:-1].tolist()) if p} | ({"N/A"} if present[-1] else set())
    cats = sorted(used)
    index = {c: i for i, c in enumerate(cats)}
    lut = np.array([index.get(s, -1) for s in strs] + [index.get("N/A", -1)], dtype=np.int64)
    return lut[np.where(codes < 0, len(strs), codes)], cats

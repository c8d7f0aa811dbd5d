"""The unified DB's fast string interning against the plain per-value formula (differential,
hypothesis): same ids, interned in the same order, so STRING_IDS keeps its bytes."""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from msprof_py.export.unified_db_strings import StringIds
from msprof_py.export.unified_db_tasks import quoted_shapes

VALUES = st.lists(st.one_of(st.none(), st.sampled_from(['"1,2"', "1,2", "N/A", "", "a", "b", 'x"y', "ND"])),
                  max_size=30)


def reference_ids(sid: StringIds, values: list) -> np.ndarray:
    """The first implementation: every value as a string, a Categorical of them, intern categories then N/A."""
    strs = pd.Series(values, dtype=object).where(pd.Series(values, dtype=object).notna(), "N/A").astype(str)
    cat = pd.Categorical(strs.to_numpy())
    table = np.array([sid.one(str(c)) for c in cat.categories] + [sid.one("N/A")], dtype=np.int64)
    return table[np.asarray(cat.codes, dtype=np.int64)]


def reference_quoted(values: list) -> list[str]:
    """msprof's COMPUTE_TASK_INFO shape text per value: '"' + shape + '"', N/A (and missing) as N/A."""
    out = []
    for v in values:
        s = "N/A" if v is None else str(v)
        out.append(s if s == "N/A" else '"' + s.replace('"', "") + '"')
    return out


@settings(max_examples=200, deadline=None)
@given(VALUES, VALUES, st.booleans())
def test_string_ids_match_reference(first: list, second: list, categorical: bool) -> None:
    fast, slow = StringIds(), StringIds()
    for values in (first, second):
        col = pd.Series(values, dtype="category") if categorical else pd.Series(values, dtype=object)
        if categorical:  # a categorical's categories (unused ones too) are interned in their order
            want = np.array([slow.one(str(c)) for c in col.cat.categories] + [slow.one("N/A")], dtype=np.int64)
            want = want[np.where(col.cat.codes.to_numpy() < 0, len(col.cat.categories), col.cat.codes.to_numpy())]
        else:
            want = reference_ids(slow, values)
        assert fast.column(col).tolist() == want.tolist()
        assert fast.ids == slow.ids  # same strings, same ids, same order
        assert [str(v) for v in quoted_shapes(col)] == reference_quoted(values)

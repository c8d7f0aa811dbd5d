"""views.is_in on a categorical column (per category, codes as they are) against the per-row
texts it stands for (missing = "N/A")."""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from msprof_py.export.views import is_in

texts = st.sampled_from(["dynamic", "static", "N/A", "node", "1", None])


@given(st.lists(texts, min_size=0, max_size=40), st.lists(texts.filter(lambda x: x is not None), max_size=3),
       st.booleans())
@settings(max_examples=200, deadline=None)
def test_is_in_a_categorical_is_the_per_row_text_test(values: list, wanted: list, ints: bool) -> None:
    raw = [(1 if v == "1" else v) if ints else v for v in values]  # "1" and 1 have one text
    col = pd.Series(pd.Categorical(raw))
    want = np.array([("N/A" if v is None else str(v)) in wanted for v in raw], dtype=bool)
    for c in (col, col.array):
        got = is_in(c, wanted)
        assert got.dtype == bool and got.tolist() == want.tolist()
    assert is_in(pd.Series(raw, dtype=object), wanted).tolist() == want.tolist()  # the other path

"""pyproject's ``filterwarnings``: a warning raised from msprof_py's own code fails the test (so a
pandas FutureWarning or numpy "invalid value encountered in cast" is seen)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest


def _run_as(module: str, code: str) -> None:
    exec(compile(code, f"<{module}>", "exec"), {"__name__": module, "np": np, "warnings": warnings})


def test_numpy_warning_in_project_code_is_an_error() -> None:
    with pytest.raises(RuntimeWarning, match="invalid value"):
        _run_as("msprof_py.parse.fake", "np.array([np.nan]).astype(np.int64)")

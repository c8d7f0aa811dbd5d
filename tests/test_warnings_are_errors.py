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


def test_project_sources_compile_without_warnings() -> None:
    """Compile-time warnings (an invalid escape like ``"\\d"`` in a docstring: DeprecationWarning,
    SyntaxWarning from 3.12) are attributed to no module, so ``filterwarnings`` cannot catch them
    at import; compile every module of the package with warnings as errors instead."""
    from pathlib import Path

    pkg = Path(__file__).resolve().parents[1] / "msprof_py"
    bad = []
    for path in sorted(pkg.rglob("*.py")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                compile(path.read_text(encoding="utf-8"), str(path), "exec")
            except (SyntaxError, Warning) as err:
                bad.append(f"{path.relative_to(pkg)}: {err}")
    assert bad == []

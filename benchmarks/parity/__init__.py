"""Parity of msprof_py's exports with the files the real msprof exported from the same raw data.

Used by ``benchmarks/realdata_parity.py`` (all PROF dirs under a folder, one line each) and by
``tests/realdata/test_parity.py`` (the trimmed real fixtures in ``fixtures/real/``).

    from benchmarks.parity import compare_prof
    result = compare_prof(Path("PROF_000001_..."))   # exports a temporary copy, never writes the dir
    result.checks["op_summary"].ok

Every comparison is a :class:`~benchmarks.parity.cells.Check`; the PMU counter columns of
op_summary are a check of their own (``op_summary.pmu``) so the rest can be judged apart.
"""
from __future__ import annotations

from benchmarks.parity.cells import Check
from benchmarks.parity.run import ProfResult, compare_prof, has_msprof_exports

__all__ = ["Check", "ProfResult", "compare_prof", "has_msprof_exports"]

"""Parity with msprof on trimmed real captures (fixtures/real/, origin in its README).

One test per (capture, comparison): msprof_py exports a temporary copy of the capture and every
file msprof exported from the same raw data is compared (benchmarks/parity/).  Comparisons known
to disagree today are ``xfail(strict=True)`` with the reason, so a fix that makes one agree turns
the test into an XPASS failure until its entry is removed from ``KNOWN`` below.
"""
from __future__ import annotations

import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest

import msprof_py

from benchmarks.parity import ProfResult, compare_prof
from benchmarks.parity.run import expected_checks

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "real"
PROFS = {d.name: next(d.glob("PROF_*")) for d in sorted(FIXTURES.iterdir()) if d.is_dir()}

ALL_910B = ("910b_ascendc_add_b1", "910b_pypto_mul_b1", "910b_torch_mul_b1")
ALL = ALL_910B + ("310b_fastgelu", "310b_addcmul_nodict", "310b_spence_noge")


def _known() -> dict[tuple[str, str], str]:
    k: dict[tuple[str, str], str] = {}

    def add(names: tuple[str, ...], check: str, reason: str) -> None:
        for n in names:
            k[(n, check)] = reason

    return k


KNOWN = _known()
CASES = [(name, check) for name, prof in PROFS.items() for check in expected_checks(prof)]


@lru_cache(maxsize=None)
def result(name: str) -> ProfResult:
    return compare_prof(PROFS[name], name)


def test_fixtures_present() -> None:
    assert set(PROFS) == set(ALL)
    # every capture keeps msprof's expected outputs (310b_addcmul_nodict: api_statistic and the timeline only)
    assert all(len(expected_checks(p)) >= 4 for p in PROFS.values())


@pytest.mark.parametrize("name,check", [
    pytest.param(n, c, marks=pytest.mark.xfail(strict=True, reason=KNOWN[(n, c)])) if (n, c) in KNOWN else (n, c)
    for n, c in CASES])
def test_parity(name: str, check: str) -> None:
    r = result(name)
    assert r.error is None, r.error
    c = r.checks[check]
    assert not c.skipped
    assert c.ok, c.summary(max_items=10) + "\n" + "\n".join(c.examples)


def test_known_entries_are_cases() -> None:
    """No stale entry: every known failure names a comparison that exists."""
    assert set(KNOWN) <= set(CASES)


def test_310b_task_time_starts_are_truncated() -> None:
    """The 310B fixtures hold tasks whose task_time start msprof truncated one ns below the shown
    start (parse.py_clock.cut_start_ns), so the strict task_time check above exercises that rule."""
    for name in ("310b_fastgelu", "310b_spence_noge"):
        with tempfile.TemporaryDirectory() as tmp:
            prof = Path(tmp) / PROFS[name].name
            shutil.copytree(PROFS[name], prof, ignore=lambda _d, names: [n for n in names
                                                                         if n == "mindstudio_profiler_output"])
            t = msprof_py.load(prof).tasks
            t = t[t["start_ns"] >= 0]
            assert set((t["start_ns"] - t["cut_start_ns"]).tolist()) == {0, 1}, name

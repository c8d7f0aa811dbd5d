"""Shared fixtures for the parser tests: a private copy of fixtures/prof_small per test."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "prof_small"
EXPECTED = ROOT / "fixtures" / "prof_small_expected"
PROF_NAME = "PROF_000001_20260101000000000_FIXTURESMALL0001"


@pytest.fixture
def small_prof(tmp_path: Path) -> Path:
    """A writable copy of the checked-in fixture PROF dir (the parser may write its cache)."""
    dst = tmp_path / "prof_small"
    shutil.copytree(FIXTURE, dst)
    return dst / PROF_NAME

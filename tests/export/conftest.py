"""Fixtures for the exporter tests."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "prof_small"
PROF_NAME = "PROF_000001_20260101000000000_FIXTURESMALL0001"
GOLDEN = Path(__file__).resolve().parent / "golden"


@pytest.fixture
def small_prof(tmp_path: Path) -> Path:
    """A writable copy of the parser's fixture PROF dir."""
    dst = tmp_path / "prof_small"
    shutil.copytree(FIXTURE, dst)
    return dst / PROF_NAME

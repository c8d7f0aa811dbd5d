"""Suite-wide pytest options.

``--regen-golden`` rewrites the exporters' golden files (tests/export/golden/) from the current
output instead of comparing against them.  Only use it after checking the diff is intended.
"""
from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--regen-golden", action="store_true", default=False,
                     help="rewrite golden files from the current output instead of comparing")


@pytest.fixture
def regen_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--regen-golden"))

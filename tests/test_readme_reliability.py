"""README's reliability promises each point to a test that exists (a renamed or deleted test
must not leave a promise pointing at nothing)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).parents[1]


def _refs() -> list[tuple[str, str | None]]:
    """(test file, test function or None) of every `tests/...` and `::name` in the section;
    a bare `::name` belongs to the file named last in its row."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Reliability: bad input is normal input", 1)[1].split("\n## ", 1)[0]
    out = []
    for row in section.splitlines():
        current = None
        for ref in re.findall(r"`((?:tests/[^`:\s]+)?(?:::\w+)?)`", row):
            if ref.startswith("tests/"):
                current = ref.split("::")[0]
            if current and ref:
                out.append((current, ref.split("::")[1] if "::" in ref else None))
    return out


def test_every_reliability_promise_points_to_an_existing_test() -> None:
    refs = _refs()
    assert len(refs) >= 20
    for file, func in refs:
        path = ROOT / file
        assert path.is_file(), file
        if func:
            names = {n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)}
            assert func in names, f"{file}::{func}"

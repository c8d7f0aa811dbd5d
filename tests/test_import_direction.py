"""Stages import one way: runtime <- collect; raw is shared by collect and parse; export reads
only the parsed session; nothing imports the CLI.  Scans every module's imports (also the lazy
ones inside functions)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "msprof_py"

# package -> packages it must never import
FORBIDDEN = {
    "raw": {"runtime", "collect", "parse", "export", "cli", "aoe", "precision", "analyse"},
    "runtime": {"collect", "parse", "export", "cli", "aoe", "precision", "analyse"},
    "collect": {"parse", "export", "cli", "precision"},
    "parse": {"runtime", "collect", "export", "cli", "aoe", "precision", "analyse"},
    "export": {"raw", "runtime", "collect", "cli", "aoe", "precision", "analyse"},
    "aoe": {"cli"},
    "precision": {"cli", "collect"},
    # analysis reads parsed sessions only
    "analyse": {"raw", "runtime", "collect", "export", "cli", "aoe", "precision"},
    "cluster": {"raw", "runtime", "collect", "cli", "aoe", "precision"},
}
# single modules above the stages (a chain of stages over one session)
FORBIDDEN_MODULES = {"pipeline.py": {"raw", "runtime", "collect", "cli", "aoe", "precision"}}


def imported_packages(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
        for name in names:
            parts = name.split(".")
            if parts[0] == "msprof_py" and len(parts) > 1:
                out.add(parts[1])
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_upstream(package: str) -> None:
    bad = {str(p.relative_to(PKG)): sorted(imported_packages(p) & FORBIDDEN[package])
           for p in (PKG / package).rglob("*.py")}
    assert {k: v for k, v in bad.items() if v} == {}


@pytest.mark.parametrize("module", sorted(FORBIDDEN_MODULES))
def test_module_imports_only_upstream(module: str) -> None:
    assert sorted(imported_packages(PKG / module) & FORBIDDEN_MODULES[module]) == []

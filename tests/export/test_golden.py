"""Golden files: every exporter's output on the parser's fixture PROF dir, byte for byte.

Regenerate (after checking the diff is intended) with ``pytest tests/export --regen-golden``.
The unified DB is compared as a text dump of its tables (SQLite page bytes are an
implementation detail of the sqlite3 version).
"""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from msprof_py.export import ExportOptions, export
from msprof_py.export.base import REGISTRY

from .conftest import GOLDEN

CASES = {
    "all": ExportOptions(),
    "model1_iter2": ExportOptions(model_id=1, iteration_id=2),
    "json_summaries": ExportOptions(summary_format="json"),
}


def db_dump(path: Path) -> str:
    con = sqlite3.connect(path)
    try:
        out = []
        for (name,) in con.execute("select name from sqlite_master where type='table' order by name"):
            cols = [r[1] for r in con.execute(f"PRAGMA table_info({name})")]
            out.append(f"## {name}: {', '.join(cols)}")
            out += ["|".join(map(str, r)) for r in con.execute(f"select * from {name}")]
        return "\n".join(out) + "\n"
    finally:
        con.close()


def produced(prof: Path) -> dict[str, bytes]:
    files = {p.name: p.read_bytes() for p in sorted((prof / "mindstudio_profiler_output").iterdir())}
    for db in prof.glob("msprof_*.db"):
        files[db.name + ".dump"] = db_dump(db).encode()
    return files


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str, small_prof: Path, regen_golden: bool) -> None:
    export(small_prof, CASES[case])
    got = produced(small_prof)
    gold_dir = GOLDEN / case
    if regen_golden:
        shutil.rmtree(gold_dir, ignore_errors=True)
        gold_dir.mkdir(parents=True)
        for name, data in got.items():
            (gold_dir / name).write_bytes(data)
        pytest.skip("golden files regenerated")
    want = {p.name: p.read_bytes() for p in sorted(gold_dir.iterdir())}
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name] == want[name], f"{case}/{name} differs from its golden file"


def test_every_exporter_has_a_golden_file() -> None:
    """Each registered exporter appears in the golden set of the full export."""
    names = {p.name for p in (GOLDEN / "all").iterdir()}
    for key, ex in REGISTRY.items():
        if ex.kind == "db":
            assert any(n.startswith("msprof_") and n.endswith(".db.dump") for n in names), key
        elif ex.name in ("thread_group", "ge_op_execute", "communication_statistic", "fusion_op", "hccl"):
            continue  # data-dependent; covered by test_exporters.py on the synthetic session
        elif ex.name in ("aicpu", "dp", "l2_cache", "msprof_tx"):
            continue  # switched off in the fixture; golden files of their own in test_counters.py
        else:
            assert any(n.startswith(ex.name + "_") or n.startswith(ex.name + ".") for n in names), key

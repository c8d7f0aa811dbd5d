"""The unified-DB comparison finds differences in every kind of table msprof writes (so its
agreement on the real fixtures means the tables agree)."""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from benchmarks.parity.dbs import compare_dbs, find_db
from msprof_py.export import ExportOptions, export

FIXTURE = next((Path(__file__).resolve().parents[2] / "fixtures" / "real" / "910b_pypto_mul_b1").glob("PROF_*"))


def _ours(tmp_path: Path) -> Path:
    """An export of a copy of the raw data (msprof's own files left out)."""
    ours = tmp_path / "ours" / FIXTURE.name
    shutil.copytree(FIXTURE, ours, ignore=lambda _d, names: [n for n in names if n == "mindstudio_profiler_output"
                                                              or (n.startswith("msprof_") and n.endswith(".db"))])
    export(ours, ExportOptions())
    return ours


def _msprof(tmp_path: Path, *sql: str) -> Path:
    """A copy of the fixture whose msprof db had ``sql`` applied."""
    prof = tmp_path / "msprof" / FIXTURE.name
    shutil.copytree(FIXTURE, prof)
    con = sqlite3.connect(find_db(prof))
    for s in sql:
        con.execute(s)
    con.commit()
    con.close()
    return prof


def test_db_checks_agree_then_find_each_change(tmp_path: Path) -> None:
    ours = _ours(tmp_path)
    same = {c.name: c for c in compare_dbs(FIXTURE, ours)}
    assert all(c.ok and not c.skipped for c in same.values()), [c.summary() for c in same.values()]
    changed = _msprof(
        tmp_path,
        "UPDATE TASK SET endNs = endNs + 1 WHERE rowid = 5",  # a time
        # a TaskInfo name: a new string for one row
        "INSERT INTO STRING_IDS VALUES (9999, 'renamed_op')",
        "UPDATE COMPUTE_TASK_INFO SET name = 9999 WHERE rowid = 1",
        "DELETE FROM ENUM_HCCL_LINK_TYPE WHERE id = 4",  # a fixed row
        "UPDATE META_DATA SET value = '1.3.0' WHERE name = 'SCHEMA_VERSION'",
        "UPDATE TASK_PMU_INFO SET value = value + 1 WHERE rowid = 3",  # a counter
        "UPDATE CANN_API SET globalTid = globalTid + 1 WHERE rowid = 2",
        "CREATE TABLE EXTRA_TABLE (x INTEGER)", "INSERT INTO EXTRA_TABLE VALUES (1)",
    )
    got = {c.name: c for c in compare_dbs(changed, ours)}
    assert got["db.task"].cells["endNs"] == 1 and got["db.task"].cells["info.name"] == 1
    db = got["db"]
    assert db.cells["ENUM_HCCL_LINK_TYPE"] == 1 and db.cells["META_DATA"] == 2
    assert db.cells["STRING_IDS"] == 1 and "no table EXTRA_TABLE (1 rows)" in db.notes
    assert got["db.pmu"].cells["value"] == 1 and got["db.api"].cells["globalTid"] == 1


def test_task_links_are_compared_through_what_they_link(tmp_path: Path) -> None:
    """connectionId numbers may differ (msprof's are thread-timing dependent); the API call a
    task links to may not."""
    ours = _ours(tmp_path)
    renumbered = _msprof(tmp_path, "UPDATE CANN_API SET connectionId = connectionId + 100000",
                         "UPDATE TASK SET connectionId = connectionId + 100000")
    assert all(c.ok for c in compare_dbs(renumbered, ours))
    relinked = _msprof(tmp_path / "2", "UPDATE TASK SET connectionId = connectionId + 1 WHERE rowid = 7")
    assert {c.name: c for c in compare_dbs(relinked, ours)}["db.task"].cells["api"] == 1

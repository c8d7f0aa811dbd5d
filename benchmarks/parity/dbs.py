"""The unified ``msprof_*.db``: the tables both databases have.

``db``: for every table both have, the columns msprof wrote that we lack and the row counts;
``db.task``: TASK rows keyed by (device, stream, task, context) with start/end ns and the task type
(STRING_IDS resolved on each side), joined with COMPUTE_TASK_INFO's name / op type / shapes...;
``db.api``: CANN_API rows keyed by (name, occurrence) with start/end ns and the api type.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

from benchmarks.parity.cells import Check, compare_keyed

# STRING_IDS references (msprof's unified DB schema)
STRING_COLS = {"name", "taskType", "opType", "inputFormats", "inputDataTypes", "inputShapes", "outputFormats",
               "outputDataTypes", "outputShapes", "attrInfo", "opState", "hf32Eligible", "groupName"}
TASK_KEY = ["deviceId", "streamId", "taskId", "contextId"]
TASK_COLS = ["startNs", "endNs", "taskType", "modelId"]
INFO_COLS = ["name", "opType", "taskType", "blockNum", "mixBlockNum", "inputShapes", "inputDataTypes",
             "inputFormats", "outputShapes", "outputDataTypes", "outputFormats", "opState", "hf32Eligible"]


def find_db(prof: Path) -> Path | None:
    dbs = sorted(prof.glob("msprof_*.db"))
    return dbs[-1] if dbs else None


class Db:
    def __init__(self, path: Path) -> None:
        self.con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        self.tables = {t: [r[1] for r in self.con.execute(f'PRAGMA table_info("{t}")')]
                       for (t,) in self.con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        self.strings = dict(self.con.execute("SELECT id, value FROM STRING_IDS")) if "STRING_IDS" in self.tables \
            else {}

    def count(self, table: str) -> int:
        return int(self.con.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])

    def rows(self, table: str, cols: list[str]) -> list[list[str]]:
        have = [c for c in cols if c in self.tables.get(table, [])]
        if not have:
            return []
        sql = "SELECT " + ", ".join(f'"{c}"' for c in have) + f' FROM "{table}"'
        out = []
        for r in self.con.execute(sql):
            row = dict(zip(have, r))
            out.append([self._text(c, row.get(c)) for c in cols])
        return out

    def _text(self, col: str, v: object) -> str:
        if v is None:
            return ""
        if col in STRING_COLS and isinstance(v, int):
            return str(self.strings.get(v, f"<id {v}>"))
        return str(v)

    def enum(self, table: str) -> dict[int, str]:
        return dict(self.con.execute(f'SELECT id, name FROM "{table}"')) if table in self.tables else {}

    def close(self) -> None:
        self.con.close()


def compare_dbs(exp_prof: Path, our_prof: Path) -> list[Check]:
    pe, po = find_db(exp_prof), find_db(our_prof)
    if pe is None:
        return [Check("db", skipped=True), Check("db.task", skipped=True), Check("db.api", skipped=True)]
    if po is None:
        c = Check("db")
        c.notes.append("no file")
        return [c, Check("db.task", skipped=True), Check("db.api", skipped=True)]
    de, do = Db(pe), Db(po)
    try:
        return [_tables(de, do), _tasks(de, do), _api(de, do)]
    finally:
        de.close()
        do.close()


def _tables(de: Db, do: Db) -> Check:
    c = Check("db")
    common = sorted(set(de.tables) & set(do.tables))
    c.rows_expected = len(common)
    for t in common:
        lack = [col for col in de.tables[t] if col not in do.tables[t]]
        if lack:
            c.notes.append(f"{t} lacks {', '.join(lack)}")
        ne, no = de.count(t), do.count(t)
        if ne != no:
            c.cells["row count"] += 1
            c.example(f"{t}: msprof {ne} rows, msprof_py {no}")
    return c


def _task_rows(db: Db) -> list[list[str]]:
    info_cols = [k for k in INFO_COLS]
    info = {}
    if "COMPUTE_TASK_INFO" in db.tables:
        for r in db.rows("COMPUTE_TASK_INFO", ["globalTaskId"] + info_cols):
            info[r[0]] = r[1:]
    out = []
    for r in db.rows("TASK", ["globalTaskId"] + TASK_KEY + TASK_COLS):
        out.append(r[1:] + info.get(r[0], [""] * len(info_cols)))
    return out


def _tasks(de: Db, do: Db) -> Check:
    c = Check("db.task")
    if "TASK" not in de.tables or "TASK" not in do.tables:
        c.skipped = "TASK" not in de.tables
        if not c.skipped:
            c.notes.append("no TASK table")
        return c
    header = TASK_KEY + TASK_COLS + ["info." + k for k in INFO_COLS]
    cols = TASK_COLS + ["info." + k for k in INFO_COLS if k in de.tables.get("COMPUTE_TASK_INFO", [])]
    compare_keyed(c, header, _task_rows(de), header, _task_rows(do), TASK_KEY, "startNs", cols)
    return c


def _api_rows(db: Db) -> list[list[str]]:
    types = db.enum("ENUM_API_TYPE")
    return [[r[0], r[1], r[2], types.get(int(r[3]), r[3]) if r[3].isdigit() else r[3]]
            for r in db.rows("CANN_API", ["name", "startNs", "endNs", "type"])]


def _api(de: Db, do: Db) -> Check:
    c = Check("db.api")
    if "CANN_API" not in de.tables:
        c.skipped = True
        return c
    header = ["name", "startNs", "endNs", "type"]
    compare_keyed(c, header, _api_rows(de), header, _api_rows(do), ["name"], "startNs")
    return c

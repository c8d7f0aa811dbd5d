"""The unified ``msprof_*.db``: every table msprof wrote, column by column, value by value.

String-id columns are compared as the strings they stand for (each side's STRING_IDS), ids that
only number rows (``globalTaskId``, ``connectionId``, STRING_IDS ids) through what they link.

``db``: the tables: one msprof wrote that we did not (or the reverse), columns msprof wrote that
we lack, and the rows of every table no other check covers (ENUM_*, META_DATA, NPU_INFO,
RANK_DEVICE_MAP, HOST_INFO, SESSION_TIME_INFO, COMMUNICATION_OP, ...: the multiset of rows), and
the strings of STRING_IDS msprof has and we do not;
``db.task``: TASK rows keyed by (device, stream, task, context) with every column, the launching
CANN_API call its connectionId links to (name and start), and the row's COMPUTE_TASK_INFO columns;
``db.api``: CANN_API rows keyed by (name, occurrence) with start/end ns, api type and globalTid;
``db.pmu``: TASK_PMU_INFO keyed by (task key, metric name) and AICORE_FREQ rows.
"""
from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

from benchmarks.parity.cells import Check, compare_keyed

# STRING_IDS references per table (msprof's unified DB schema, profile_data_file_references_db.md)
STRING_REFS = {
    "TASK": {"taskType"},
    "COMPUTE_TASK_INFO": {"name", "taskType", "opType", "inputFormats", "inputDataTypes", "inputShapes",
                          "outputFormats", "outputDataTypes", "outputShapes", "attrInfo", "opState", "hf32Eligible",
                          "gridDim", "blockDim"},
    "CANN_API": {"name"},
    "TASK_PMU_INFO": {"name"},
    "COMMUNICATION_OP": {"opName", "groupName", "dataType", "algType", "opType"},
    "COMMUNICATION_TASK_INFO": {"name", "taskType", "groupName", "dataType", "linkType", "transportType", "rdmaType"},
    "COMMUNICATION_SCHEDULE_TASK_INFO": {"name", "taskType", "opType"},
    "MSTX_EVENTS": {"message", "domainId"},
}
TASK_KEY = ["deviceId", "streamId", "taskId", "contextId"]
# TASK columns compared as values (globalTaskId / connectionId are links, compared through them)
TASK_COLS = ["startNs", "endNs", "taskType", "modelId", "globalPid"]
LINKS = ("globalTaskId", "connectionId")
# tables with a check of their own
OWN_CHECK = {"TASK": "db.task", "COMPUTE_TASK_INFO": "db.task", "CANN_API": "db.api", "TASK_PMU_INFO": "db.pmu",
             "AICORE_FREQ": "db.pmu", "STRING_IDS": "db"}
CHECKS = ("db", "db.task", "db.api", "db.pmu")


def find_db(prof: Path) -> Path | None:
    dbs = sorted(prof.glob("msprof_*.db"))
    return dbs[-1] if dbs else None


def expected_db_checks(prof: Path) -> list[str]:
    """The db checks that have something of msprof's to compare with in ``prof``."""
    path = find_db(prof)
    if path is None:
        return []
    db = Db(path)
    try:
        has = set(db.tables)
    finally:
        db.close()
    return ["db"] + [n for n, tables in (("db.task", {"TASK"}), ("db.api", {"CANN_API"}),
                                         ("db.pmu", {"TASK_PMU_INFO", "AICORE_FREQ"})) if has & tables]


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
        """``cols`` of every row as text ("" for a column the table lacks), string ids resolved."""
        have = [c for c in cols if c in self.tables.get(table, [])]
        if not have:
            return []
        refs = STRING_REFS.get(table, set())
        sql = "SELECT " + ", ".join(f'"{c}"' for c in have) + f' FROM "{table}"'
        out = []
        for r in self.con.execute(sql):
            row = dict(zip(have, r))
            out.append([self._text(c in refs, row.get(c)) if c in row else "" for c in cols])
        return out

    def _text(self, ref: bool, v: object) -> str:
        if v is None:
            return ""
        if ref and isinstance(v, int):
            return str(self.strings.get(v, f"<id {v}>"))
        return str(v)

    def enum(self, table: str) -> dict[int, str]:
        return dict(self.con.execute(f'SELECT id, name FROM "{table}"')) if table in self.tables else {}

    def api_links(self) -> dict[str, str]:
        """CANN_API connectionId -> "name@startNs" of the call."""
        if "CANN_API" not in self.tables:
            return {}
        return {str(c): f"{self.strings.get(n, n)}@{s}"
                for c, n, s in self.con.execute('SELECT connectionId, name, startNs FROM CANN_API')}

    def task_keys(self) -> dict[str, str]:
        """TASK globalTaskId -> "device/stream/task/context" (TASK_PMU_INFO's rows by task)."""
        if "TASK" not in self.tables:
            return {}
        return {str(g): "/".join(map(str, k)) for g, *k in
                self.con.execute('SELECT globalTaskId, deviceId, streamId, taskId, contextId FROM TASK')}

    def close(self) -> None:
        self.con.close()


def compare_dbs(exp_prof: Path, our_prof: Path) -> list[Check]:
    pe, po = find_db(exp_prof), find_db(our_prof)
    if pe is None:
        return [Check(n, skipped=True) for n in CHECKS]
    if po is None:
        c = Check("db")
        c.notes.append("no file")
        return [c] + [Check(n, skipped=True) for n in CHECKS[1:]]
    de, do = Db(pe), Db(po)
    try:
        return [_tables(de, do), _tasks(de, do), _api(de, do), _pmu(de, do)]
    finally:
        de.close()
        do.close()


def _tables(de: Db, do: Db) -> Check:
    c = Check("db")
    c.rows_expected, c.rows_ours = len(de.tables), len(do.tables)
    for t in sorted(set(de.tables) - set(do.tables)):
        c.notes.append(f"no table {t} ({de.count(t)} rows)")
    for t in sorted(set(do.tables) - set(de.tables)):
        c.notes.append(f"extra table {t} ({do.count(t)} rows)")
    for t in sorted(set(de.tables) & set(do.tables)):
        lack = [col for col in de.tables[t] if col not in do.tables[t]]
        if lack:
            c.notes.append(f"{t} lacks {', '.join(lack)}")
        if t not in OWN_CHECK:
            _rows_multiset(c, t, de, do)
    if "STRING_IDS" in de.tables:
        lacking = set(de.strings.values()) - set(do.strings.values())
        if lacking:
            c.cells["STRING_IDS"] += len(lacking)
            c.example(f"STRING_IDS: msprof_py lacks {sorted(lacking)[:5]}")
    return c


def _linked_rows(db: Db, table: str, cols: list[str]) -> list[tuple[str, ...]]:
    """Rows of ``table`` with string ids resolved and link columns replaced by what they link:
    globalTaskId -> the task's (device, stream, task, context), connectionId -> its API call."""
    rows = db.rows(table, cols)
    links = {"globalTaskId": db.task_keys() if "globalTaskId" in cols else {},
             "connectionId": db.api_links() if "connectionId" in cols else {}}
    idx = {c: cols.index(c) for c in links if c in cols}
    out = []
    for r in rows:
        for c, i in idx.items():
            r[i] = links[c].get(r[i], "-")
        out.append(tuple(r))
    return out


def _rows_multiset(c: Check, table: str, de: Db, do: Db) -> None:
    """Every row of ``table`` (msprof's columns, string ids and links resolved) as a multiset."""
    cols = de.tables[table]
    re_ = Counter(_linked_rows(de, table, cols))
    ro = Counter(_linked_rows(do, table, cols))
    only_e, only_o = re_ - ro, ro - re_
    n = sum(only_e.values()) + sum(only_o.values())
    if n:
        c.cells[table] += n
        for r in list(only_e)[:1]:
            c.example(f"{table}: only msprof has {dict(zip(cols, r))}")
        for r in list(only_o)[:1]:
            c.example(f"{table}: only msprof_py has {dict(zip(cols, r))}")


def _task_rows(db: Db) -> tuple[list[str], list[list[str]]]:
    """TASK rows with the API they link to and their COMPUTE_TASK_INFO columns (``info.*``)."""
    info_cols = [k for k in db.tables.get("COMPUTE_TASK_INFO", []) if k != "globalTaskId"]
    info = {r[0]: r[1:] for r in db.rows("COMPUTE_TASK_INFO", ["globalTaskId"] + info_cols)}
    links = db.api_links()
    header = TASK_KEY + TASK_COLS + ["api"] + ["info." + k for k in info_cols]
    out = []
    for r in db.rows("TASK", ["globalTaskId", "connectionId"] + TASK_KEY + TASK_COLS):
        out.append(r[2:] + [links.get(r[1], "-")] + list(info.get(r[0], [""] * len(info_cols))))
    return header, out


def _tasks(de: Db, do: Db) -> Check:
    c = Check("db.task")
    if "TASK" not in de.tables or "TASK" not in do.tables:
        c.skipped = "TASK" not in de.tables
        if not c.skipped:
            c.notes.append("no TASK table")
        return c
    he, re_ = _task_rows(de)
    ho, ro = _task_rows(do)
    compare_keyed(c, he, re_, ho, ro, TASK_KEY, "startNs")
    return c


API_COLS = ["name", "startNs", "endNs", "type", "globalTid"]


def _api_rows(db: Db) -> list[list[str]]:
    types = db.enum("ENUM_API_TYPE")
    return [r[:3] + [types.get(int(r[3]), r[3]) if r[3].isdigit() else r[3]] + r[4:]
            for r in db.rows("CANN_API", API_COLS)]


def _api(de: Db, do: Db) -> Check:
    c = Check("db.api")
    if "CANN_API" not in de.tables:
        c.skipped = True
        return c
    compare_keyed(c, API_COLS, _api_rows(de), API_COLS, _api_rows(do), ["name"], "startNs")
    return c


PMU_COLS = ["task", "name", "value"]
FREQ_COLS = ["deviceId", "timestampNs", "freq"]


def _pmu_rows(db: Db) -> list[list[str]]:
    keys = db.task_keys()
    return [[keys.get(g, f"<task {g}>"), n, v] for g, n, v in db.rows("TASK_PMU_INFO", ["globalTaskId", "name",
                                                                                         "value"])]


def _pmu(de: Db, do: Db) -> Check:
    c = Check("db.pmu")
    if "TASK_PMU_INFO" not in de.tables and "AICORE_FREQ" not in de.tables:
        c.skipped = True
        return c
    if "TASK_PMU_INFO" in de.tables:
        compare_keyed(c, PMU_COLS, _pmu_rows(de), PMU_COLS, _pmu_rows(do), ["task", "name"], None)
    if "AICORE_FREQ" in de.tables:
        f = Check("freq")
        compare_keyed(f, FREQ_COLS, de.rows("AICORE_FREQ", FREQ_COLS), FREQ_COLS, do.rows("AICORE_FREQ", FREQ_COLS),
                      FREQ_COLS, None)
        c.rows_expected += f.rows_expected
        c.rows_ours += f.rows_ours
        c.missing += f.missing
        c.extra += f.extra
        c.examples += [f"AICORE_FREQ: {e}" for e in f.examples]
    return c

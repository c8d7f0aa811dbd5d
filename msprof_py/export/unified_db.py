"""``msprof_{YYYYMMDDhhmmss}.db``: msprof's unified SQLite database (reference §6).

Written at the PROF directory's root like msprof (``PROF_*/msprof_*.db``), covering every
device of the session.  Conventions (msprof ``profile_data_file_references_db.md``): times are
local epoch ns; strings are interned in ``STRING_IDS(id, value)`` and other tables hold the ids;
``globalTid = pid << 32 | tid``; ``globalTaskId`` numbers the rows of TASK.

Tables and their exact column lists (as msprof's system test checks them): STRING_IDS, TASK,
CANN_API, COMPUTE_TASK_INFO, META_DATA, ENUM_API_TYPE, SESSION_TIME_INFO, NPU_INFO,
RANK_DEVICE_MAP, HOST_INFO and, when there is communication, COMMUNICATION_OP.
"""
from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.atomic import temp_path
from msprof_py.export import pmu_export
from msprof_py.export.base import ExportContext, Naming, register
from msprof_py.export.session_access import device_ids, device_info
from msprof_py.parse.session import Session
from msprof_py.export.views import api_names, as_cat, cat_isin, shown_tasks, task_types

TABLES: dict[str, list[tuple[str, str]]] = {
    "STRING_IDS": [("id", "INTEGER"), ("value", "TEXT")],
    "TASK": [("startNs", "INTEGER"), ("endNs", "INTEGER"), ("deviceId", "INTEGER"), ("connectionId", "INTEGER"),
             ("globalTaskId", "INTEGER"), ("globalPid", "INTEGER"), ("taskType", "INTEGER"),
             ("contextId", "INTEGER"), ("streamId", "INTEGER"), ("taskId", "INTEGER"), ("modelId", "INTEGER")],
    "CANN_API": [("startNs", "INTEGER"), ("endNs", "INTEGER"), ("type", "INTEGER"), ("globalTid", "INTEGER"),
                 ("connectionId", "INTEGER"), ("name", "INTEGER")],
    "COMPUTE_TASK_INFO": [("name", "INTEGER"), ("globalTaskId", "INTEGER"), ("blockNum", "INTEGER"),
                          ("mixBlockNum", "INTEGER"), ("taskType", "INTEGER"), ("opType", "INTEGER"),
                          ("inputFormats", "INTEGER"), ("inputDataTypes", "INTEGER"), ("inputShapes", "INTEGER"),
                          ("outputFormats", "INTEGER"), ("outputDataTypes", "INTEGER"),
                          ("outputShapes", "INTEGER"), ("attrInfo", "INTEGER"), ("opState", "INTEGER"),
                          ("hf32Eligible", "INTEGER"), ("gridDim", "INTEGER"), ("blockDim", "INTEGER")],
    "META_DATA": [("name", "TEXT"), ("value", "TEXT")],
    "ENUM_API_TYPE": [("id", "INTEGER"), ("name", "TEXT")],
    "SESSION_TIME_INFO": [("startTimeNs", "INTEGER"), ("endTimeNs", "INTEGER")],
    "NPU_INFO": [("id", "INTEGER"), ("name", "TEXT")],
    "RANK_DEVICE_MAP": [("rankId", "INTEGER"), ("deviceId", "INTEGER")],
    "HOST_INFO": [("hostUid", "TEXT"), ("hostName", "TEXT")],
    "COMMUNICATION_OP": [("opName", "INTEGER"), ("startNs", "INTEGER"), ("endNs", "INTEGER"),
                         ("connectionId", "INTEGER"), ("groupName", "INTEGER"), ("opId", "INTEGER"),
                         ("relay", "INTEGER"), ("retry", "INTEGER"), ("dataType", "INTEGER"),
                         ("algType", "INTEGER"), ("count", "NUMERIC"), ("opType", "INTEGER"),
                         ("deviceId", "INTEGER"), ("rankSize", "INTEGER")],
}
API_TYPES = {"acl": 20000, "model": 15000, "node": 10000, "communication": 5500, "hccl": 5500, "runtime": 5000}
ENUM_API_TYPE = [(20000, "acl"), (15000, "model"), (10000, "node"), (5500, "communication"), (5000, "runtime"),
                 (50001, "op"), (50002, "queue"), (50003, "trace"), (50004, "mstx")]
SCHEMA_VERSION = "1.0.0"
# info.json platform_version -> chip (reference §3.9; product names are msprof's inferred mapping)
CHIP_NAMES = {0: "Ascend310", 1: "Ascend910", 2: "Ascend310P", 3: "Ascend310P", 4: "Ascend310P",
              5: "Ascend910B", 7: "Ascend310B", 8: "Ascend310B", 11: "Ascend310B", 15: "Ascend950", 16: "Ascend950"}


class StringIds:
    """Interns strings; ids in first-seen order (deterministic for the same session)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def one(self, s: str) -> int:
        return self.ids.setdefault(s, len(self.ids))

    def column(self, values: Any) -> np.ndarray:
        """int64 ids of ``values`` (missing -> "N/A").  New strings are interned in the order the
        first version of this method used (a categorical's categories in their order, else the
        sorted distinct strings; then "N/A"), so the STRING_IDS table keeps its bytes."""
        if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
            cat = pd.Categorical(values)
            codes = np.asarray(cat.codes, dtype=np.int64)
            cats = [str(c) for c in cat.categories.tolist()]
        else:
            factored = _factor_str(values)
            if factored is None:  # values that are not all strings: the general (slow) path
                return self.column(pd.Categorical(pd.Series(values).astype(object)
                                                  .where(pd.Series(values).notna(), "N/A").astype(str).to_numpy()))
            codes, cats = _sorted_codes(*factored)
        table_ids = np.array([self.one(c) for c in cats] + [self.one("N/A")], dtype=np.int64)
        return table_ids[np.where(codes < 0, len(cats), codes)]


def _factor_str(values: Any) -> tuple[np.ndarray, list[str]] | None:
    """(codes, distinct values) (missing -> code -1; a categorical's unused categories included),
    or None unless every value is a str."""
    if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        cat = pd.Categorical(values)
        codes, uniq = cat.codes, cat.categories.tolist()
    else:
        codes, uniq = pd.factorize(pd.Series(values, dtype=object) if not isinstance(values, pd.Series) else values)
        uniq = uniq.tolist()
    if not all(type(u) is str for u in uniq):
        return None
    return np.asarray(codes, dtype=np.int64), uniq


def _sorted_codes(codes: np.ndarray, strs: list[str]) -> tuple[np.ndarray, list[str]]:
    """Re-code ``strs[codes]`` (code -1 = missing = "N/A") onto the sorted distinct strings, as
    ``pd.Categorical`` of the string column would (the sort touches the distinct values only)."""
    present = np.zeros(len(strs) + 1, dtype=bool)
    present[np.where(codes < 0, len(strs), codes)] = True
    used = {s for s, p in zip(strs, present[:-1].tolist()) if p} | ({"N/A"} if present[-1] else set())
    cats = sorted(used)
    index = {c: i for i, c in enumerate(cats)}
    lut = np.array([index.get(s, -1) for s in strs] + [index.get("N/A", -1)], dtype=np.int64)
    return lut[np.where(codes < 0, len(strs), codes)], cats


def _i64(col: Any) -> np.ndarray:
    """int64 column; a value that is not a number or does not fit int64 is -1 (never wrapped)."""
    s = pd.Series(col)
    if s.dtype.kind == "i":
        return s.to_numpy(dtype=np.int64)
    if s.dtype.kind == "u":
        u = s.to_numpy(dtype=np.uint64)
        out = u.astype(np.int64)
        out[u > np.uint64(2**63 - 1)] = -1
        return out
    v = pd.to_numeric(s, errors="coerce")
    if v.dtype.kind in "fu":
        return _i64(v) if v.dtype.kind == "u" else v.where(v.abs() < 2.0**63).fillna(-1).to_numpy(dtype=np.int64)
    return v.fillna(-1).to_numpy(dtype=np.int64)


def _rows(*cols: Any) -> Any:
    return zip(*[c.tolist() if isinstance(c, np.ndarray) else list(c) for c in cols])


def _strip_quotes(values: Any) -> Any:
    """``values`` as strings without '"' (missing -> "N/A").  Categorical in the fast case: the
    replace runs on the distinct values only, and the categories are what the string column
    would give (sorted, only those used), so StringIds interns them in the same order."""
    factored = _factor_str(values)
    if factored is None:
        s = pd.Series(values).astype(object).where(pd.Series(values).notna(), "N/A").astype(str)
        return s.str.replace('"', "", regex=False).to_numpy()
    codes, uniq = factored
    codes, cats = _sorted_codes(codes, [u.replace('"', "") for u in uniq])
    return pd.Categorical.from_codes(codes, categories=pd.Index(cats, dtype=object))


def write_db(session: Session, path: Path) -> Path:
    """Write the unified DB to ``path`` atomically (temporary file in the same dir, then rename)."""
    with temp_path(path) as tmp:
        con = sqlite3.connect(tmp)
        try:
            con.execute("PRAGMA journal_mode=OFF")
            con.execute("PRAGMA synchronous=OFF")
            for name, cols in TABLES.items():
                con.execute(f"CREATE TABLE {name} (" + ", ".join(f"{c} {t}" for c, t in cols) + ")")
            _fill(con, session)
            con.commit()
        except sqlite3.OperationalError as err:
            if getattr(err, "sqlite_errorcode", None) == getattr(sqlite3, "SQLITE_FULL", 13) or "is full" in str(err):
                raise OSError(errno.ENOSPC, "No space left on device", str(tmp)) from None  # temp_path words it
            raise
        finally:
            con.close()
    return path


def _insert(con: sqlite3.Connection, name: str, rows: Any) -> None:
    n = len(TABLES[name])
    con.executemany(f"INSERT INTO {name} VALUES ({','.join('?' * n)})", rows)


INSERT_CHUNK = 65_536  # rows converted to Python ints at a time: bounds the memory of a big table


def _insert_cols(con: sqlite3.Connection, name: str, *cols: np.ndarray) -> None:
    """Insert int64 columns in chunks of rows (same rows, same order as one executemany)."""
    n = len(cols[0]) if cols else 0
    for lo in range(0, n, INSERT_CHUNK):
        _insert(con, name, zip(*[c[lo:lo + INSERT_CHUNK].tolist() for c in cols]))


def _fill(con: sqlite3.Connection, session: Session) -> None:
    sid = StringIds()
    devs = device_ids(session)
    # TASK + COMPUTE_TASK_INFO
    parts = [shown_tasks(session, d) for d in devs]
    t = pd.concat([p for p in parts if len(p)], ignore_index=True) if any(len(p) for p in parts) else None
    del parts  # the per-device copies: only the concatenated table from here on
    if t is not None:
        n = len(t)
        gid = np.arange(n, dtype=np.int64)
        start, dur = _i64(t["start_ns"]), _i64(t["dur_ns"])
        dev = _i64(t["device_id"])
        pid_of = {d: int(device_info(session, d).get("pid") or 0) for d in devs}
        gpid = pd.Series(dev).map(pid_of).fillna(0).to_numpy(np.int64)
        ttype = sid.column(pd.Categorical(task_types(t)))
        _insert_cols(con, "TASK", start, start + dur, dev, _i64(t["connection_id"]), gid, gpid, ttype,
                     _i64(t["context_id"]), _i64(t["stream_id"]), _i64(t["task_id"]), _i64(t["model_id"]))
        has_op = ~cat_isin(as_cat(t["op_name"]), ["N/A"])  # codes, not one Python string per row

        def c(col: str) -> pd.Series:  # one column of the rows with an op (not a copy of every column)
            return t[col][has_op]

        g = gid[has_op]
        m = int(has_op.sum())
        na = np.full(m, sid.one("N/A"), np.int64)
        _insert_cols(
            con, "COMPUTE_TASK_INFO",
            sid.column(c("op_name")), g, _i64(c("block_num")), _i64(c("mix_block_num")), ttype[has_op],
            sid.column(c("op_type")), sid.column(c("input_formats")), sid.column(c("input_data_types")),
            sid.column(_strip_quotes(c("input_shapes"))), sid.column(c("output_formats")),
            sid.column(c("output_data_types")), sid.column(_strip_quotes(c("output_shapes"))), na,
            sid.column(c("op_state")), sid.column(c("hf32_eligible")), na, na)
    # device counters: TASK_PMU_INFO, AICORE_FREQ (msprof_py.export.pmu_export)
    pmu_export.db_tables(con, session, t, gid if t is not None else None, sid.one)
    # CANN_API
    api = session.api
    if len(api):
        lvl = api["level"].astype(object).astype(str)
        typ = lvl.map(API_TYPES).fillna(0).to_numpy(np.int64)
        gtid = (_i64(api["pid"]) << 32) | _i64(api["thread_id"])
        _insert_cols(con, "CANN_API", _i64(api["start_ns"]), _i64(api["end_ns"]), typ, gtid,
                     _i64(api["connection_id"]), sid.column(api_names(api)))
    comm = session.communication
    if len(comm):
        s = _i64(comm["start_ns"])
        n = len(comm)
        _insert_cols(
            con, "COMMUNICATION_OP",
            sid.column(comm["op_name"]), s, s + _i64(comm["dur_ns"]), _i64(comm["connection_id"]),
            sid.column(comm["group_name"]), np.arange(n, dtype=np.int64), np.zeros(n, np.int64),
            np.zeros(n, np.int64), sid.column(comm["data_type"]), sid.column(comm["alg_type"]),
            _i64(comm["count"]), sid.column(comm["op_type"]), _i64(comm["device_id"]), _i64(comm["rank_size"]))
    _insert(con, "ENUM_API_TYPE", ENUM_API_TYPE)
    dv = session.devices
    if len(dv):
        starts = _i64(dv["collection_start_ns"])
        ends = _i64(dv["collection_end_ns"])
        _insert(con, "SESSION_TIME_INFO", [(int(starts.min()), int(ends.max()))])
        chips = [CHIP_NAMES.get(int(v), f"platform_version {int(v)}") for v in _i64(dv["platform_version"])]
        _insert(con, "NPU_INFO", list(zip(_i64(dv["device_id"]).tolist(), chips)))
        _insert(con, "RANK_DEVICE_MAP", _rows(_i64(dv["rank_id"]), _i64(dv["device_id"])))
        host = str(dv["hostname"].iloc[0]) if "hostname" in dv else "N/A"
        _insert(con, "HOST_INFO", [(host, host)])
    _insert(con, "META_DATA", [("SCHEMA_VERSION", SCHEMA_VERSION), ("SCHEMA_VERSION_MAJOR", "1"),
                               ("SCHEMA_VERSION_MINOR", "0"), ("SCHEMA_VERSION_MICRO", "0"),
                               ("PRODUCER", "msprof_py")])
    _insert(con, "STRING_IDS", [(i, s) for s, i in sid.ids.items()])


class UnifiedDb:
    name = "msprof_db"
    kind = "db"
    per_device = False
    describe = "unified SQLite database (STRING_IDS, TASK, CANN_API, COMPUTE_TASK_INFO, META_DATA, ...)"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        """``out_dir`` is the PROF directory (msprof keeps the DB at its root)."""
        if not device_ids(session) and len(session.api) == 0:
            return []
        return [write_db(session, out_dir / f"msprof_{naming.timestamp or '0'}.db")]


register(UnifiedDb())

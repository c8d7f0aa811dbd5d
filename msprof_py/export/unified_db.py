"""``msprof_{YYYYMMDDhhmmss}.db``: msprof's unified SQLite database (reference §6).

Written at the PROF directory's root like msprof (``PROF_*/msprof_*.db``), covering every
device of the session.  Conventions (msprof ``profile_data_file_references_db.md``): times are
local epoch ns; strings are interned in ``STRING_IDS(id, value)`` and other tables hold the ids;
``globalTid = pid << 32 | tid``; ``globalTaskId`` numbers the rows of TASK.

Tables and their exact column lists (as msprof's system test checks them): STRING_IDS, TASK,
CANN_API, COMPUTE_TASK_INFO, META_DATA, the ENUM_* tables, SESSION_TIME_INFO, NPU_INFO,
RANK_DEVICE_MAP, HOST_INFO, COMMUNICATION_OP, TASK_PMU_INFO, AICORE_FREQ.  As msprof
(``analysis/csrc/application/database/db_assembler.cpp``), a table is created only when it has
rows.  The rules for TASK and COMPUTE_TASK_INFO rows are msprof's TaskProcessor
(``domain/data_process/ai_task/task_processor.cpp``) and CANNTraceDBDumper::DumpOpDesc
(``domain/services/persistence/host/cann_trace_db_dumper.cpp``): see :func:`db_tasks`.
"""
from __future__ import annotations

import errno
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.atomic import temp_path
from msprof_py.export import pmu_export
from msprof_py.export.base import ExportContext, Naming, register
from msprof_py.export.session_access import NA_ID, device_ids
from msprof_py.export.unified_db_enums import (API_TYPES, CHIP_NAMES, DEFAULT_HOST_UID, ENUM_TABLES, META_DATA,
                                               UNKNOWN_CHIP)
from msprof_py.export.views import (api_names, as_cat, ascend_task_types, info_names, info_types, is_level0,
                                    op_info)
from msprof_py.parse.build import join_parts
from msprof_py.parse.session import Session

TABLES: dict[str, list[tuple[str, str]]] = {
    "STRING_IDS": [("id", "INTEGER PRIMARY KEY"), ("value", "TEXT")],
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
    **{name: [("id", "INTEGER PRIMARY KEY"), ("name", "TEXT")] for name in ENUM_TABLES},
    "SESSION_TIME_INFO": [("startTimeNs", "INTEGER"), ("endTimeNs", "INTEGER")],
    "NPU_INFO": [("id", "INTEGER"), ("name", "TEXT")],
    "RANK_DEVICE_MAP": [("rankId", "INTEGER"), ("deviceId", "INTEGER")],
    "HOST_INFO": [("hostUid", "TEXT"), ("hostName", "TEXT")],
    "MEMCPY_INFO": [("globalTaskId", "NUMERIC"), ("size", "NUMERIC"), ("memcpyOperation", "NUMERIC")],
    "COMMUNICATION_OP": [("opName", "INTEGER"), ("startNs", "INTEGER"), ("endNs", "INTEGER"),
                         ("connectionId", "INTEGER"), ("groupName", "INTEGER"), ("opId", "INTEGER"),
                         ("relay", "INTEGER"), ("retry", "INTEGER"), ("dataType", "INTEGER"),
                         ("algType", "INTEGER"), ("count", "NUMERIC"), ("opType", "INTEGER"),
                         ("deviceId", "INTEGER"), ("rankSize", "INTEGER")],
}
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


Parts = Callable[[], Iterable[Session]]
"""The device tables one device at a time: each call iterates sessions of the host tables and
one device's (in device order, categoricals over the whole session's categories)."""


def write_db(session: Session, path: Path, parts: Parts | None = None) -> Path:
    """Write the unified DB to ``path`` atomically (temporary file in the same dir, then rename).

    With ``parts``, ``session`` gives the host tables and ``parts`` the device tables, read one
    device at a time (a table's rows are inserted device after device, so the file has the bytes
    of the whole session's DB while only one device's tables are in memory)."""
    with temp_path(path) as tmp:
        con = sqlite3.connect(tmp)
        try:
            con.execute("PRAGMA journal_mode=OFF")
            con.execute("PRAGMA synchronous=OFF")
            _fill(con, session, parts)
            con.commit()
        except sqlite3.OperationalError as err:
            if getattr(err, "sqlite_errorcode", None) == getattr(sqlite3, "SQLITE_FULL", 13) or "is full" in str(err):
                raise OSError(errno.ENOSPC, "No space left on device", str(tmp)) from None  # temp_path words it
            raise
        finally:
            con.close()
    return path


def _create(con: sqlite3.Connection, name: str, created: set[str] | None = None) -> None:
    if created is not None:
        if name in created:
            return
        created.add(name)
    cols = TABLES[name]
    con.execute(f"CREATE TABLE {name} (" + ", ".join(f"{c} {t}" for c, t in cols) + ")")


def _insert(con: sqlite3.Connection, name: str, rows: Any) -> None:
    """Create table ``name`` and insert ``rows`` (a list).  msprof creates a table only when it
    has rows (db_assembler.h SaveData), so an empty ``rows`` creates nothing."""
    if not rows:
        return
    _create(con, name)
    n = len(TABLES[name])
    con.executemany(f"INSERT INTO {name} VALUES ({','.join('?' * n)})", rows)


INSERT_CHUNK = 65_536  # rows converted to Python ints at a time: bounds the memory of a big table


def _insert_cols(con: sqlite3.Connection, name: str, *cols: np.ndarray, created: set[str] | None = None) -> None:
    """Create table ``name`` (when there are rows and it is not in ``created`` yet) and insert
    int64 columns in chunks of rows."""
    n = len(cols[0]) if cols else 0
    if n == 0:
        return
    _create(con, name, created)
    sql = f"INSERT INTO {name} VALUES ({','.join('?' * len(TABLES[name]))})"
    for lo in range(0, n, INSERT_CHUNK):
        con.executemany(sql, zip(*[c[lo:lo + INSERT_CHUNK].tolist() for c in cols]))


def db_tasks(session: Session) -> pd.DataFrame:
    """msprof's TASK rows (TaskProcessor: every AscendTask row with a device task): every task
    that ran on a device -- an FFTS+ / MIX kernel both as its sub-task rows and as the parent
    task around them -- minus those that ended before their device's collection start
    (FilterDataByStartTime).  Ordered by device, start, stream."""
    t = session.tasks
    if len(t) == 0:
        return t
    start = t["start_ns"].to_numpy(dtype=np.int64)
    end = start + t["dur_ns"].to_numpy(dtype=np.int64)
    dev = t["device_id"].to_numpy(dtype=np.int64)
    dv = session.devices
    begin = pd.Series(_i64(dv["collection_start_ns"]), index=_i64(dv["device_id"])) if len(dv) else pd.Series([])
    begin = begin[~begin.index.duplicated()]
    dev_begin = pd.Series(dev).map(begin).fillna(-1).to_numpy(np.int64)
    t = t[(start >= 0) & (end >= dev_begin)]
    order = np.lexsort((t["stream_id"].to_numpy(np.int64), t["start_ns"].to_numpy(np.int64),
                        t["device_id"].to_numpy(np.int64)))
    return t.iloc[order]


def parent_rows(t: pd.DataFrame) -> np.ndarray:
    """Rows that are the parent of FFTS+ sub-task rows (context id 4294967295 where the same
    device, stream, task and batch also has rows with a context id): msprof's placeholder for
    the FFTS+ task group (TreeAnalyzer::GetComputeOpDescs), which has no TaskInfo."""
    key = ["device_id", "stream_id", "task_id", "batch_id"]
    ctx = t["context_id"].to_numpy(dtype=np.int64)
    if len(t) == 0 or not (ctx != NA_ID).any():
        return np.zeros(len(t), dtype=bool)
    k = pd.DataFrame({c: t[c].to_numpy(np.int64) for c in key})
    subs = k[ctx != NA_ID].drop_duplicates().assign(_sub=True)
    has_sub = k.merge(subs, on=key, how="left")["_sub"].notna().to_numpy()
    return has_sub & (ctx == NA_ID)


def quoted_shapes(values: Any) -> pd.Categorical:
    """Shapes as msprof stores them in COMPUTE_TASK_INFO: inside one pair of quotes
    (CANNTraceDBDumper AddQuotation), "N/A" as is (only the distinct values are touched)."""
    c = as_cat(values)
    cats = np.array(['"' + v.replace('"', "") + '"' if v != "N/A" else v for v in c.categories], dtype=object)
    uniq, inverse = np.unique(cats, return_inverse=True)
    return pd.Categorical.from_codes(inverse[np.asarray(c.codes)], categories=pd.Index(list(uniq), dtype=object))


# msprof's NpuOpMemProcessor interns these two in its constructor, which every export runs, so
# they are the first STRING_IDS rows of every msprof db (npu_op_mem_processor.cpp)
ALWAYS_INTERNED = ("release", "allocate")


def _fill(con: sqlite3.Connection, session: Session, parts: Parts | None = None) -> None:
    """Every table, in msprof's order; TASK, COMPUTE_TASK_INFO, MEMCPY_INFO, TASK_PMU_INFO and
    AICORE_FREQ device after device (one pass over ``parts`` each: a table's rows stay together
    in the file, and string ids are given in the order of the whole session's)."""
    sid = StringIds()
    for s in ALWAYS_INTERNED:
        sid.one(s)
    one = [session] if parts is None else None
    cached: list[pd.DataFrame] = []

    def each(fn: Callable[[Session, pd.DataFrame, int], None]) -> int:
        """``fn(device session, its TASK rows, globalTaskId of its first row)`` device after
        device, one in memory at a time (a whole session: once, its TASK rows kept); returns
        the number of TASK rows."""
        offset = 0
        for i, s in enumerate(one if one is not None else parts()):  # type: ignore[misc]
            if one is not None and cached:
                t = cached[i]
            else:
                t = db_tasks(s)
                if one is not None:
                    cached.append(t)
            fn(s, t, offset)
            offset += len(t)
            del s, t  # before the next device is read
        return offset

    created: set[str] = set()
    comm: list[pd.DataFrame] = []
    memcpy_ids = np.full(len(session.memcpy), np.nan)

    def task_rows(s: Session, t: pd.DataFrame, offset: int) -> None:
        if len(t):
            _task_rows(con, session, t, sid, offset, created)

    def info_rows(s: Session, t: pd.DataFrame, offset: int) -> None:
        if len(t):
            _info_rows(con, session, t, sid, offset, created)
        if len(memcpy_ids):
            _memcpy_ids(session.memcpy, t, offset, memcpy_ids)

    def pmu_rows(s: Session, t: pd.DataFrame, offset: int) -> None:
        pmu_export.db_tables(con, s, t if len(t) else None, np.arange(offset, offset + len(t), dtype=np.int64),
                             sid.one, freq=False, created=created)
        comm.append(s.communication)

    def freq_rows(s: Session, t: pd.DataFrame, offset: int) -> None:
        pmu_export.db_tables(con, s, None, None, sid.one, pmu=False, created=created)

    total = each(task_rows)
    each(info_rows)
    _memcpy(con, session, memcpy_ids, total)
    # device counters: TASK_PMU_INFO, AICORE_FREQ (msprof_py.export.pmu_export)
    each(pmu_rows)
    each(freq_rows)
    _api(con, session, sid)
    _communication(con, session.communication if parts is None else join_parts("communication", comm), sid)
    for name, rows in ENUM_TABLES.items():
        _insert(con, name, rows)
    _session_tables(con, session)
    _insert(con, "META_DATA", META_DATA)
    _insert(con, "STRING_IDS", [(i, s) for s, i in sid.ids.items()])


def _task_rows(con: sqlite3.Connection, session: Session, t: pd.DataFrame, sid: StringIds, offset: int,
               created: set[str]) -> None:
    """TASK: every row of ``t`` (globalTaskId from ``offset``)."""
    n = len(t)
    gid = np.arange(offset, offset + n, dtype=np.int64)
    start, dur = _i64(t["start_ns"]), _i64(t["dur_ns"])
    dev = _i64(t["device_id"])
    _insert_cols(con, "TASK", start, start + dur, dev, _i64(t["connection_id"]), gid,
                 np.full(n, _host_pid(session), np.int64), sid.column(ascend_task_types(t)),
                 _i64(t["context_id"]), _i64(t["stream_id"]), _i64(t["task_id"]), _i64(t["model_id"]),
                 created=created)


def _info_rows(con: sqlite3.Connection, session: Session, t: pd.DataFrame, sid: StringIds, offset: int,
               created: set[str]) -> None:
    """COMPUTE_TASK_INFO: the rows of ``t`` msprof has a TaskInfo for."""
    gid = np.arange(offset, offset + len(t), dtype=np.int64)
    has_info = op_info(t) & ~parent_rows(t)
    c = t[has_info]
    if not len(c):
        return
    m = len(c)
    op_type, task_type = info_types(c, is_level0(session))
    na = np.full(m, sid.one("N/A"), np.int64)
    _insert_cols(
        con, "COMPUTE_TASK_INFO",
        sid.column(info_names(c)), gid[has_info], _i64(c["block_num"]), _i64(c["mix_block_num"]),
        sid.column(task_type), sid.column(op_type), sid.column(as_cat(c["input_formats"])),
        sid.column(as_cat(c["input_data_types"])), sid.column(quoted_shapes(c["input_shapes"])),
        sid.column(as_cat(c["output_formats"])), sid.column(as_cat(c["output_data_types"])),
        sid.column(quoted_shapes(c["output_shapes"])),
        # attrInfo: the hash dictionary's text of the op's node_attr_info hash id; msprof's
        # ComputeTaskInfoProcessor leaves "" when there is none (we do not decode node_attr_info)
        np.full(m, sid.one(""), np.int64),
        sid.column(as_cat(c["op_state"])), sid.column(as_cat(c["hf32_eligible"])), na, na, created=created)


MEMCPY_KEY = ["device_id", "stream_id", "task_id", "batch_id"]


def _memcpy_ids(m: pd.DataFrame, t: pd.DataFrame, offset: int, ids: np.ndarray) -> None:
    """Fill ``ids`` (NaN = not found yet) with the globalTaskId of each memcpy record's task among
    one device's TASK rows ``t`` (context 4294967295; a task key is on one device only)."""
    if not len(t):
        return
    mk = pd.DataFrame({k: _i64(m[k]) for k in MEMCPY_KEY})
    tk = pd.DataFrame({k: _i64(t[k]) for k in MEMCPY_KEY})
    tk["_gid"] = np.arange(offset, offset + len(tk), dtype=np.int64)
    tk = tk[_i64(t["context_id"]) == NA_ID]
    got = np.array(mk.merge(tk.drop_duplicates(MEMCPY_KEY), on=MEMCPY_KEY, how="left")["_gid"], dtype=np.float64)
    ids[:] = np.where(np.isnan(ids), got, ids)


def _memcpy(con: sqlite3.Connection, session: Session, ids: np.ndarray, total: int) -> None:
    """MEMCPY_INFO (db_assembler.cpp SaveMemcpyInfoData): one row per memcpy_info record with the
    globalTaskId of its task (``ids``, :func:`_memcpy_ids`; msprof's IdPool gives a task not in
    TASK the next free id after TASK's ``total``), the size in bytes and the
    ENUM_MEMCPY_OPERATION id of its direction."""
    m = session.memcpy
    if not len(m):
        return
    mk = pd.DataFrame({k: _i64(m[k]) for k in MEMCPY_KEY})
    g = ids.copy()
    fresh = np.isnan(g)
    if fresh.any():  # one new id per distinct task, after TASK's ids
        g[fresh] = total + mk[fresh].groupby(MEMCPY_KEY, sort=False).ngroup().to_numpy()
    ops = {name: i for i, name in ENUM_TABLES["ENUM_MEMCPY_OPERATION"]}
    op = pd.Series(np.asarray(as_cat(m["direction"]), dtype=object)).map(ops).fillna(ops["other"])
    _insert_cols(con, "MEMCPY_INFO", g.astype(np.int64), _i64(m["size_bytes"]), op.to_numpy(np.int64))


def _host_pid(session: Session) -> int:
    """TASK.globalPid: the pid of host/info.json (Context::GetPidFromInfoJson(HOST_ID)), else a
    device's."""
    dv = session.devices
    if not len(dv) or "pid" not in dv:
        return 0
    pid = pd.to_numeric(dv["pid"], errors="coerce")
    host = (dv["dir_name"].astype(str) == "host").to_numpy() if "dir_name" in dv else np.zeros(len(dv), bool)
    ordered = pd.concat([pid[host], pid[~host]]).dropna()
    return int(ordered.iloc[0]) if len(ordered) else 0


def _api(con: sqlite3.Connection, session: Session, sid: StringIds) -> None:
    api = session.api
    if not len(api):
        return
    lvl = as_cat(api["level"])  # the level names are few: map the categories, not the rows
    typ = np.array([API_TYPES.get(str(c), 0) for c in lvl.categories], dtype=np.int64)[np.asarray(lvl.codes)]
    gtid = (_i64(api["pid"]) << 32) | _i64(api["thread_id"])
    _insert_cols(con, "CANN_API", _i64(api["start_ns"]), _i64(api["end_ns"]), typ, gtid,
                 _i64(api["connection_id"]), sid.column(api_names(api)))


def _communication(con: sqlite3.Connection, comm: pd.DataFrame, sid: StringIds) -> None:
    if not len(comm):
        return
    s = _i64(comm["start_ns"])
    n = len(comm)
    _insert_cols(
        con, "COMMUNICATION_OP",
        sid.column(comm["op_name"]), s, s + _i64(comm["dur_ns"]), _i64(comm["connection_id"]),
        sid.column(comm["group_name"]), np.arange(n, dtype=np.int64), np.zeros(n, np.int64),
        np.zeros(n, np.int64), sid.column(comm["data_type"]), sid.column(comm["alg_type"]),
        _i64(comm["count"]), sid.column(comm["op_type"]), _i64(comm["device_id"]), _i64(comm["rank_size"]))


def _session_tables(con: sqlite3.Connection, session: Session) -> None:
    """SESSION_TIME_INFO, NPU_INFO, RANK_DEVICE_MAP, HOST_INFO (db_assembler.cpp): one NPU_INFO
    row per ``device_*`` dir with its chip, RANK_DEVICE_MAP (-1, device) for each (msprof writes
    rank -1 whatever info.json says), a (-1, "UNKNOWN") / (-1, -1) pair without device dirs; the
    host's hostUid (default "0") and hostname."""
    dv = session.devices
    if not len(dv):
        return
    starts, ends = _i64(dv["collection_start_ns"]), _i64(dv["collection_end_ns"])
    _insert(con, "SESSION_TIME_INFO", [(int(starts.min()), int(ends.max()))])
    names = dv["dir_name"].astype(str) if "dir_name" in dv else pd.Series([""] * len(dv))
    is_dev = names.str.startswith("device_").to_numpy()
    devs = dv[is_dev]
    if len(devs):
        ids = _i64(devs["device_id"]).tolist()
        chips = [CHIP_NAMES.get(int(v), UNKNOWN_CHIP) if v >= 0 else UNKNOWN_CHIP for v in _i64(devs["platform_version"])]
        _insert(con, "NPU_INFO", list(zip(ids, chips)))
        _insert(con, "RANK_DEVICE_MAP", [(-1, d) for d in ids])
    else:
        _insert(con, "NPU_INFO", [(-1, UNKNOWN_CHIP)])
        _insert(con, "RANK_DEVICE_MAP", [(-1, -1)])
    host = dv[~is_dev]
    if len(host):
        uid = str(host["host_uid"].iloc[0]) if "host_uid" in host else ""
        uid = uid if uid not in ("", "nan", "None") else DEFAULT_HOST_UID
        _insert(con, "HOST_INFO", [(uid, str(host["hostname"].iloc[0]))])
    else:
        _insert(con, "HOST_INFO", [(DEFAULT_HOST_UID, "")])


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

    def write_parts(self, host: Session, parts: Parts, out_dir: Path, naming: Naming) -> list[Path]:
        """The same file from the host tables and the device tables one device at a time."""
        if not device_ids(host) and len(host.api) == 0:
            return []
        return [write_db(host, out_dir / f"msprof_{naming.timestamp or '0'}.db", parts)]


register(UnifiedDb())

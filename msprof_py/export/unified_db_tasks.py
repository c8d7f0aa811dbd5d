"""The unified DB's device task tables: TASK, COMPUTE_TASK_INFO and MEMCPY_INFO.

The rules for TASK and COMPUTE_TASK_INFO rows are msprof's TaskProcessor
(``domain/data_process/ai_task/task_processor.cpp``) and CANNTraceDBDumper::DumpOpDesc
(``domain/services/persistence/host/cann_trace_db_dumper.cpp``): see :func:`db_tasks`.  Each is
called with one device's TASK rows at a time (globalTaskId from an offset)."""
from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.export.session_access import NA_ID
from msprof_py.export.unified_db_enums import ENUM_TABLES
from msprof_py.export.unified_db_insert import TABLES, Const, Lookup, Rows, create_table, i64, insert_cols
from msprof_py.export.unified_db_strings import StringIds, factor
from msprof_py.export.views import as_cat, ascend_task_types, info_names, info_types, is_level0, op_info
from msprof_py.parse.session import Session


# task columns (schema.TASK_COLUMNS) no DB table reads: a forked DB process drops them (and frees
# them when the export's process frees its own, db_process); a DB that reads one fails there at once
UNREAD_TASK_COLUMNS = ("index_id", "iter_id", "span_ns", "cut_start_ns", "thread_id", "launch_ns", "match")


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
    begin = pd.Series(i64(dv["collection_start_ns"]), index=i64(dv["device_id"])) if len(dv) else pd.Series([])
    begin = begin[~begin.index.duplicated()]
    dev_begin = pd.Series(dev).map(begin).fillna(-1).to_numpy(np.int64)
    keep = (start >= 0) & (end >= dev_begin)
    if not keep.all():
        t = t[keep]
    order = np.lexsort((t["stream_id"].to_numpy(np.int64), t["start_ns"].to_numpy(np.int64),
                        t["device_id"].to_numpy(np.int64)))
    # the table itself when it is in that order already (as parsed): no copy of every column,
    # which the DB thread would hold beside the text writers
    return t if bool((order == np.arange(len(order))).all()) else t.iloc[order]


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


def task_rows(con: sqlite3.Connection, session: Session, t: pd.DataFrame, sid: StringIds, offset: int,
               created: set[str], pages: Any = None) -> None:
    """TASK: every row of ``t`` (globalTaskId from ``offset``; ``pages``: :func:`insert_cols`')."""
    n = len(t)
    start, dur = i64(t["start_ns"]), i64(t["dur_ns"])
    dev = i64(t["device_id"])
    # computed columns made a chunk of rows at a time (the DB thread works beside the text writers)
    insert_cols(con, "TASK", start, Rows(n, lambda r: start[r] + dur[r]), dev, i64(t["connection_id"]),
                 Rows(n, lambda r: np.arange(offset + r.start, offset + min(r.stop, n), dtype=np.int64)),
                 Const(host_pid(session), n), sid.lookup(*factor(ascend_task_types(t))),
                 i64(t["context_id"]), i64(t["stream_id"]), i64(t["task_id"]), i64(t["model_id"]),
                 created=created, pages=pages)


Column = Any  # an int64 array, a factored string column (codes, texts) or one text for every row
INFO_COLUMNS = ["op_name", "op_type", "task_type", "host_task_type", "device_task_type", "kernel_name", "block_num",
                "mix_block_num", "input_formats", "input_data_types", "input_shapes", "output_formats",
                "output_data_types", "output_shapes", "op_state", "hf32_eligible"]


def info_rows(con: sqlite3.Connection, session: Session, t: pd.DataFrame, sid: StringIds, offset: int,
               created: set[str], pages: Any = None) -> None:
    """COMPUTE_TASK_INFO: the rows of ``t`` msprof has a TaskInfo for (``pages``: :func:`insert_cols`')."""
    insert_info(con, info_columns(session, t, offset), sid, created, pages)


def info_columns(session: Session, t: pd.DataFrame, offset: int) -> list[Column] | None:
    """COMPUTE_TASK_INFO's columns for the rows of ``t`` msprof has a TaskInfo for (None: no
    row), strings factored but not interned yet (:func:`insert_info` interns them in the order
    the table's turn gives: a DB written one device at a time keeps these until then)."""
    has_info = op_info(t) & ~parent_rows(t)
    if not has_info.any():
        return None
    # the rows with a TaskInfo, only the columns read here (a copy of every column was as big as
    # the task table, held beside the text writers by the DB thread); all rows: the table itself
    c = t if has_info.all() else t[[col for col in INFO_COLUMNS if col in t.columns]][has_info]
    op_type, task_type = info_types(c, is_level0(session))
    gid = np.flatnonzero(has_info) + np.int64(offset)
    return [factor(info_names(c)), gid, i64(c["block_num"]), i64(c["mix_block_num"]),
            factor(task_type), factor(op_type), factor(as_cat(c["input_formats"])),
            factor(as_cat(c["input_data_types"])), factor(quoted_shapes(c["input_shapes"])),
            factor(as_cat(c["output_formats"])), factor(as_cat(c["output_data_types"])),
            factor(quoted_shapes(c["output_shapes"])),
            # attrInfo: the hash dictionary's text of the op's node_attr_info hash id; msprof's
            # ComputeTaskInfoProcessor leaves "" when there is none (we do not decode node_attr_info)
            "", factor(as_cat(c["op_state"])), factor(as_cat(c["hf32_eligible"])), "N/A", "N/A"]


def insert_info(con: sqlite3.Connection, cols: list[Column] | None, sid: StringIds, created: set[str],
                pages: Any = None) -> None:
    """Insert :func:`info_columns`' rows: "N/A" interned first, then each column's strings in
    column order (the STRING_IDS order of msprof_py's first version of this table)."""
    if cols is not None:
        insert_cols(con, "COMPUTE_TASK_INFO", *info_ids(cols, sid), created=created, pages=pages)


def build_info(con: sqlite3.Connection, cols: list[Column], sid: StringIds, table: str) -> BuiltInfo:
    """:func:`info_columns`' rows in their final form in ``table`` (``schema.name``, created with
    COMPUTE_TASK_INFO's columns), their strings' ids those ``sid`` gives (a copy of the DB's: the
    ids predicted for the table's turn, :func:`copy_info`).  Why: a device before the last can
    have its rows made while the DB waits for the next device, not after the last one."""
    ids = info_ids(cols, sid)
    insert_cols(con, "COMPUTE_TASK_INFO", *ids, table=table)
    return table, _signature(ids)


BuiltInfo = tuple[str, list[Any]]  # the table of build_info's rows, the ids they hold (_signature)


def copy_info(con: sqlite3.Connection, cols: list[Column], built: BuiltInfo, sid: StringIds,
              created: set[str]) -> bool:
    """:func:`insert_info` of the rows :func:`build_info` made: copied as they are (SQLite's
    transfer optimisation: the same records, the same file) when their ids are those the table's
    turn gives (returns True), else inserted from ``cols`` as :func:`insert_info` does."""
    table, signature = built
    ids = info_ids(cols, sid)
    try:
        if _signature(ids) == signature:
            create_table(con, "COMPUTE_TASK_INFO", created)
            con.execute(f"INSERT INTO COMPUTE_TASK_INFO SELECT * FROM {table}")
            return True
        insert_cols(con, "COMPUTE_TASK_INFO", *ids, created=created)
        return False
    finally:
        con.execute(f"DROP TABLE IF EXISTS {table}")


def signature(ids: list[Any]) -> list[Any]:
    """What decides the ids of :func:`info_ids`' columns: each string column's ids (the rest are
    the rows' own integers)."""
    return [c.ids.tolist() if isinstance(c, Lookup) else c.value if isinstance(c, Const) else None for c in ids]


_signature = signature


def remap_info(con: sqlite3.Connection, ids: list[Any], made: list[Any], rows: tuple[int, int]) -> bool:
    """COMPUTE_TASK_INFO rows ``lo < rowid <= hi`` (``rows``) inserted with the string ids of the
    signature ``made`` (:func:`signature`) given those of ``ids`` (:func:`info_ids` at the table's
    turn): nothing to do when they are the same (returns True), else each string column's ids
    mapped in place (the same rows and rowids)."""
    final = signature(ids)
    if final == made:
        return True
    cols = [c for c, _ in TABLES["COMPUTE_TASK_INFO"]]
    sets = []
    for col, old, new in zip(cols, made, final):
        if old == new or old is None:
            continue
        pairs = dict(zip(old, new)) if isinstance(old, list) else {old: new}
        pick = " ".join(f"WHEN {int(a)} THEN {int(b)}" for a, b in pairs.items() if a != b)
        if pick:
            sets.append(f"{col} = CASE {col} {pick} ELSE {col} END")
    if sets:
        con.execute(f"UPDATE COMPUTE_TASK_INFO SET {', '.join(sets)} WHERE rowid > {int(rows[0])} "
                    f"AND rowid <= {int(rows[1])}")
    return False


def info_ids(cols: list[Column], sid: StringIds) -> list[Any]:
    """:func:`info_columns`' columns as ids, their strings interned in ``sid`` ("N/A" first, then
    each column's in column order); the columns made a chunk of rows at a time by insert_cols."""
    m = len(cols[1])
    sid.one("N/A")

    def ids(col: Column) -> Any:
        if isinstance(col, str):
            return Const(sid.one(col), m)
        if isinstance(col, tuple):
            return sid.lookup(*col)
        return col

    return [ids(col) for col in cols]


MEMCPY_KEY = ["device_id", "stream_id", "task_id", "batch_id"]


def memcpy_ids(m: pd.DataFrame, t: pd.DataFrame, offset: int, ids: np.ndarray) -> None:
    """Fill ``ids`` (NaN = not found yet) with the globalTaskId of each memcpy record's task among
    one device's TASK rows ``t`` (context 4294967295; a task key is on one device only)."""
    if not len(t):
        return
    mk = pd.DataFrame({k: i64(m[k]) for k in MEMCPY_KEY})
    tk = pd.DataFrame({k: i64(t[k]) for k in MEMCPY_KEY})
    tk["_gid"] = np.arange(offset, offset + len(tk), dtype=np.int64)
    tk = tk[i64(t["context_id"]) == NA_ID]
    got = np.array(mk.merge(tk.drop_duplicates(MEMCPY_KEY), on=MEMCPY_KEY, how="left")["_gid"], dtype=np.float64)
    ids[:] = np.where(np.isnan(ids), got, ids)


def memcpy_rows(con: sqlite3.Connection, session: Session, ids: np.ndarray, total: int,
                created: set[str] | None = None) -> None:
    """MEMCPY_INFO (db_assembler.cpp SaveMemcpyInfoData): one row per memcpy_info record with the
    globalTaskId of its task (``ids``, :func:`memcpy_ids`; msprof's IdPool gives a task not in
    TASK the next free id after TASK's ``total``), the size in bytes and the
    ENUM_MEMCPY_OPERATION id of its direction."""
    m = session.memcpy
    if not len(m):
        return
    mk = pd.DataFrame({k: i64(m[k]) for k in MEMCPY_KEY})
    g = ids.copy()
    fresh = np.isnan(g)
    if fresh.any():  # one new id per distinct task, after TASK's ids
        g[fresh] = total + mk[fresh].groupby(MEMCPY_KEY, sort=False).ngroup().to_numpy()
    ops = {name: i for i, name in ENUM_TABLES["ENUM_MEMCPY_OPERATION"]}
    op = pd.Series(np.asarray(as_cat(m["direction"]), dtype=object)).map(ops).fillna(ops["other"])
    insert_cols(con, "MEMCPY_INFO", g.astype(np.int64), i64(m["size_bytes"]), op.to_numpy(np.int64), created=created)


def host_pid(session: Session) -> int:
    """TASK.globalPid: the pid of host/info.json (Context::GetPidFromInfoJson(HOST_ID)), else a
    device's."""
    dv = session.devices
    if not len(dv) or "pid" not in dv:
        return 0
    pid = pd.to_numeric(dv["pid"], errors="coerce")
    host = (dv["dir_name"].astype(str) == "host").to_numpy() if "dir_name" in dv else np.zeros(len(dv), bool)
    ordered = pd.concat([pid[host], pid[~host]]).dropna()
    return int(ordered.iloc[0]) if len(ordered) else 0

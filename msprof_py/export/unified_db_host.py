"""The unified DB's host and session tables: CANN_API, COMMUNICATION_OP, SESSION_TIME_INFO,
NPU_INFO, RANK_DEVICE_MAP and HOST_INFO (msprof ``db_assembler.cpp``)."""
from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd

from msprof_py.export.unified_db_enums import API_TYPES, CHIP_NAMES, DEFAULT_HOST_UID, UNKNOWN_CHIP
from msprof_py.export.unified_db_insert import Lookup, i64, insert_cols, insert_rows
from msprof_py.export.unified_db_strings import StringIds, factor
from msprof_py.export.views import api_names, as_cat
from msprof_py.parse.session import Session


def api_rows(con: sqlite3.Connection, session: Session, sid: StringIds) -> None:
    api = session.api
    if not len(api):
        return
    lvl = as_cat(api["level"])  # the level names are few: map the categories, not the rows
    # type and name ids made a chunk of rows at a time (4.2 M rows: 34 MB per int64 column)
    typ = Lookup(np.array([API_TYPES.get(str(c), 0) for c in lvl.categories], dtype=np.int64),
                 np.asarray(lvl.codes))  # a missing level (code -1): the last category's, as ever
    gtid = (i64(api["pid"]) << 32) | i64(api["thread_id"])
    insert_cols(con, "CANN_API", i64(api["start_ns"]), i64(api["end_ns"]), typ, gtid,
                 i64(api["connection_id"]), sid.lookup(*factor(api_names(api))))


def communication_rows(con: sqlite3.Connection, comm: pd.DataFrame, sid: StringIds) -> None:
    if not len(comm):
        return
    s = i64(comm["start_ns"])
    n = len(comm)
    insert_cols(
        con, "COMMUNICATION_OP",
        sid.column(comm["op_name"]), s, s + i64(comm["dur_ns"]), i64(comm["connection_id"]),
        sid.column(comm["group_name"]), np.arange(n, dtype=np.int64), np.zeros(n, np.int64),
        np.zeros(n, np.int64), sid.column(comm["data_type"]), sid.column(comm["alg_type"]),
        i64(comm["count"]), sid.column(comm["op_type"]), i64(comm["device_id"]), i64(comm["rank_size"]))


def session_tables(con: sqlite3.Connection, session: Session) -> None:
    """SESSION_TIME_INFO, NPU_INFO, RANK_DEVICE_MAP, HOST_INFO (db_assembler.cpp): one NPU_INFO
    row per ``device_*`` dir with its chip, RANK_DEVICE_MAP (-1, device) for each (msprof writes
    rank -1 whatever info.json says), a (-1, "UNKNOWN") / (-1, -1) pair without device dirs; the
    host's hostUid (default "0") and hostname."""
    dv = session.devices
    if not len(dv):
        return
    starts, ends = i64(dv["collection_start_ns"]), i64(dv["collection_end_ns"])
    insert_rows(con, "SESSION_TIME_INFO", [(int(starts.min()), int(ends.max()))])
    names = dv["dir_name"].astype(str) if "dir_name" in dv else pd.Series([""] * len(dv))
    is_dev = names.str.startswith("device_").to_numpy()
    devs = dv[is_dev]
    if len(devs):
        ids = i64(devs["device_id"]).tolist()
        chips = [CHIP_NAMES.get(int(v), UNKNOWN_CHIP) if v >= 0 else UNKNOWN_CHIP for v in i64(devs["platform_version"])]
        insert_rows(con, "NPU_INFO", list(zip(ids, chips)))
        insert_rows(con, "RANK_DEVICE_MAP", [(-1, d) for d in ids])
    else:
        insert_rows(con, "NPU_INFO", [(-1, UNKNOWN_CHIP)])
        insert_rows(con, "RANK_DEVICE_MAP", [(-1, -1)])
    host = dv[~is_dev]
    if len(host):
        uid = str(host["host_uid"].iloc[0]) if "host_uid" in host else ""
        uid = uid if uid not in ("", "nan", "None") else DEFAULT_HOST_UID
        insert_rows(con, "HOST_INFO", [(uid, str(host["hostname"].iloc[0]))])
    else:
        insert_rows(con, "HOST_INFO", [(DEFAULT_HOST_UID, "")])

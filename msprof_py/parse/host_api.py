"""Host API table and call tree of one PROF dir (api_event records, §3.2).

``read_api`` gives one row per API call / paired event (schema.API_COLUMNS; times local ns,
``dur_ticks`` in host counter ticks), the call tree over them, and what the task and
communication tables look up through it (thread codes, resolved item names, model ids).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.errors import WarningLog
from msprof_py.parse import cats, plausible
from msprof_py.parse.cats import frame
from msprof_py.parse.calltree import CallTree
from msprof_py.parse.meta import ResultDir, Ticks
from msprof_py.parse.records.dictionaries import Dictionaries
from msprof_py.parse.registry import KindReader
from msprof_py.raw import api_event as raw_api
from msprof_py.raw.common import (ACL_HOST_HCCL, ACL_MODEL, ACL_NN, ACL_OP, ACL_OTHERS, ACL_RTS, ACL_ASCENDC,
                                  LEVEL_ACL, LEVEL_NAMES)

ACL_FAMILIES = {ACL_OP: "ACL_OP", ACL_MODEL: "ACL_MODEL", ACL_RTS: "ACL_RTS", ACL_OTHERS: "ACL_OTHERS",
                ACL_NN: "ACL_NN", ACL_ASCENDC: "ACL_ASCENDC", ACL_HOST_HCCL: "HOST_HCCL", 9: "ACL_DVPP",
                10: "ACL_GRAPH", 11: "ACL_ATB"}


@dataclass
class HostApi:
    """The API table and what later host tables look up through it (one row per API call)."""

    api: pd.DataFrame  # schema.API_COLUMNS
    raw: dict[str, Any]  # the decoded api_event columns (connection_id as the exporting analysis numbers it)
    tree: CallTree
    threads: pd.Index  # thread id of each call tree thread code
    item: Any  # item_id resolved through hash_dic (Categorical)
    model_of_api: np.ndarray  # at a Model-level call's row its model id (item_id as int64; other rows: their item_id)
    device_col: np.ndarray | None = None  # the array api["device_id"] was made from (only api holds it)


def read_api(kinds: KindReader, rd: ResultDir, ticks: Ticks, dicts: Dictionaries, warnings: WarningLog,
             pid: int, python_path: bool) -> HostApi:
    """Decode api_event into the API table and its call tree (``python_path``: see ``load_host``)."""
    a = kinds.get(raw_api.FILE_TAG)
    # connection ids as the exporting analysis numbers the records (records.api_event): msprof's
    # Python parser in file order from 0, its C++ analysis in (begin, level) order from 1
    if not python_path:
        a = {**a, "connection_id": a["cpp_connection_id"]}
    # begin 0: the call started before profiling (the first aclrtSetDevice); converted like any
    # counter, so end - start is msprof's duration (the raw counter difference); it lies before
    # collectionTimeBegin and is kept (api_statistic counts it; msprof's timeline leaves it out)
    zero_begin = a["start"] == 0
    start = ticks.to_local_ns(a["start"])
    end = ticks.to_local_ns(a["end"])
    plausible.check_window(warnings, "API call starts", kinds.label(raw_api.FILE_TAG), start[~zero_begin],
                           rd.collection_start_ns,
                           rd.collection_end_ns)
    codes, threads = pd.factorize(a["thread_id"], sort=True)
    threads = pd.Index(threads)
    tree = CallTree(codes, start, end, a["level"])
    name = dicts.resolve_type(a["level"], a["type"])  # API name (type_info_dic)
    is_acl = a["level"] == LEVEL_ACL
    # struct_type: the ACL API family (high 16 bits of the type) for AscendCL calls, else the name
    fam_codes, fam_uniq = pd.factorize((a["type"] >> 16).astype(np.int64)[is_acl])
    family = cats.from_codes(np.full(len(is_acl), -1, np.int64), [])
    if is_acl.any():
        codes = np.full(len(is_acl), -1, np.int64)
        codes[is_acl] = fam_codes
        family = cats.from_codes(codes, [ACL_FAMILIES.get(int(f), str(int(f))) for f in fam_uniq])
    struct_type = cats.where(is_acl, family, name)
    if python_path and is_acl.any() and not dicts.has_level(LEVEL_ACL):
        # msprof's Python analysis (ApiDataModel.update_type_hash_value): a level absent from the
        # type dictionary keeps the raw type number as struct_type and id 0, so every AscendCL
        # call is named "0" (api_statistic: one row "0"; timeline "AscendCL@0", Mode = the number)
        struct_type = cats.where(is_acl, name, struct_type)
        name = cats.where(is_acl, cats.from_codes(np.zeros(len(is_acl), np.int64), ["0"]), name)
    item = dicts.resolve_hash(a["item_id"])
    lv_codes, lv_uniq = pd.factorize(a["level"])
    device_col = np.full(len(start), -1, np.int64)  # set where a Runtime call launched a task (read_tasks)
    api = frame({
        "pid": np.full(len(start), pid, np.int64),
        "thread_id": a["thread_id"].astype(np.int64),
        "level": cats.from_codes(lv_codes, [LEVEL_NAMES.get(int(u), str(int(u))) for u in lv_uniq]),
        "struct_type": struct_type,
        "name": name,
        "item_id": item,
        "start_ns": start,
        "end_ns": end,
        "dur_ns": end - start,
        "dur_ticks": _tick_diff(a["end"], a["start"]),
        "before_profiling": zero_begin,
        "connection_id": a["connection_id"],
        "request_id": a["request_id"],
        "parent": tree.parent,
        "device_id": device_col,
    })
    # Model-level APIs carry the model id in item_id (a number msprof prints unresolved); read
    # only at Model-level rows (the call tree's Model ancestors), so item_id itself, as int64
    item_id = a["item_id"]
    model_of_api = item_id.view(np.int64) if item_id.dtype == np.uint64 else item_id.astype(np.int64)
    return HostApi(api, a, tree, threads, item, model_of_api, device_col)


def _tick_diff(end: np.ndarray, start: np.ndarray) -> np.ndarray:
    """``end - start`` as int64 (two's complement, as ``end.astype(int64) - start.astype(int64)``
    gives it), without the two int64 copies when both are uint64."""
    if end.dtype == np.uint64 and start.dtype == np.uint64:
        return (end - start).view(np.int64)
    return end.astype(np.int64) - start.astype(np.int64)


def thread_codes(threads: pd.Index, values: np.ndarray) -> np.ndarray:
    """Thread ids -> the call tree's thread codes (unknown threads get a code no API has)."""
    pos = threads.get_indexer(np.asarray(values))
    return np.where(pos >= 0, pos, len(threads) + 1).astype(np.int64)


def take_or(values: np.ndarray, idx: np.ndarray, default) -> np.ndarray:
    """``values[idx]`` where ``idx >= 0``, else ``default`` -- also when ``values`` is empty
    (a stream with no records, e.g. a missing api_event slice) and every ``idx`` is -1."""
    if not len(values):
        return np.where(idx >= 0, default, default) if np.ndim(default) else np.full(len(idx), default)
    return np.where(idx >= 0, values[np.maximum(idx, 0)], default)

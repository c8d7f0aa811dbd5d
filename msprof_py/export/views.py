"""Row selections shared by several exporters (which tasks a device shows, display names).

Selections only; no time is computed here.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.export.session_access import NA_ID, of_device
from msprof_py.parse.cats import code_dtype, of_codes
from msprof_py.parse.session import Session

# op_summary drops these task types (msprof C++ OpSummaryAssembler)
SUMMARY_DROPPED_TYPES = frozenset({"WRITE_BACK", "INVALID", "HCCL_AI_CPU", "COMMUNICATION"})


def as_cat(col: Any) -> pd.Categorical:
    """Any column as a Categorical of plain strings, missing values as "N/A" (cheap when the
    column is categorical already: only the categories are touched, the codes are kept as they
    are unless a missing value must become "N/A")."""
    if isinstance(col, pd.Categorical) or isinstance(getattr(col, "dtype", None), pd.CategoricalDtype):
        c = col if isinstance(col, pd.Categorical) else pd.Categorical(col)
        codes = np.asarray(c.codes)
        cats = [str(x) for x in c.categories.tolist()]
        missing = bool(len(codes)) and int(codes.min()) < 0
    else:
        codes, uniq = pd.factorize(pd.Series(col, dtype=object), sort=False)
        codes = np.asarray(codes, dtype=np.int64)
        cats = [str(x) for x in uniq.tolist()]
        missing = bool((codes < 0).any())
    if missing or "N/A" not in cats:
        cats = cats + ["N/A"]
        if missing:
            codes = np.where(codes < 0, len(cats) - 1, codes.astype(code_dtype(len(cats)), copy=False))
    if len(set(cats)) == len(cats):
        return of_codes(codes, cats)
    uniq, inverse = np.unique(np.array(cats, dtype=object), return_inverse=True)  # dedupe categories
    return of_codes(inverse[codes], list(uniq))


def _same(a: pd.Categorical, b: pd.Categorical) -> np.ndarray:
    """Rows where two :func:`as_cat` columns (distinct categories, no missing code) hold the
    same text: compared as codes, not as per-row strings."""
    into_a = a.categories.get_indexer(b.categories)  # -1: a text ``a`` does not have
    return into_a[b.codes] == a.codes


def _code_of(c: pd.Categorical, text: str) -> int:
    """The code of ``text`` in an :func:`as_cat` column (-2, matching no row, when absent)."""
    i = c.categories.get_indexer([text])[0]
    return int(i) if i >= 0 else -2


def na_cat(n: int) -> pd.Categorical:
    """``n`` rows of "N/A" (no per-row string)."""
    return pd.Categorical.from_codes(np.zeros(n, np.int8), categories=pd.Index(["N/A"], dtype=object))


def cat_where(cond: np.ndarray, a: pd.Categorical, b: pd.Categorical) -> pd.Categorical:
    """Row-wise ``a if cond else b`` for categoricals, without per-row strings."""
    cats = pd.Index(list(dict.fromkeys([*a.categories, *b.categories])), dtype=object)
    ca, cb = _codes_in(cats, a), _codes_in(cats, b)
    return of_codes(np.where(cond, ca, cb), cats)


def _codes_in(cats: pd.Index, c: pd.Categorical) -> np.ndarray:
    """``c``'s codes as codes of ``cats`` (which holds all of c's categories; a missing code
    takes c's last category, as indexing the mapping with -1 always did)."""
    to = cats.get_indexer(c.categories)
    codes = np.asarray(c.codes)
    if len(to) and np.array_equal(to, np.arange(len(to))) and (not len(codes) or int(codes.min()) >= 0):
        return codes  # c's categories come first in ``cats``, in their order: the codes as they are
    return to.astype(code_dtype(len(cats)))[codes]


def cat_isin(c: pd.Categorical, values: Any) -> np.ndarray:
    return np.isin(np.asarray(c.categories, dtype=object), list(values))[c.codes]


def is_in(col: Any, values: Any) -> np.ndarray:
    """Rows of a text column (categorical or not; missing = "N/A") whose text is one of
    ``values``: compared per category, not per row."""
    if isinstance(col, pd.Categorical) or isinstance(getattr(col, "dtype", None), pd.CategoricalDtype):
        c = col if isinstance(col, pd.Categorical) else col.array
        values = list(values)
        # one flag per category (its text), the last for missing values (code -1 picks it)
        hit = np.append(np.isin(np.array([str(x) for x in c.categories.tolist()], dtype=object), values),
                        "N/A" in values)
        return hit[c.codes]
    return cat_isin(as_cat(col), values)


HCCL_LEVELS = ("communication", "hccl")


def api_names(api: pd.DataFrame) -> pd.Categorical:
    """The name msprof shows for each API row (timeline ``{Level}@{name}``, api_statistic, the db's
    CANN_API): the HCCL-level op's item id (``hcom_allReduce__673_0_1``; its type is only
    ``master``), the API name otherwise (msprof C++ ApiProcessor::FormatData, its Python path too)."""
    name = as_cat(api["name"])
    hccl = cat_isin(as_cat(api["level"]), HCCL_LEVELS)
    if not hccl.any():
        return name
    return cat_where(~hccl, name, as_cat(api["item_id"])).remove_unused_categories()


def api_ids(api: pd.DataFrame) -> pd.Categorical:
    """The timeline's ``id`` arg: the API name for AscendCL calls, ``0`` for every other level
    (msprof C++ ApiEventDBDumper, its Python path too)."""
    name = as_cat(api["name"])  # its categories are distinct: its codes index the joined ones
    cats = pd.Index(list(dict.fromkeys([*name.categories, "0"])), dtype=object)
    codes = np.where(is_in(api["level"], ["acl"]), name.codes, cats.get_loc("0"))
    return pd.Categorical.from_codes(codes, categories=cats)


def shown_tasks(session: Session, device_id: int) -> pd.DataFrame:
    """Executed device tasks of one device, ordered by start time.

    Host-only rows (``match == "host_only"``, start -1) have no device time and are left out.
    When FFTS+ subtask rows (context_id != 4294967295) exist for a task, its parent row is
    hidden, as msprof's timeline does.
    """
    return session.tasks.take(shown_rows(session, device_id))


def shown_rows(session: Session, device_id: int) -> np.ndarray:
    """Positions in ``session.tasks`` of :func:`shown_tasks`, in its order: the rows are chosen
    on a few columns, then the table is copied once (not once per filtering step).  Computed
    once per task table and device (read-only; several exporters of a device ask for them)."""
    return _memo("shown", session.tasks, device_id, lambda: _shown_rows(session.tasks, device_id))


def _shown_rows(t: pd.DataFrame, device_id: int) -> np.ndarray:
    if len(t) == 0:
        return np.zeros(0, np.intp)
    start = t["start_ns"].to_numpy(dtype=np.int64)
    rows = np.flatnonzero((t["device_id"].to_numpy(dtype=np.int64) == device_id) & (start >= 0))
    ctx = t["context_id"].to_numpy(dtype=np.int64)[rows]
    if (ctx != NA_ID).any():
        key = ["stream_id", "task_id", "batch_id"]
        k = pd.DataFrame({c: t[c].to_numpy(dtype=np.int64)[rows] for c in key})
        with_sub = k[ctx != NA_ID].drop_duplicates()
        parents = k[ctx == NA_ID].assign(pos=rows[ctx == NA_ID]).merge(with_sub, on=key)["pos"].to_numpy()
        rows = rows[~np.isin(rows, parents)]
    return rows[start_order(start[rows], t["stream_id"].to_numpy(np.int64)[rows])]


def start_order(start: np.ndarray, stream: np.ndarray) -> np.ndarray:
    """``np.lexsort((stream, start))``: positions by start, then stream, ties kept in place.
    The parse orders each device's tasks by start and stream already (``concat_rows``), so rows
    taken in table order usually are in this order: recognised in one pass, without a sort."""
    n = len(start)
    if n < 2:
        return np.arange(n)
    a, b = start[:-1], start[1:]
    if bool(np.all((b > a) | ((b == a) & (stream[1:] >= stream[:-1])))):
        return np.arange(n)
    return np.lexsort((stream, start))


# the last task table's row selections per kind: several exporters of one device ask for the
# same rows (a weak reference, so a table is never kept alive by this and an id never reused wrongly)
_MEMO: dict[str, tuple[weakref.ref, int, np.ndarray]] = {}


def _memo(kind: str, t: pd.DataFrame, device_id: int, make: Callable[[], np.ndarray]) -> np.ndarray:
    hit = _MEMO.get(kind)
    if hit is not None and hit[0]() is t and hit[1] == device_id:
        return hit[2]
    rows = make()
    if len(rows) and int(rows.max()) < 2**31:  # kept while the device is exported: half the bytes
        rows = rows.astype(np.int32)
    rows.setflags(write=False)

    def drop(ref: weakref.ref) -> None:  # the table is gone: so are its rows (not kept until the next call)
        if _MEMO.get(kind, (None,))[0] is ref:
            _MEMO.pop(kind, None)

    _MEMO[kind] = (weakref.ref(t, drop), device_id, rows)
    return rows


LEVEL0 = frozenset({"l0", "level0"})  # msprof Context::IsLevel0
# msprof's TransTaskTypeFromRtsToGe: runtime kernel task type -> GE task type (SIMT kernels are AIV)
RTS_TO_GE = {"KERNEL_AICORE": "AI_CORE", "KERNEL_AICPU": "AI_CPU", "KERNEL_AIVEC": "AI_VECTOR_CORE",
             "KERNEL_MIX_AIC": "MIX_AIC", "KERNEL_MIX_AIV": "MIX_AIV", "KERNEL_SIMT": "AI_VECTOR_CORE"}
NO_HOST_TYPE = ["FFTS_PLUS", "UNKNOWN"]
KERNEL_COMPUTE_WHITE_LIST = frozenset(RTS_TO_GE)


def is_level0(session: Session) -> bool:
    """msprof's level0 (sample.json profLevel l0 / prof_level level0): op and task types are N/A."""
    dv = session.devices
    if len(dv) == 0:
        return False
    levels = {str(v) for v in dv["prof_level"].tolist() if isinstance(v, str)}
    return bool(levels & LEVEL0)


# msprof's Python front end hands summaries to its C++ analysis only for these chips (ChipModel
# CHIP_V4_1_0 / V6_1_0 / V6_2_0 = platform_version 5 / 15 / 16) and only from driver 0x072211 on
# (InfoConfReader.ALL_EXPORT_VERSION, ExportSummaryScene); older captures get its Python path.
CPP_EXPORT_PLATFORMS = frozenset({"5", "15", "16"})
CPP_EXPORT_DRV_VERSION = 0x072211


def cpp_export(session: Session) -> bool:
    """True when msprof would export this capture with its C++ analysis (else its Python path)."""
    dv = session.devices
    if len(dv) == 0:
        return True
    plats = {str(v) for v in dv["platform_version"].tolist() if str(v) not in ("", "nan", "None", "<NA>")}
    drv = pd.to_numeric(dv["drv_version"], errors="coerce").dropna()
    newest = int(drv.max()) if len(drv) else -1
    return bool(plats) and plats <= CPP_EXPORT_PLATFORMS and newest >= CPP_EXPORT_DRV_VERSION


def legacy_layout(session: Any) -> bool:
    """True for a capture whose driver predates all-export (info.json ``drvVersion`` < 0x072211;
    the 310B captures of April 2024 have 0x071F0D): the msprof of that era wrote its timeline
    with an older layout (see :func:`npu_label`; Overlap Analysis without the leading / trailing
    Free that today's ``SectionCalculator.compute_pipeline_overlap`` adds).  The driver version
    is the only version a PROF dir records (no CANN or msprof version); unknown = today's layout."""
    dv = session.devices
    drv = pd.to_numeric(dv["drv_version"], errors="coerce").dropna() if len(dv) else pd.Series([], dtype=float)
    drv = drv[drv >= 0]
    return bool(len(drv)) and int(drv.max()) < CPP_EXPORT_DRV_VERSION


def npu_label(session: Any, device_id: int) -> str:
    """A device process's ``process_labels`` in the timeline: ``NPU {id}`` (msprof's
    ``get_label_name_by_pid``, C++ and Python analysis of today), or ``NPU`` alone on a
    :func:`legacy_layout` capture (that msprof's ``LayerInfo.general_layer``, no device id)."""
    return "NPU" if legacy_layout(session) else f"NPU {device_id}"


def op_info(t: pd.DataFrame) -> np.ndarray:
    """Rows msprof has a TaskInfo (compute task) for, per row (bool): a GE op (an op type), or a
    kernel launch (runtime task type KERNEL_* / STARS_COMMON / FFTS_PLUS) of a named op (level0
    launches name their op without a type), or, without an op, a white-listed kernel launch with a
    kernel name from the hash dictionary (TreeAnalyzer::IsComputeTask, KERNEL_COMPUTE_WHITE_LIST,
    CANNTraceDBDumper::AddTaskInfoForOnlyTaskTrack).  Texts compared as codes (:func:`_same`)."""
    name = as_cat(t["op_name"])
    host_c = as_cat(t["host_task_type"])
    named_op = ~_same(name, host_c) & ~_same(name, as_cat(t["device_task_type"])) & (name.codes != _code_of(name, "N/A"))
    kernel = np.asarray([str(c).startswith("KERNEL") or str(c) in ("STARS_COMMON", "FFTS_PLUS")
                         for c in host_c.categories], dtype=bool)[host_c.codes] if len(t) else np.zeros(0, bool)
    white = cat_isin(host_c, KERNEL_COMPUTE_WHITE_LIST)
    has_kernel_name = ~cat_isin(as_cat(t["kernel_name"]), ["N/A"])
    return ~cat_isin(as_cat(t["op_type"]), ["N/A"]) | (named_op & kernel) | (has_kernel_name & white)


def info_names(t: pd.DataFrame) -> pd.Categorical:
    """TaskInfo op name: the op's name, else (kernel-only launch) the kernel name."""
    name, host, dev = as_cat(t["op_name"]), as_cat(t["host_task_type"]), as_cat(t["device_task_type"])
    kernel_only = _same(name, host) | _same(name, dev) | (name.codes == _code_of(name, "N/A"))
    kernel_only &= cat_isin(as_cat(t["op_type"]), ["N/A"])
    return cat_where(kernel_only, as_cat(t["kernel_name"]), name)


def info_types(t: pd.DataFrame, level0: bool) -> tuple[pd.Categorical, pd.Categorical]:
    """TaskInfo (OP Type, Task Type): N/A both at level0; a GE op's own; a kernel-only launch:
    the kernel name and the runtime task type translated to GE's."""
    if level0:
        na = na_cat(len(t))
        return na, na
    op_type = as_cat(t["op_type"])
    no_op = cat_isin(op_type, ["N/A"])
    return cat_where(no_op, as_cat(t["kernel_name"]), op_type), _info_task_types(t, no_op)


def _info_task_types(t: pd.DataFrame, no_op: np.ndarray) -> pd.Categorical:
    """info_types' Task Type (not at level0): the task type of a GE op, else the runtime task
    type translated to GE's (``RTS_TO_GE``; mapped per category, the categories those of the
    per-row texts: the sorted distinct values present, then "N/A")."""
    host = as_cat(t["host_task_type"])
    mapped = [RTS_TO_GE.get(str(c), str(c)) for c in host.categories]
    present = np.flatnonzero(np.bincount(host.codes, minlength=len(mapped))) if len(t) else []
    values = sorted({mapped[i] for i in present})
    pos = {v: i for i, v in enumerate(values)}
    to = np.array([pos.get(v, 0) for v in mapped], dtype=code_dtype(len(values) + 1))
    ge = as_cat(of_codes(to[host.codes], values))
    return cat_where(no_op, ge, as_cat(t["task_type"]))


def ascend_task_types(t: pd.DataFrame) -> pd.Categorical:
    """msprof's AscendTask type (TaskProcessor::GetTaskType): the host (runtime) task type, else
    (FFTS_PLUS / no host task) the device task type."""
    host = as_cat(t["host_task_type"])
    return cat_where(cat_isin(host, NO_HOST_TYPE), as_cat(t["device_task_type"]), host)


def shown_task_types(t: pd.DataFrame, level0: bool) -> pd.Categorical:
    """Timeline ``Task Type`` and task_time ``kernel_type``: the TaskInfo task type unless absent
    or N/A, else the AscendTask type (AscendHardwareAssembler::GetTaskType)."""
    info_tt = na_cat(len(t)) if level0 else _info_task_types(t, cat_isin(as_cat(t["op_type"]), ["N/A"]))
    use_info = op_info(t) & ~cat_isin(info_tt, ["N/A"])
    return cat_where(use_info, info_tt, ascend_task_types(t))


def task_time_tasks(session: Session, device_id: int, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """task_time's rows (msprof's FilterAscendTaskData): every executed task; where several rows
    share (stream, task, batch) and a context 0 row comes before any other sub-task (a MIX
    kernel), only the context 0 rows.  Ordered by start time.  ``columns``: only these (plus
    the ones the rule reads)."""
    t = session.tasks
    start = t["start_ns"].to_numpy(dtype=np.int64)
    rows = np.flatnonzero((t["device_id"].to_numpy(dtype=np.int64) == device_id) & (start >= 0))
    if columns is not None:
        t = t[list(dict.fromkeys([*columns, "stream_id", "task_id", "batch_id", "context_id"]))]
    t = t.take(rows[start_order(start[rows], t["stream_id"].to_numpy(np.int64)[rows])])  # one copy
    ctx = t["context_id"].to_numpy(dtype=np.int64)
    if not (ctx == 0).any():
        return t
    key = ["stream_id", "task_id", "batch_id"]
    sub = pd.DataFrame({k: t[k].to_numpy(np.int64) for k in key})
    sub["pos"] = np.arange(len(t))
    first0 = sub[ctx == 0].groupby(key)["pos"].min().rename("f0")
    first_other = sub[(ctx > 0) & (ctx != NA_ID)].groupby(key)["pos"].min().rename("f1")
    g = pd.concat([first0, first_other], axis=1).reset_index()
    mix = g[g["f1"].isna() | (g["f0"] < g["f1"])][key]
    in_mix = sub.merge(mix.assign(m=True), on=key, how="left")["m"].fillna(False).to_numpy(dtype=bool)
    return t[~in_mix | (ctx == 0)]


def summary_rows(session: Session, device_id: int) -> np.ndarray:
    """Positions in ``session.tasks`` of :func:`summary_tasks`, in its order: the rows are chosen
    on the few (categorical) columns the rule reads; no task row is copied.  Computed once per
    task table and device (read-only)."""
    return _memo("summary", session.tasks, device_id, lambda: _summary_rows(session, device_id))


def _summary_rows(session: Session, device_id: int) -> np.ndarray:
    rows = shown_rows(session, device_id)
    if len(rows) == 0:
        return rows.copy()
    t = session.tasks
    light = pd.DataFrame({c: t[c].take(rows).reset_index(drop=True) for c in _SUMMARY_RULE_COLUMNS})
    return rows[~cat_isin(task_types(light), SUMMARY_DROPPED_TYPES) & op_info(light)]


# what op_info and task_types read
_SUMMARY_RULE_COLUMNS = ("op_name", "op_type", "task_type", "host_task_type", "device_task_type", "kernel_name")


def summary_tasks(session: Session, device_id: int, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The task rows of op_summary: :func:`shown_tasks` that have a TaskInfo (:func:`op_info`),
    minus WRITE_BACK/INVALID/HCCL task types (msprof's OpSummaryAssembler).  Tasks without one
    (memcpy, events, PROFILING_ENABLE...) are in task_time and the timeline only.  ``columns``:
    only these columns (the copy an exporter holds is then only what it reads)."""
    t = session.tasks if columns is None else session.tasks[list(columns)]
    return t.take(summary_rows(session, device_id))


def span_durations(t: pd.DataFrame) -> np.ndarray:
    """The duration task_time and the timeline show (``span_ns``; ``dur_ns`` where a table has
    no span), int64 ns."""
    span = pd.to_numeric(t["span_ns"], errors="coerce") if "span_ns" in t else None
    if span is None or span.isna().any():
        return pd.to_numeric(t["dur_ns"], errors="coerce").fillna(-1).to_numpy(np.int64)
    return span.to_numpy(np.int64)


def display_names(t: pd.DataFrame) -> pd.Categorical:
    """Timeline name (AscendHardwareAssembler::GetOpName): the TaskInfo op name; else the host
    task type; else (FFTS_PLUS / no host task) the device task type."""
    host, dev = as_cat(t["host_task_type"]), as_cat(t["device_task_type"])
    fallback = cat_where(cat_isin(host, NO_HOST_TYPE), dev, host)
    return cat_where(op_info(t), info_names(t), fallback)


def task_types(t: pd.DataFrame) -> pd.Categorical:
    """TaskInfo task type unless N/A, else the device task type (msprof §3.4)."""
    tt = as_cat(t["task_type"])
    return cat_where(cat_isin(tt, ["N/A"]), as_cat(t["device_task_type"]), tt)

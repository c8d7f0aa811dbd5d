"""The parsed session's tables: the contract between ``parse`` (writes them) and ``export``
(reads only these).  Every table is a pandas DataFrame; one row per thing named below.

Conventions
- Times are integer nanoseconds on the **local wall clock** (msprof's §2.8 step 4, i.e. what
  timelines and CSVs show), int64, columns ending in ``_ns``.  Durations end in ``dur_ns``.
  Data that started before start_info's collectionTimeBegin is filtered out, as msprof does.
- Repeated strings (op names, types, API names) are pandas ``category`` (categories sorted,
  unused ones dropped).
- Missing ids use msprof's 4294967295; missing strings are "N/A"; missing times/counts are -1.
- ``device_id`` is the NPU id; host-only tables carry ``pid``/``thread_id`` instead.
- Ids are int64.  A session loaded from several PROF dirs concatenates their rows
  (``Session.profs`` keeps one session per PROF dir) and adds to every table ``rank_id`` (int64:
  info.json rank_id of the dir's device, -1 if none; the devices table keeps its own), ``host``
  (info.json hostname) and ``prof`` (the PROF dir's name), both categorical.

The dtype of every column is :func:`dtype` (int64 unless listed as category / str / float64);
:func:`empty` gives a table without rows, :func:`check` refuses a table that lacks a column.
``parse.session.Session`` is the one typed object holding these tables: the only input of every
exporter (model / iteration selection is ``Session.select``, nowhere else).

Tables (``Session.<name>``) and their columns, in order:
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

API_COLUMNS = [
    "pid",  # info.json pid of the host dir (-1 if absent)
    "thread_id",  # host OS thread that made the call
    "level",  # category: acl, model, node, communication, runtime (also pta, msproftx, ... if present)
    "struct_type",  # AscendCL: the API family (ACL_OP, ACL_MODEL, ACL_RTS, ACL_NN, HOST_HCCL, ...); else = name
    "name",  # the API's type_info_dic name: "aclmdlExecute", "ModelExecute", "launch", "KernelLaunch", ...
    "item_id",  # item hash resolved through hash_dic; unknown -> its decimal number (Model level: the model id)
    "start_ns", "end_ns", "dur_ns",
    "dur_ticks",  # end - begin in raw host counter ticks (msprof's Python analysis converts each call's
    #               difference at the host frequency, as a float: api_statistic)
    "before_profiling",  # bool: raw begin counter 0, the call began before profiling (the first
    #                      aclrtSetDevice); msprof's timelines and its C++ analysis leave it out, its
    #                      Python api_statistic counts it
    "connection_id",  # running number of the API/Event record in file order (msprof's rule), from 1 on
    #                   captures msprof's C++ analysis exports, from 0 on its Python path; flows use it
    "request_id",  # paired Model-level events: the iteration index_id; -1 for plain APIs
    "parent",  # row index (in this table) of the innermost enclosing call on the thread, -1 at the root
    "device_id",  # Runtime calls that issued a task: that task's device; else -1
]
"""``api``: every host API call and every paired Event (first = start, second = end), in
file order (= connection_id order).  The call tree: ``parent`` by time containment per thread,
ACL -> Model -> Node -> HCCL -> Runtime."""

TASK_COLUMNS = [
    "device_id",
    "model_id",  # the launching Model-level call's model id; 4294967295 for single ops / device-only
    "index_id",  # the model's iteration (1-based, per model) whose window holds the task's start
    #              (msprof's window rule); host-only rows: the Model event's request_id; 0 = none
    "iter_id",  # global iteration rank on the device (steps.iter_id); 0 if outside every iteration
    "stream_id", "task_id",  # physical ids (stars expandStatus 0 decoding); task_id is 16-bit
    "batch_id",  # task-id wrap count from flip records (msprof's FlipCalculator), both sides
    "context_id",  # FFTS+/MIX context (sub-task) id; 4294967295 for the whole task (ACSQ log)
    "start_ns", "dur_ns",  # -1 for host-only rows; dur_ns: op_summary's duration (msprof's C++: the
    #                        shown end - start; its Python path: the float duration rounded)
    "span_ns",  # task_time's duration (and the C++ timeline's): equal to dur_ns or one ns apart, as
    #             each msprof analysis computes them (parse.cpp_time, parse.py_clock); -1 host-only
    "cut_start_ns",  # task_time's start: start_ns, or on msprof's Python path (parse.py_clock) the
    #                  float start truncated, one ns below start_ns in some rows; -1 host-only
    "op_name",  # msprof's display name: the TaskInfo op name (the op; for a kernel launched without a
    #             Node-level op, its kernel name), else the host task type (the device type for
    #             FFTS_PLUS/UNKNOWN host types, e.g. device-only rows)
    "op_type",  # GE op type ("Conv2D"; the kernel name for a kernel-only launch), "N/A" without op info
    #             and in level0 captures
    "task_type",  # TaskInfo task type (AI_CORE, AI_VECTOR_CORE, MIX_AIC, AI_CPU, HCCL, ...; "N/A" in level0
    #               captures); rows without a TaskInfo: the host task type (EVENT_RECORD, MEMCPY_ASYNC;
    #               the device type for FFTS_PLUS/UNKNOWN host types), as msprof's timeline shows it
    "host_task_type",  # runtime task type: KERNEL_AICORE, KERNEL_AIVEC, MEMCPY_ASYNC, ...; UNKNOWN if no host task
    "device_task_type",  # STARS SQE type (AI_CORE, AIV_SQE, SDMA_SQE, ...) or FFTS+ sub-task type; UNKNOWN host-only
    "op_state",  # "static" (unaging node_basic_info: static graph) / "dynamic" / "N/A"
    "block_num", "mix_block_num",  # block dim; mix block num = high16 x low16 of blockNum; 0 without op info
    "hf32_eligible",  # "YES"/"NO" (op_flag bit 0) / "N/A"
    "input_shapes", "input_data_types", "input_formats",  # '1,3,224,224;64' style: dims by ",", tensors by ";"
    "output_shapes", "output_data_types", "output_formats",  # (no CSV quoting; "N/A" without tensor info)
    "kernel_name",  # task_track kernel name (hash_dic); "N/A" if unknown
    "connection_id",  # the launching Node (else Model, else AscendCL) call's connection_id (Python path:
    #                   the Node's only); -1 if none / device-only
    "thread_id",  # the launching host thread (task_track); -1 device-only
    "launch_ns",  # the task_track record's time (the launch, local ns; msprof's Python path starts its
    #               HostToDevice flow there); -1 device-only
    "match",  # category: "matched" (1 host : N device), "fifo" (several host tasks for one key, paired in
    #           time order; msprof drops these), "host_only" (start/dur -1), "device_only"
]
"""``tasks``: one row per executed device task (or FFTS+ context) joined with its host launch on
(device, stream, task, context, batch), plus host-only rows.  Sorted by (device_id, start_ns,
stream_id, task_id, context_id); host-only rows (start -1) come first per device."""

STEP_COLUMNS = [
    "device_id", "model_id",
    "index_id",  # 1-based per (device, model), counted by msprof's step-trace state machine
    "iter_id",  # 1-based rank by step_end over all models of the device
    "step_start_ns", "step_end_ns",
    "fp_start_ns", "bp_end_ns",  # first FP / last BP tag in the iteration; -1 when absent
    "data_aug_bound_ns",  # FP - the latest step_end (any model) before FP; -1 for the first / no FP
]
"""``steps``: one row per complete iteration of each model on each device (the still-open last
iteration of a model is discarded, as msprof does).  Sorted by (model_id, index_id)."""

ALL_REDUCE_COLUMNS = ["device_id", "model_id", "index_id", "start_ns", "end_ns"]
"""``all_reduce``: step-trace tag pairs >= 10000 (even = start, the next odd = end) inside an
iteration."""

COMMUNICATION_COLUMNS = [
    "device_id", "model_id", "index_id",
    "op_name",  # msprof's name: the HCCL-level API's item + _<group hash[-3:]>_<call index>_<iter_id>:
                # "hcom_allReduce__123_0_1_107_0_1" (parse.comm_tables.msprof_comm_names)
    "op_type",  # node_basic_info type of its Node launch ("HcomAllReduce"); without one, the
                # item without its trailing _<number> groups ("hcom_allReduce_")
    "group_name",  # from hccl_op_info ("N/A" if none)
    "rank_size",  # from hccl_info (-1 if none)
    "start_ns", "dur_ns",  # first sub-task start to last sub-task end on the device, per iteration
    "connection_id",  # the HCCL-level API's connection_id
    "data_type", "alg_type", "count",  # hccl_op_info ("N/A" / -1 if none)
]
"""``communication``: HCCL big ops, one row per (device, HCCL call, iteration) that ran tasks."""

COMM_TASK_COLUMNS = [
    "device_id", "op_name",  # the big op it belongs to
    "group_name", "plane_id",
    "task_type",  # hccl_info item name: Notify_Wait, Memcpy, Reduce_Inline, ...
    "stream_id", "task_id", "context_id", "start_ns", "dur_ns",
    "src_rank", "dst_rank",  # from local/remote rank and role (1 = src)
    "transport_type",  # SDMA / RDMA / LOCAL
    "size_bytes", "data_type",
    "link_type",  # ON_CHIP / HCCS / PCIE / ROCE / SIO
    "bandwidth_gbps",  # size_bytes / dur_ns (= GB/s); 0 for zero-length tasks
    "notify_id", "duration_estimated_us",
]
"""``comm_tasks``: HCCL sub-tasks: the k-th hccl_info under an HCCL call joined to the k-th task
it issued, then to that task's device executions."""

FUSION_OP_COLUMNS = [
    "model_name",  # graph_id_map name of the model ("N/A" if unknown)
    "model_id", "fusion_op",
    "original_ops",  # ";"-joined names of the fused ops
    "memory_input_kb", "memory_output_kb", "memory_weight_kb", "memory_workspace_kb", "memory_total_kb",
]
"""``fusion_ops``: fused ops and their memory (host fusion_op_info records)."""

MEMCPY_COLUMNS = ["device_id", "stream_id", "task_id", "batch_id",
                  "size_bytes",  # memcpy_info dataSize
                  "direction"]  # "host to device", "device to host", ... ("other" for unknown codes)
"""``memcpy``: per MEMCPY_ASYNC task, from the memcpy_info its Runtime call reported."""

DEVICE_INFO_FIELDS = [
    "device_id",  # 64 (msprof's HOST_ID) for the host dir
    "pid", "pid_name", "hostname", "rank_id", "platform_version", "ai_core_num", "aiv_num",
    "hwts_frequency_mhz",  # NaN for the host dir
    "host_cpu_frequency_mhz",  # info.json CPU[0].Frequency (1000 = counters are ns)
    "collection_date_begin",  # start_info collectionDateBegin text
    "collection_start_ns", "collection_end_ns",  # -1 end when end_info is missing
    "job_info",  # info.json jobInfo ("N/A" if absent)
    "drv_version",  # info.json drvVersion (-1 if absent): with platform_version, which msprof analysis path applies
    "prof_level",  # sample.json profLevel / prof_level ("l0", "level0", "l1", ...; "" if absent): msprof's
    #               level0 shows N/A op and task types
    "dir_name",  # "host" / "device_N"
    "host_uid",  # info.json hostUid ("" if absent; msprof's unified DB then writes "0")
]
"""``devices``: one row per result dir (host first, then devices)."""

PMU_KEY_COLUMNS = ["device_id", "stream_id", "task_id", "context_id", "start_ns"]
"""``pmu``: these key columns (int64; ``start_ns`` joins with ``tasks``) then float64 / int64
metric columns named as msprof's metric_summary (they depend on the chip and ``aic_metrics``:
:mod:`msprof_py.parse.pmu.table`).  Empty (with these columns) without PMU data."""

AICORE_FREQ_COLUMNS = ["device_id", "timestamp_ns", "freq_mhz"]
"""``aicore_freq``: AI Core frequency changes (int64; MHz), :mod:`msprof_py.parse.pmu.freq`."""

COLUMNS: dict[str, list[str]] = {
    "api": API_COLUMNS, "tasks": TASK_COLUMNS, "steps": STEP_COLUMNS, "all_reduce": ALL_REDUCE_COLUMNS,
    "communication": COMMUNICATION_COLUMNS, "comm_tasks": COMM_TASK_COLUMNS, "fusion_ops": FUSION_OP_COLUMNS,
    "memcpy": MEMCPY_COLUMNS, "devices": DEVICE_INFO_FIELDS, "pmu": PMU_KEY_COLUMNS,
    "aicore_freq": AICORE_FREQ_COLUMNS,
}
"""Every table of a session and the columns it must have (``pmu`` may have more)."""
COUNTER_TABLES = ("aicpu", "dp", "l2_cache", "msproftx")  # columns and dtypes: msprof_py.parse.counters

# dtype of each column as the parser writes it: "int64", "category" (repeated strings, categories
# sorted), "str" (strings, one per row or few rows), "float64".  Columns not named are int64.
_CATEGORY = {
    "api": {"level", "struct_type", "name", "item_id"},
    "tasks": {"op_name", "op_type", "task_type", "host_task_type", "device_task_type", "op_state", "hf32_eligible",
              "input_shapes", "input_data_types", "input_formats", "output_shapes", "output_data_types",
              "output_formats", "kernel_name", "match"},
}
_STR = {
    "communication": {"op_name", "op_type", "group_name", "data_type", "alg_type"},
    "comm_tasks": {"op_name", "group_name", "task_type", "transport_type", "data_type", "link_type"},
    "fusion_ops": {"model_name", "fusion_op", "original_ops"},
    "memcpy": {"direction"},
    "devices": {"pid_name", "hostname", "platform_version", "collection_date_begin", "job_info", "prof_level",
                "dir_name"},
}
_FLOAT = {
    "comm_tasks": {"bandwidth_gbps", "duration_estimated_us"},
    "fusion_ops": {"memory_input_kb", "memory_output_kb", "memory_weight_kb", "memory_workspace_kb",
                   "memory_total_kb"},
    "devices": {"hwts_frequency_mhz", "host_cpu_frequency_mhz"},
}


def columns(table: str) -> list[str]:
    """The columns ``table`` must have, in order."""
    if table in COUNTER_TABLES:
        from msprof_py.parse import counters

        return counters.TABLE_COLUMNS[table]
    return COLUMNS[table]


def dtype(table: str, column: str) -> str:
    """The documented dtype of ``table.column`` ("int64", "category", "str" or "float64")."""
    if table in COUNTER_TABLES:
        d = str(empty(table)[column].dtype)
        return "str" if d == "object" else d
    if column in _CATEGORY.get(table, ()):
        return "category"
    if column in _STR.get(table, ()):
        return "str"
    if column in _FLOAT.get(table, ()):
        return "float64"
    return "int64"


def empty(table: str) -> pd.DataFrame:
    """A table with no rows and the documented columns and dtypes (a session without that data)."""
    import pandas as pd

    if table in COUNTER_TABLES:
        from msprof_py.parse import counters

        return counters.empty(table)

    def col(c: str) -> pd.Series:
        d = dtype(table, c)
        return pd.Series([], dtype={"str": object}.get(d, d))

    return pd.DataFrame({c: col(c) for c in columns(table)})


def check(table: str, df: pd.DataFrame) -> pd.DataFrame:
    """``df`` itself when it has every column of ``table``; else ValueError naming the missing
    ones (a session is built complete once; exporters never fill columns in)."""
    missing = [c for c in columns(table) if c not in df.columns]
    if missing:
        raise ValueError(f"session table {table!r} lacks columns {missing} (msprof_py.parse.schema)")
    return df

"""The parsed session's tables: the contract between ``parse`` (writes them) and ``export``
(reads only these).  Every table is a pandas DataFrame; one row per thing named below.

Conventions
- Times are integer nanoseconds on the **local wall clock** (msprof's §2.8 step 4, i.e. what
  timelines and CSVs show), int64, columns ending in ``_ns``.  Durations end in ``dur_ns``.
- Repeated strings (op names, types, API names) are pandas ``category``.
- Missing ids use msprof's 4294967295; missing strings are "N/A".
- ``device_id`` is the NPU id; host-only tables carry ``pid``/``thread_id`` instead.

Tables (``Session.<name>``) and their columns, in order:
"""
from __future__ import annotations

API_COLUMNS = [
    "pid", "thread_id",  # host process / OS thread that made the call
    "level",  # category: acl, model, node, communication, runtime
    "struct_type",  # e.g. ACL_MODEL / launch / ModelExecute / KERNEL_AICORE ... (type_info_dic name)
    "name",  # API name shown in timelines: "aclmdlExecute", "launch", "LaunchKernel"... (item/type resolved)
    "item_id",  # resolved hash string (op name for Node@launch, model id for Model level ...)
    "start_ns", "end_ns", "dur_ns",
    "connection_id",  # running id in file order (msprof's rule), used for HostToDevice flows
    "request_id",  # Model-level events: the iteration index_id; else -1
    "parent",  # row index of the enclosing call (call tree by containment), -1 at the root
    "device_id",  # device the call targeted where known (task-issuing calls), else -1
]
"""``api``: every host API call and paired event (one row per call)."""

TASK_COLUMNS = [
    "device_id", "model_id", "index_id",  # index_id: the per-model iteration counter (0 = static/none)
    "iter_id",  # global iteration rank (step_trace_data.iter_id), 0 if outside any iteration
    "stream_id", "task_id", "batch_id", "context_id",
    "start_ns", "dur_ns",
    "op_name", "op_type", "task_type",  # task_type: AI_CORE / AI_VECTOR_CORE / MIX_AIV / AI_CPU / MEMCPY_ASYNC ...
    "host_task_type", "device_task_type",  # KERNEL_AICORE... / AI_CORE, AIV_SQE, SDMA_SQE ...
    "op_state",  # "static" / "dynamic" / "N/A"
    "block_num", "mix_block_num", "hf32_eligible",  # hf32: "YES"/"NO"/"N/A"
    "input_shapes", "input_data_types", "input_formats",  # msprof strings: '"1,3,224,224;64"'-style, ";" between tensors
    "output_shapes", "output_data_types", "output_formats",
    "kernel_name",
    "connection_id",  # the launching Node (else ACL) API's connection_id; -1 for device-only tasks
    "match",  # category: "matched", "device_only", "host_only" (host-only rows have start/dur -1)
]
"""``tasks``: device tasks joined with host launch info (one row per executed device task,
plus host-only rows marked in ``match``)."""

STEP_COLUMNS = [
    "device_id", "model_id", "index_id", "iter_id",
    "step_start_ns", "step_end_ns",
    "fp_start_ns", "bp_end_ns",  # -1 when the iteration has no FP/BP tag
    "data_aug_bound_ns",  # -1 for the first iteration
]
"""``steps``: one row per complete iteration of each model on each device."""

ALL_REDUCE_COLUMNS = ["device_id", "model_id", "index_id", "start_ns", "end_ns"]
"""``all_reduce``: tag pairs >= 10000 inside an iteration."""

COMMUNICATION_COLUMNS = [
    "device_id", "model_id", "index_id", "op_name", "op_type", "group_name", "rank_size",
    "start_ns", "dur_ns", "connection_id", "data_type", "alg_type", "count",
]
"""``communication``: HCCL big ops (e.g. hcom_allReduce__123_0_1)."""

COMM_TASK_COLUMNS = [
    "device_id", "op_name", "group_name", "plane_id", "task_type", "stream_id", "task_id", "context_id",
    "start_ns", "dur_ns", "src_rank", "dst_rank", "transport_type", "size_bytes", "data_type",
    "link_type", "bandwidth_gbps", "notify_id", "duration_estimated_us",
]
"""``comm_tasks``: HCCL sub-tasks (Notify/Memcpy/Reduce...) under a big op."""

FUSION_OP_COLUMNS = [
    "model_name", "model_id", "fusion_op", "original_ops",
    "memory_input_kb", "memory_output_kb", "memory_weight_kb", "memory_workspace_kb", "memory_total_kb",
]
"""``fusion_ops``: fused ops and their memory (host data)."""

MEMCPY_COLUMNS = ["device_id", "stream_id", "task_id", "batch_id", "size_bytes", "direction"]
"""``memcpy``: per MEMCPY_ASYNC task, from memcpy_info."""

DEVICE_INFO_FIELDS = [
    "device_id", "pid", "pid_name", "hostname", "rank_id", "platform_version", "ai_core_num", "aiv_num",
    "hwts_frequency_mhz", "host_cpu_frequency_mhz", "collection_date_begin", "collection_start_ns",
    "collection_end_ns", "job_info", "dir_name",
]
"""``devices``: one row per device dir (plus the clock parameters used to convert its times)."""

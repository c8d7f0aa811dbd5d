"""AI CPU device records: 256-byte ``MsprofAdditionalInfo`` in ``device_{id}/data/aicpu.data.{id}.slice_N``.

The AI CPU scheduler reports them (level 6000 ``aicpu``); the header's ``type`` says which body
follows (msprof ``AicpuAddInfoBean``, C++ ``prof_common.h``):

* ``TYPE_NODE`` (0) ``MsprofAicpuNodeAdditionalData``: one per AI CPU kernel run -- stream /
  task id, the kernel's wall times on the AI CPU in **µs** (run start, compute start, memcpy
  start / end, run end), the same run start / end as **device syscnt** (``run_start_tick`` /
  ``run_end_tick``, the hwts counter), the scheduler's ticks (submit, schedule, before / after
  run, syscnt) and ``dispatch_time`` / ``total_time`` in µs.  msprof's aicpu_*.csv shows
  compute = memcpy start - compute start, memcpy = memcpy end - memcpy start, task time =
  run end - run start (from the ticks), total = after-run - submit tick.
* ``TYPE_DP`` (1) ``MsprofAicpuDpAdditionalData``: one per data-preprocess (dataset queue)
  event -- ``action`` (16 chars, e.g. "Last dequeue"), ``source`` (64 chars, the queue /
  iterator name), ``index`` and ``size`` (buffers cached in the queue); the header
  ``timestamp`` is the event's CLOCK_MONOTONIC_RAW ns on the device (dp_*.csv).
"""
from __future__ import annotations

from msprof_py.raw.common import ADDITIONAL_SIZE, host_dtype

FILE_TAG = "aicpu.data"
LEVEL = 6000
TYPE_NODE = 0
TYPE_DP = 1

NODE_DTYPE = host_dtype(
    [
        ("stream_id", "<u2", 24), ("task_id", "<u2", 26), ("rev", "<u4", 28),
        ("run_start_us", "<u8", 32), ("run_start_tick", "<u8", 40), ("compute_start_us", "<u8", 48),
        ("memcpy_start_us", "<u8", 56), ("memcpy_end_us", "<u8", 64), ("run_end_us", "<u8", 72),
        ("run_end_tick", "<u8", 80), ("ai_cpu_thread_id", "<u4", 88), ("device_id", "<u4", 92),
        ("submit_tick", "<u8", 96), ("schedule_tick", "<u8", 104), ("tick_before_run", "<u8", 112),
        ("tick_after_run", "<u8", 120), ("kernel_type", "<u4", 128), ("dispatch_time_us", "<u4", 132),
        ("total_time_us", "<u4", 136), ("ffts_thread_id", "<u2", 140), ("version", "u1", 142),
    ],
    ADDITIONAL_SIZE,
)
DP_DTYPE = host_dtype(
    [("action", "S16", 24), ("source", "S64", 40), ("index", "<u8", 104), ("size", "<u8", 112)],
    ADDITIONAL_SIZE,
)
DTYPE = NODE_DTYPE  # the file's record size; the decoder re-views DP records with DP_DTYPE

"""L2 cache task counters: 72-byte device records in ``device_{id}/data/l2_cache.data.{id}.slice_N``.

msprof ``L2_CACHE_STRUCT_FMT`` = ``HHHH8Q``: task type, stream id, task id, reserved, then the 8
L2 PMU counters of the task in the order of sample.json ``l2CacheTaskProfilingEvents``.  msprof's
L2CacheCalculator takes, per chip (``msconfig/l2_cache_config.py``), request / hit / victim
events from that list; on the Ascend 910B (platform 5): request = 0xfb + 0xfc, hit = 0x90 +
0x91, victim = 0x9c.
"""
from __future__ import annotations

from msprof_py.raw.common import packed_dtype

FILE_TAG = "l2_cache.data"
RECORD_SIZE = 72
N_EVENTS = 8
DTYPE = packed_dtype([("task_type", "<u2", 0), ("stream_id", "<u2", 2), ("task_id", "<u2", 4), ("resv", "<u2", 6),
                      ("events", ("<u8", (N_EVENTS,)), 8)], RECORD_SIZE)
# what the collector lists in sample.json for the 910B: msprof's request, hit and victim events
EVENTS_910B = ("0xfb", "0xfc", "0x90", "0x91", "0x9c")
REQUEST = ("0xfb", "0xfc")
HIT = ("0x90", "0x91")
VICTIM = ("0x9c",)

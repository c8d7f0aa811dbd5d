"""MsprofApi / MsprofEvent: 40-byte host records in ``(un)aging.api_event.data.slice_N``.

API:   header (reserve @12, beginTime @16) + endTime u64 @24 + itemId u64 @32.
Event: header (requestId @12, timeStamp @16) + reserve u64 @24 == EVENT_FLAG + itemId u64 @32.
Both kinds share one file; ``end == EVENT_FLAG`` tells an Event from an API.
``item_id`` is a hash resolved through hash_dic (op name, model id, ...).
"""
from __future__ import annotations

from msprof_py.raw.common import host_dtype

FILE_TAG = "api_event.data"
DTYPE = host_dtype([("end", "<u8", 24), ("item_id", "<u8", 32)], 40)
# readable aliases for the header fields of an API record
BEGIN = "timestamp"
REQUEST_ID = "data_len"

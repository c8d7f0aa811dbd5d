"""msproftx marks and ranges: 256-byte host records in ``host/data/{aging|unaging}.additional.msproftx.slice_N``.

``MsprofTxInfo`` after the 24-byte additional header (level 20500 ``msproftx``): ``info_type``
(0 = a plain mark / range, 1 = MarkEx), ``seg_idx`` (MarkEx messages split over records), then
``MsprofStampInfo``: magic, data tag, process / thread id, category, event type (0 marker,
1 push/pop, 2 start/end, 3 marker_ex), payload type + 8-byte payload, start / end time (**host
counter ticks**, the clock of api_event), mark id, domain (hash), message type and a 156-byte
NUL-terminated message.
"""
from __future__ import annotations

from msprof_py.raw.common import ADDITIONAL_SIZE, host_dtype

FILE_TAG = "additional.msproftx"
LEVEL = 20500
MESSAGE_LEN = 156
EVENT_MARKER = 0
EVENT_PUSH_POP = 1
EVENT_START_END = 2
EVENT_MARKER_EX = 3
EVENT_NAMES = {EVENT_MARKER: "marker", EVENT_PUSH_POP: "push/pop", EVENT_START_END: "start/end",
               EVENT_MARKER_EX: "marker_ex"}
DTYPE = host_dtype(
    [
        ("info_type", "<u2", 24), ("seg_idx", "<u2", 26), ("res1", "<u4", 28),
        ("stamp_magic", "<u2", 32), ("data_tag", "<u2", 34), ("process_id", "<u4", 36), ("tx_thread_id", "<u4", 40),
        ("category", "<u4", 44), ("event_type", "<u4", 48), ("payload_type", "<i4", 52), ("payload", "<u8", 56),
        ("start", "<u8", 64), ("end", "<u8", 72), ("mark_id", "<u8", 80), ("domain", "<u8", 88),
        ("message_type", "<i4", 96), ("message", f"S{MESSAGE_LEN}", 100),
    ],
    ADDITIONAL_SIZE,
)

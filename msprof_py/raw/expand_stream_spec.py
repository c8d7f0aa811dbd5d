"""MsprofStreamExpandSpecInfo: 64-byte compact record in ``unaging.compact.expand_stream_spec.slice_N``
(msprof fmt ``2H3IQ4B9I``): the 24-byte header then ``expandStatus`` (u8): 1 = the runtime
expanded stream ids to 15 bits, which changes how STARS logs pack stream and task ids
(``raw.stars_soc.physical_ids``)."""
from __future__ import annotations

from msprof_py.raw.common import COMPACT_SIZE, host_dtype

FILE_TAG = "compact.expand_stream_spec"
DTYPE = host_dtype([("expand_status", "<u1", 24)], COMPACT_SIZE)

"""MsprofGraphIdInfo: 256-byte additional record in ``(un)aging.additional.graph_id_map.slice_N``.

Reported at model load: model name hash, graph id, model id.
"""
from __future__ import annotations

from msprof_py.raw.common import ADDITIONAL_SIZE, host_dtype

FILE_TAG = "additional.graph_id_map"
DTYPE = host_dtype([("model_name", "<u8", 24), ("graph_id", "<u4", 32), ("model_id", "<u4", 36)],
                   ADDITIONAL_SIZE)

"""``compact.expand_stream_spec``: whether stream ids are expanded (msprof keeps the first
record's ``expandStatus``; 0 when the kind is absent)."""
from __future__ import annotations

import numpy as np

from msprof_py.parse.records.parts import DecodeContext, Parts


def decode(parts: Parts, ctx: DecodeContext) -> dict[str, np.ndarray]:
    """Columns: expand_status (u8, one per record)."""
    return {"expand_status": parts.col("expand_status", np.uint8)}


def status(table: dict[str, np.ndarray]) -> int:
    """The status msprof uses: the first record's, else 0."""
    col = table["expand_status"]
    return int(col[0]) if len(col) else 0

"""Shared plumbing for host record kinds: read both the aging and unaging streams of a tag,
validate them, and gather a field across the parts without per-record Python."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from msprof_py.errors import WarningLog
from msprof_py.parse.reader import Decoded, Stream, read_records


@dataclass
class HostParts:
    """The decoded parts of one host tag (aging first, then unaging: file-name order)."""

    parts: list[Decoded]

    def col(self, name: str, dtype=None) -> np.ndarray:
        arrays = [p.field(name) for p in self.parts]
        if not arrays:
            return np.zeros(0, dtype=dtype or np.int64)
        out = np.concatenate(arrays) if len(arrays) > 1 else arrays[0]
        return out.astype(dtype, copy=False) if dtype is not None else out

    def aging(self) -> np.ndarray:
        return np.concatenate([np.full(len(p), bool(p.stream.aging)) for p in self.parts]) \
            if self.parts else np.zeros(0, bool)

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)


def load_parts(streams: dict[tuple[str, bool], Stream], tag: str, dtype: np.dtype,
               warnings: WarningLog) -> HostParts:
    """Decode ``tag`` from ``streams`` (keys ``(tag, aging)``); raises CorruptRecordError."""
    parts = [read_records(streams[(tag, aging)], dtype, warnings)
             for aging in (True, False) if (tag, aging) in streams]
    return HostParts(parts)

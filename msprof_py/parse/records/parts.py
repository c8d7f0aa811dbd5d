"""What every record decoder receives: the decoded parts of one record kind (host: the aging
stream then the unaging one, in file-name order; device: the one stream of the device) and a
:class:`DecodeContext`.  Fields are gathered across the parts without per-record Python."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from msprof_py.errors import WarningLog
from msprof_py.parse.reader import Decoded
from msprof_py.parse.records.dictionaries import Dictionaries


@dataclass
class DecodeContext:
    """Shared state of one PROF dir's decoding: the hash / type dictionaries, the warnings, and
    ``expand_status`` (host ``compact.expand_stream_spec``: 1 = stream ids expanded to 15 bits,
    which changes how STARS logs pack stream and task ids)."""

    dicts: Dictionaries = field(default_factory=Dictionaries)
    warnings: WarningLog = field(default_factory=WarningLog)
    expand_status: int = 0


@dataclass
class Parts:
    """The decoded parts of one record kind (possibly none: the kind is absent)."""

    parts: list[Decoded]
    dtype: np.dtype | None = None  # the kind's dtype, for correctly typed empty columns
    label: str = ""  # where the records come from, for messages (the first slice file)

    def col(self, name: str, dtype=None, view: np.dtype | None = None) -> np.ndarray:
        """Field ``name`` over all records; ``view``: read each record with another dtype of
        the same size (kinds whose layout depends on a type byte)."""
        if not self.parts:
            layout = view if view is not None else self.dtype
            base = layout[name] if layout is not None and name in layout.names else np.dtype(np.int64)
            return np.zeros((0, *base.shape), dtype=dtype or base.base)
        # the field's strided views over every part's chunks copied once, into the asked dtype (not
        # a copy per part, their concatenation, then a cast: a 4.2 M-row column made three times)
        views = [(c.view(view) if view is not None else c)[name] for p in self.parts for c in p.chunks]
        if not views:
            out = self.parts[0].field(name, view)
            return out.astype(dtype, copy=False) if dtype is not None else out
        if len(views) == 1:
            return np.array(views[0], dtype=dtype)
        return np.concatenate(views, dtype=dtype, casting="unsafe") if dtype is not None else np.concatenate(views)

    def release(self) -> None:
        """Drop the raw records' pages from resident memory (:meth:`Decoded.release`); the
        fields read the same afterwards."""
        for p in self.parts:
            p.release()

    def aging(self) -> np.ndarray:
        """Per record: True if it comes from the aging stream."""
        return np.concatenate([np.full(len(p), bool(p.stream.aging)) for p in self.parts]) \
            if self.parts else np.zeros(0, bool)

    def where(self, index: int) -> tuple[Path, int]:
        """(slice file, byte offset) of record ``index``."""
        for p in self.parts:
            if index < len(p):
                return p.where(index)
            index -= len(p)
        raise IndexError(index)

    def take(self, index: int) -> np.ndarray:
        """One whole record (a copy)."""
        for p in self.parts:
            if index < len(p):
                return p.take(np.array([index]))[0]
            index -= len(p)
        raise IndexError(index)

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)

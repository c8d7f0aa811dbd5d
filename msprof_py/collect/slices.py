"""One raw data stream written as msprof's numbered slice files.

A stream (e.g. host ``aging.compact.task_track`` or device 0 ``stars_soc.data``) is a byte
sequence cut into files ``..._slice_0``, ``..._slice_1``, ... of at most ``slice_bytes`` each.
The cut ignores record boundaries, exactly like msprof's collector, so a record may start in one
slice and end in the next; a reader concatenates the slices in numeric order.

Memory stays bounded: bytes go straight to the open slice file through a fixed-size write
buffer; nothing is kept per record.

Every closed slice gets its ``<slice>.done`` marker, as CANN's collector writes it:
``filesize:<bytes>\nstarttime:0\nendtime  :0\n``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

_WRITE_BUFFER = 1 << 20  # bytes buffered per open slice before the OS sees them


class SliceStream:
    """Appends bytes to ``directory/name_of(0)``, ``name_of(1)``, ... rolling at ``slice_bytes``.

    Args:
        directory: the ``data/`` directory (must exist).
        name_of: slice number -> file name (one of :mod:`msprof_py.raw.files`' name helpers).
        slice_bytes: maximum size of one slice file, > 0.
    """

    def __init__(self, directory: Path, name_of: Callable[[int], str], slice_bytes: int) -> None:
        if slice_bytes <= 0:
            raise ValueError("slice_bytes must be positive")
        self.directory = directory
        self.name_of = name_of
        self.slice_bytes = slice_bytes
        self.total_bytes = 0
        self.slices = 0
        self._file = None
        self._path: Path | None = None
        self._written = 0  # bytes in the current slice
        self._room = 0  # bytes left in the current slice

    def write(self, data: bytes | memoryview | np.ndarray) -> None:
        """Append ``data`` (a numpy record array is written as its raw bytes)."""
        if isinstance(data, np.ndarray):
            data = memoryview(np.ascontiguousarray(data)).cast("B")
        view = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
        pos = 0
        end = len(view)
        while pos < end:
            if self._room == 0:
                self._roll()
            n = min(self._room, end - pos)
            self._file.write(view[pos:pos + n])
            pos += n
            self._room -= n
            self._written += n
        self.total_bytes += end

    def _roll(self) -> None:
        self.close()
        self._path = self.directory / self.name_of(self.slices)
        self._file = open(self._path, "wb", buffering=_WRITE_BUFFER)  # noqa: SIM115 - closed in close()/_roll()
        self.slices += 1
        self._written = 0
        self._room = self.slice_bytes

    def close(self) -> None:
        """Close the open slice and write its ``.done`` marker."""
        if self._file is not None:
            self._file.close()
            self._file = None
            write_done(self._path, self._written)


DONE_SUFFIX = ".done"


def write_done(path: Path, size: int) -> None:
    """The ``<data file>.done`` marker CANN's collector writes once a data file is complete."""
    path.with_name(path.name + DONE_SUFFIX).write_bytes(f"filesize:{size}\nstarttime:0\nendtime  :0\n".encode())


def write_whole(path: Path, data: bytes) -> None:
    """A data file written in one go (the dictionaries), with its ``.done`` marker."""
    path.write_bytes(data)
    write_done(path, len(data))


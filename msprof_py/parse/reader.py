"""Reading one raw data stream: its slices concatenated in numeric order, aging head and ragged
tail handled as msprof's ``OffsetCalculator`` does.

A stream is the files of one kind in one ``data/`` dir (host: one ``aging``/``unaging`` group of
a tag; device: one tag).  Records straddle slice boundaries, so the slices are read into one
buffer (a single copy, no per-record Python) and viewed with the kind's dtype.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from msprof_py.errors import CorruptRecordError, WarningLog
from msprof_py.raw import files as raw_files
from msprof_py.raw.common import check_host_records


@dataclass
class Stream:
    """The slices of one raw stream, sorted by slice number."""

    tag: str  # e.g. "compact.task_track" or "stars_soc.data"
    aging: bool | None  # None for device streams
    paths: list[Path] = field(default_factory=list)

    @property
    def sizes(self) -> list[int]:
        return [p.stat().st_size for p in self.paths]


def _sort_paths(entries: list[tuple[int, Path]]) -> list[Path]:
    return [p for _, p in sorted(entries)]


def discover_host(data_dir: Path) -> dict[tuple[str, bool], Stream]:
    """``{(tag, aging): Stream}`` for the host data dir (unknown names are ignored)."""
    groups: dict[tuple[str, bool], list[tuple[int, Path]]] = {}
    for name in _list(data_dir):
        m = raw_files.HOST_DATA_RE.match(name)
        if m:
            key = (m["tag"], m["age"] == "aging")
            groups.setdefault(key, []).append((int(m["n"]), data_dir / name))
    return {k: Stream(k[0], k[1], _sort_paths(v)) for k, v in sorted(groups.items())}


def discover_device(data_dir: Path) -> dict[tuple[str, int], Stream]:
    """``{(tag, device_id): Stream}`` for a device data dir."""
    groups: dict[tuple[str, int], list[tuple[int, Path]]] = {}
    for name in _list(data_dir):
        m = raw_files.DEVICE_DATA_RE.match(name)
        if m:
            key = (m["tag"], int(m["dev"]))
            groups.setdefault(key, []).append((int(m["n"]), data_dir / name))
    return {k: Stream(k[0], None, _sort_paths(v)) for k, v in sorted(groups.items())}


def _list(data_dir: Path) -> list[str]:
    try:
        return sorted(n for n in os.listdir(data_dir) if not n.endswith(raw_files.SKIP_SUFFIXES))
    except OSError:
        return []


def read_bytes(stream: Stream) -> np.ndarray:
    """All slices of ``stream`` in one uint8 buffer (one copy; files are never written)."""
    sizes = stream.sizes
    buf = np.empty(sum(sizes), dtype=np.uint8)
    pos = 0
    for path, size in zip(stream.paths, sizes):
        with open(path, "rb") as f:
            got = f.readinto(memoryview(buf)[pos:pos + size])
        pos += got or 0
    return buf[:pos]


def locate(stream: Stream, offset: int) -> tuple[Path, int]:
    """Map a byte offset in the concatenated stream to ``(slice file, offset in that file)``."""
    pos = 0
    for path, size in zip(stream.paths, stream.sizes):
        if offset < pos + size:
            return path, offset - pos
        pos += size
    last = stream.paths[-1]
    return last, offset - (pos - stream.sizes[-1])


@dataclass
class Decoded:
    """Records of one stream plus where record 0 starts in the concatenated bytes."""

    records: np.ndarray
    stream: Stream
    head: int  # bytes skipped at the start (torn aging head)

    def where(self, index: int) -> tuple[Path, int]:
        return locate(self.stream, self.head + index * self.records.dtype.itemsize)


def read_records(stream: Stream, dtype: np.dtype, warnings: WarningLog, host: bool = True) -> Decoded:
    """Decode a stream with ``dtype``.

    - aging stream: the first ``total % itemsize`` bytes are a torn record (the ring buffer was
      overwritten) and are dropped with a warning, as msprof does;
    - otherwise a ragged tail (a truncated last record) is dropped with a warning naming the file
      and byte offset;
    - host records are validated (magic 0x5A5A, known level): a bad record raises
      :class:`CorruptRecordError` naming the slice file and byte offset.
    """
    buf = read_bytes(stream)
    size = dtype.itemsize
    rest = len(buf) % size
    head = 0
    if rest and stream.aging:
        head = rest
        path, _ = locate(stream, 0)
        warnings.warn(f"{path}: dropped a torn record of {rest} bytes at the start of the aging "
                      f"stream {stream.tag} (ring buffer wrapped)")
    elif rest:
        path, off = locate(stream, len(buf) - rest)
        warnings.warn(f"{path}: byte {off}: truncated record ({rest} of {size} bytes) dropped "
                      f"at the end of stream {stream.tag}")
    n = (len(buf) - head) // size
    records = np.frombuffer(buf, dtype=dtype, count=n, offset=head)
    decoded = Decoded(records, stream, head)
    if host:
        check_stream(decoded)
    return decoded


def check_stream(decoded: Decoded) -> None:
    """Validate magic/level; re-raise with the exact slice file and offset of the bad record."""
    try:
        check_host_records(decoded.records, "<stream>", 0)
    except CorruptRecordError as err:
        index = err.offset // decoded.records.dtype.itemsize
        path, off = decoded.where(index)
        raise CorruptRecordError(path, off, err.reason) from None

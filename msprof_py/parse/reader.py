"""Reading one raw data stream: its slices concatenated in numeric order, aging head and ragged
tail handled as msprof's ``OffsetCalculator`` does.

A stream is the files of one kind in one ``data/`` dir (host: one ``aging``/``unaging`` group of
a tag; device: one tag).  Records straddle slice boundaries, so the slices are read into one
buffer (a single copy, no per-record Python) and viewed with the kind's dtype.
"""
from __future__ import annotations

import mmap
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from msprof_py.errors import CorruptRecordError, DataError, WarningLog
from msprof_py.parse import plausible
from msprof_py.raw import files as raw_files
from msprof_py.raw.common import KNOWN_LEVELS, MAGIC, check_host_records


@dataclass
class Stream:
    """The slices of one raw stream, sorted by slice number."""

    tag: str  # e.g. "compact.task_track" or "stars_soc.data"
    aging: bool | None  # None for device streams
    paths: list[Path] = field(default_factory=list)

    @property
    def sizes(self) -> list[int]:
        return [file_size(p) for p in self.paths]


# ---------------------------------------------------------------------- the one way to open raw files
def file_size(path: Path) -> int:
    """Size of a raw or metadata file.  Anything but a readable regular file (a directory, a
    dangling symlink, a symlink loop, a FIFO that would block, no permission) is a one-line
    DataError naming the path; the file is never opened for writing."""
    try:
        st = os.stat(path)
    except OSError as err:
        raise DataError(f"{path}: cannot read ({err.strerror or err})") from None
    if not stat.S_ISREG(st.st_mode):
        raise DataError(f"{path}: not a regular file ({_kind(st.st_mode)})")
    return st.st_size


def read_bytes(path: Path) -> bytes:
    """The whole file (small files: metadata, dictionaries), errors as :func:`file_size`."""
    file_size(path)
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as err:
        raise DataError(f"{path}: cannot read ({err.strerror or err})") from None


def map_bytes(path: Path, size: int) -> np.ndarray:
    """Read-only uint8 memory map of the first ``size`` bytes (``file_size`` checked it is a
    regular file); a file shrunk since is a DataError, not a SIGBUS later."""
    if size == 0:
        return np.zeros(0, np.uint8)
    try:
        if os.stat(path).st_size < size:
            raise DataError(f"{path}: file shrank while being read")
        return np.memmap(path, dtype=np.uint8, mode="r", shape=(size,))
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: cannot read ({getattr(err, 'strerror', None) or err})") from None


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def _sort_paths(entries: list[tuple[int, Path]]) -> list[Path]:
    return [p for _, p in sorted(entries)]


def discover_host(data_dir: Path) -> dict[tuple[str, bool], Stream]:
    """``{(tag, aging): Stream}`` for the host data dir (unknown names are ignored)."""
    groups: dict[tuple[str, bool], list[tuple[int, Path]]] = {}
    for name in list_data(data_dir):
        m = raw_files.HOST_DATA_RE.match(name)
        if m:
            key = (m["tag"], m["age"] == "aging")
            groups.setdefault(key, []).append((int(m["n"]), data_dir / name))
    return {k: Stream(k[0], k[1], _sort_paths(v)) for k, v in sorted(groups.items())}


def discover_device(data_dir: Path) -> dict[tuple[str, int], Stream]:
    """``{(tag, device_id): Stream}`` for a device data dir."""
    groups: dict[tuple[str, int], list[tuple[int, Path]]] = {}
    for name in list_data(data_dir):
        m = raw_files.DEVICE_DATA_RE.match(name)
        if m:
            key = (m["tag"], int(m["dev"]))
            groups.setdefault(key, []).append((int(m["n"]), data_dir / name))
    return {k: Stream(k[0], None, _sort_paths(v)) for k, v in sorted(groups.items())}


def list_data(data_dir: Path) -> list[str]:
    try:
        return sorted(n for n in os.listdir(data_dir) if not n.endswith(raw_files.SKIP_SUFFIXES))
    except OSError:
        return []


def locate(stream: Stream, offset: int, sizes: list[int] | None = None) -> tuple[Path, int]:
    """Map a byte offset in the concatenated stream to ``(slice file, offset in that file)``."""
    sizes = stream.sizes if sizes is None else sizes
    pos = 0
    for path, size in zip(stream.paths, sizes):
        if offset < pos + size:
            return path, offset - pos
        pos += size
    return stream.paths[-1], offset - (pos - sizes[-1])


@dataclass
class Decoded:
    """Records of one stream as a list of chunks: read-only memory maps of the whole records
    inside each slice, plus small buffers for the records that straddle two slices.  Nothing
    is copied until a field is asked for (``field``), and then only that field."""

    chunks: list[np.ndarray]
    stream: Stream
    head: int  # bytes skipped at the start (torn aging head)
    dtype: np.dtype

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def __len__(self) -> int:
        return sum(len(c) for c in self.chunks)

    def field(self, name: str, view: np.dtype | None = None) -> np.ndarray:
        """One field over all records (a fresh contiguous array); ``view``: reinterpret each
        record with another dtype of the same size first (ts_track / FFTS layouts)."""
        arrays = [(c.view(view) if view is not None else c)[name] for c in self.chunks]
        if not arrays:
            return np.zeros(0, dtype=(view if view is not None else self.dtype)[name])
        return np.concatenate(arrays) if len(arrays) > 1 else np.array(arrays[0])

    def release(self) -> None:
        """Drop the mapped records' pages from this process's resident memory (``MADV_DONTNEED``
        on the read-only file maps: the pages stay in the page cache and a later read faults
        them in again, so nothing read changes).  For a decoder that has taken its fields and
        goes on with its own columns: on the 1M-task collection A a device's 62 MB of STARS logs
        were resident through the whole start/end pairing.  A no-op where there is no madvise."""
        advice = getattr(mmap, "MADV_DONTNEED", None)
        if advice is None:
            return
        done: set[int] = set()
        for c in self.chunks:
            m, b = None, c
            while m is None and b is not None:  # a chunk is an array over the slice's np.memmap
                m, b = getattr(b, "_mmap", None), getattr(b, "base", None)
            if m is None or id(m) in done:
                continue
            done.add(id(m))
            try:
                m.madvise(advice)
            except (OSError, ValueError):  # closed, or not advisable here: only memory is at stake
                pass

    def byte_rows(self):
        """Yield ``(first record index, (n, itemsize) uint8 view)`` per chunk (no copy)."""
        index = 0
        for c in self.chunks:
            yield index, c.view(np.uint8).reshape(len(c), self.itemsize)
            index += len(c)

    def take(self, indices: np.ndarray) -> np.ndarray:
        """Whole records at ``indices`` (a few: copies them)."""
        out = np.zeros(len(indices), self.dtype)
        starts = np.cumsum([0] + [len(c) for c in self.chunks])
        for k, i in enumerate(np.asarray(indices)):
            j = int(np.searchsorted(starts, i, side="right")) - 1
            out.view(np.uint8).reshape(len(indices), self.itemsize)[k] = \
                self.chunks[j][i - starts[j]: i - starts[j] + 1].view(np.uint8)
        return out

    @property
    def records(self) -> np.ndarray:
        """All records in one array (copies the bytes: only for small streams and tests)."""
        if not self.chunks:
            return np.zeros(0, self.dtype)
        raw = np.concatenate([np.frombuffer(c.tobytes(), np.uint8) for c in self.chunks])
        return raw.view(self.dtype)

    def where(self, index: int) -> tuple[Path, int]:
        return locate(self.stream, self.head + index * self.itemsize)


def read_records(stream: Stream, dtype: np.dtype, warnings: WarningLog, host: bool = True) -> Decoded:
    """Decode a stream with ``dtype`` (slices memory-mapped read-only, never written).

    - aging stream: the first ``total % itemsize`` bytes are a torn record (the ring buffer was
      overwritten) and are dropped with a warning, as msprof does;
    - otherwise a ragged tail (a truncated last record) is dropped with a warning naming the file
      and byte offset;
    - host records are validated (magic 0x5A5A, known level): a bad record raises
      :class:`CorruptRecordError` naming the slice file and byte offset.
    """
    sizes = stream.sizes
    total = sum(sizes)
    size = dtype.itemsize
    rest = total % size
    head = 0
    if rest and stream.aging:
        head = rest
        path, _ = locate(stream, 0, sizes)
        warnings.warn(f"{path}: dropped a torn record of {rest} bytes at the start of the aging "
                      f"stream {stream.tag} (ring buffer wrapped)")
    elif rest:
        path, off = locate(stream, total - rest, sizes)
        warnings.warn(f"{path}: byte {off}: truncated record ({rest} of {size} bytes) dropped "
                      f"at the end of stream {stream.tag}")
    end = total - (0 if head else rest)  # stream bytes [head, end) hold whole records
    chunks: list[np.ndarray] = []
    carry = b""  # bytes of a record that started in an earlier slice
    pos = 0  # stream offset of the current slice's first byte
    maps = [map_bytes(path, fsize) for path, fsize in zip(stream.paths, sizes)]
    plausible.check_slices(stream, sizes, size, maps, warnings)
    for m, fsize in zip(maps, sizes):
        lo, hi = max(head, pos), min(end, pos + fsize)
        if hi > lo:
            a = lo - pos
            if carry:
                need = size - len(carry)
                take = min(need, hi - lo)
                carry += m[a:a + take].tobytes()
                a += take
                if len(carry) == size:
                    chunks.append(np.frombuffer(carry, dtype=dtype))
                    carry = b""
            n_whole = (hi - pos - a) // size
            if n_whole:
                chunks.append(np.ndarray((n_whole,), dtype=dtype, buffer=m, offset=a))
            b = a + n_whole * size
            if hi - pos > b:
                carry += m[b:hi - pos].tobytes()
        pos += fsize
    decoded = Decoded(chunks, stream, head, dtype)
    if host:
        check_stream(decoded)
    return decoded


_KNOWN_LEVEL = np.zeros(65536, bool)
_KNOWN_LEVEL[KNOWN_LEVELS] = True


def check_stream(decoded: Decoded) -> None:
    """Validate magic/level chunk by chunk (a lookup table, no per-record work); on the first
    bad record let raw.common.check_host_records word the error, with the exact slice file
    and offset."""
    index = 0
    for chunk in decoded.chunks:
        if not len(chunk):
            continue
        # magic | level << 16 as one strided u32 read per record
        head = np.ndarray((len(chunk),), dtype="<u4", buffer=chunk.view(np.uint8), strides=(decoded.itemsize,))
        if ((head & 0xFFFF) != MAGIC).any() or not _KNOWN_LEVEL[head >> 16].all():
            try:
                check_host_records(chunk, "<stream>", 0)
            except CorruptRecordError as err:
                path, off = decoded.where(index + err.offset // decoded.itemsize)
                raise CorruptRecordError(path, off, err.reason) from None
        index += len(chunk)

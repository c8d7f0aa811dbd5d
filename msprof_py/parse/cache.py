"""Parsed tables cached beside the raw data: ``PROF_X/mindstudio_profiler_log/msprof_py_cache/session.pkl``.

Where msprof does not look: its Python analysis takes every sub-dir of a PROF dir not in its
``Constant.FILTER_DIRS`` for a result dir (an unknown one stops it: "does not have PROF dir"),
its C++ analysis reads only ``host`` and ``device_*``; ``mindstudio_profiler_log`` (msprof's own
log folder) is in that filter list and neither analysis reads or clears it.  A cache left
directly in the PROF dir by an older msprof_py (``PROF_X/msprof_py_cache``) is removed when the
new one is written, so msprof accepts the dir again.

One file per part (:func:`part_file`): the host tables with the index of the devices, then one
per device.  Pickle protocol 5 of the DataFrames (no extra dependency) with the arrays' bytes out of
band (:func:`_dump`): a header, the pickle stream, then each array's bytes page aligned.  A part
is read back by mapping its file (copy-on-write, ``mmap.ACCESS_COPY``) and unpickling the stream over
the mapped bytes (:func:`_load`): the numeric columns are the page cache's pages, not a copy of them
in fresh memory.  Measured on a device of the 1,000,968-task collection with PMU data (210 MB part,
issue 12 phase 11, benchmarks/RESULTS.md): 0.07-0.12 s of reading (mostly system time) against 4 ms,
then ~11 ms of page faults over its numeric columns when they are first read.  Each array has a map of
its own, which lives as long as the array (a map of the whole file lived as long as any of its arrays); a column written in place is copied page by page
into the process (private pages, the file is never written).  Where a file cannot be mapped it is
read into memory and unpickled the same way.
Keyed by a fingerprint of every raw/metadata file's relative path, size and mtime plus the
parser version: any change to the raw tree invalidates it.  Written to a temporary name and
renamed; a PROF dir we cannot write to just means no cache (a warning, never an error).
"""
from __future__ import annotations

import hashlib
import io
import mmap
import os
import pickle
import shutil
import struct
from pathlib import Path
from typing import Any

from msprof_py.atomic import atomic_open
from msprof_py.direct_io import _Sink
from msprof_py.errors import WarningLog
from msprof_py.memory import trim
from msprof_py.raw.files import FILTER_DIRS

PARSER_VERSION = "parse-8+pmu+counters"  # 8: arrays out of band (_dump); 3: C++-path task times, devices.host_uid; 4: api dur_ticks, before_profiling; 5: per-device parts; 6: tasks.cut_start_ns; 7: C++ connection ids from 1, tasks.thread_id / launch_ns
CACHE_DIR = "msprof_py_cache"
CACHE_PARENT = "mindstudio_profiler_log"  # in msprof's FILTER_DIRS
CACHE_FILE = "session.pkl"


def cache_dir(prof: Path) -> Path:
    """The cache folder of one PROF dir."""
    return prof / CACHE_PARENT / CACHE_DIR


def legacy_cache_dir(prof: Path) -> Path:
    """Where msprof_py up to this version cached (inside the PROF dir: it stops msprof)."""
    return prof / CACHE_DIR


def fingerprint(prof: Path) -> str:
    """Digest of (relative path, size, mtime_ns) of every file under host/ and device_*/."""
    h = hashlib.sha256(PARSER_VERSION.encode())
    tops = sorted(d for d in prof.iterdir() if d.is_dir() and (d.name == "host" or d.name.startswith("device_")))
    for root, dirs, files in (w for top in tops for w in os.walk(top)):
        dirs[:] = sorted(d for d in dirs if d not in FILTER_DIRS)
        for name in sorted(files):
            p = Path(root) / name
            try:
                st = p.stat()
            except OSError:
                continue
            h.update(f"{p.relative_to(prof)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def part_file(name: str) -> str:
    """File of one cached part: ``session.pkl`` holds the host tables and the index of the
    device parts, ``device_{id}.pkl`` each device's tables (so an export can read one device)."""
    return CACHE_FILE if name == "host" else f"{name}.pkl"


MAGIC = b"MSPYOOB1"  # a cache file's first bytes (_dump's layout)
ALIGN = 4096  # each array's bytes start at a multiple of this offset in the file (a page: _map_buffer
# maps each array alone, from the page that holds its first byte; any alignment reads back)
_HEAD = struct.Struct("<8sQQ")  # magic, bytes of the pickle stream, number of arrays
_ENTRY = struct.Struct("<QQ")  # per array: offset in the file, bytes


def _dump(f: Any, obj: Any, direct: bool = False) -> None:
    """``obj`` pickled (protocol 5) with every contiguous array's bytes out of band: header, table
    of (offset, size) per buffer, the stream, then the buffers, each at a multiple of ``ALIGN``.
    ``direct``: written with ``O_DIRECT`` where it can be (:class:`msprof_py.direct_io._Sink`), for
    a file this process will not read back (no page-cache page per 4 KiB of it)."""
    if direct:
        sink = _Sink(f)
        try:
            _dump(sink, obj)
            sink.finish()
        except BaseException:
            sink.release()  # (the file is removed by the caller's atomic_open)
            raise
        return
    bufs: list[pickle.PickleBuffer] = []
    out = io.BytesIO()  # (the stream without the arrays' bytes: small)
    pickle.dump(obj, out, protocol=5, buffer_callback=bufs.append)
    stream = out.getbuffer()
    raws = [b.raw() for b in bufs]
    pos = _HEAD.size + _ENTRY.size * len(raws) + len(stream)
    table = []
    for r in raws:
        pos = -(-pos // ALIGN) * ALIGN
        table.append((pos, r.nbytes))
        pos += r.nbytes
    f.write(_HEAD.pack(MAGIC, len(stream), len(raws)) + b"".join(_ENTRY.pack(o, n) for o, n in table))
    f.write(stream)
    at = _HEAD.size + _ENTRY.size * len(raws) + len(stream)
    for (o, n), r in zip(table, raws):
        if o > at:
            f.write(bytes(o - at))
        f.write(r)
        at = o + n


def _load(f: Any) -> Any:
    """What :func:`_dump` wrote to the open file ``f``, each array over a copy-on-write map of its
    own bytes (:func:`_map_buffer`; all of them read into memory where the file cannot be mapped).
    ValueError when the file is not one of these or is cut short."""
    size = os.fstat(f.fileno()).st_size
    head = f.read(_HEAD.size)
    if len(head) < _HEAD.size:
        raise ValueError("not a cache file")
    magic, stream_len, count = _HEAD.unpack(head)
    first = _HEAD.size + _ENTRY.size * count
    if magic != MAGIC or first + stream_len > size:
        raise ValueError("not a cache file")
    table = [_ENTRY.unpack(f.read(_ENTRY.size)) for _ in range(count)]
    if any(o < first + stream_len or o + n > size for o, n in table):
        raise ValueError("cut short")
    stream = f.read(stream_len)
    if len(stream) < stream_len:
        raise ValueError("cut short")
    try:
        buffers = [_map_buffer(f.fileno(), o, n) for o, n in table]
    except (OSError, ValueError):  # (a file system without mmap)
        f.seek(0)
        view = memoryview(bytearray(f.read()))
        if len(view) < size:
            raise ValueError("cut short") from None
        buffers = [view[o:o + n] for o, n in table]
    return pickle.loads(stream, buffers=buffers)


def _map_buffer(fd: int, offset: int, size: int) -> memoryview:
    """Bytes ``offset .. offset + size`` of file ``fd`` as a copy-on-write map of their own.  One map
    per array, not one of the whole file: a map lives as long as any array over it, and a file
    mapped whole stayed resident (every page a writer had read) while the DB thread still held one
    column of the device, ~170 MB more on B' with the DB on a thread (issue 12 phase 11)."""
    if not size:
        return memoryview(b"")
    start = offset - offset % mmap.ALLOCATIONGRANULARITY
    m = mmap.mmap(fd, offset + size - start, access=mmap.ACCESS_COPY, offset=start)
    return memoryview(m)[offset - start:]


def load(prof: Path, key: str, part: str = "host") -> dict[str, Any] | None:
    path = cache_dir(prof) / part_file(part)
    try:
        with open(path, "rb") as f:
            blob = _load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError, TypeError,
            struct.error, OverflowError, MemoryError):
        return None
    if not isinstance(blob, dict) or blob.get("key") != key:
        return None
    return blob.get("data")


def store(prof: Path, key: str, data: dict[str, Any], warnings: WarningLog, part: str = "host",
          direct: bool = False) -> bool:
    """Write one part (False, and a warning, when it cannot be written).  ``direct``: the export
    keeps the part's tables in memory, so the file is written past the page cache (:func:`_dump`)."""
    folder = cache_dir(prof)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_open(folder / part_file(part)) as f:
            _dump(f, {"key": key, "data": data}, direct)
    except OSError as err:
        warnings.warn(f"{prof}: cannot write the parse cache ({err.strerror or err}); parsing again next time")
        return False
    finally:
        trim()  # pickling leaves freed heap behind (small objects below the mmap threshold)
    if part != "host":
        return True
    legacy = legacy_cache_dir(prof)
    if (legacy / CACHE_FILE).is_file():
        shutil.rmtree(legacy, ignore_errors=True)
    return True

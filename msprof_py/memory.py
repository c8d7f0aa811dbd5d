"""Process memory: give freed table memory back to the system.

Why: glibc serves an allocation above its *mmap threshold* with its own mapping, returned to the
system on free; below it, from the heap, which it keeps.  The threshold starts at 128 KiB but
glibc raises it (up to 32 MiB) each time a mapped block is freed, so after the parser frees its
first big temporaries nearly every numpy column of a table (a few MB each) lands on the heap,
and the process keeps its highest heap: measured on the 1,000,968-task collection, 479 MB
resident after the parse where 217 MB are in use, and every exporter then grows from there.

:func:`release_freed_memory` pins the threshold at 4 MiB (mallopt M_MMAP_THRESHOLD, which also
stops the raising): columns of >= 0.5 M int64 values get their own mapping, small objects stay on
the heap.  A lower threshold costs more in page faults than it saves (at 2 MiB the 1M export
spent 12.9 s in the kernel instead of 5.6 s).  :func:`trim` between two exporters hands back
what the heap holds free (``malloc_trim``).  Both are no-ops off glibc.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

M_MMAP_THRESHOLD = -3  # glibc malloc.h
MMAP_THRESHOLD_BYTES = 4 * 1024 * 1024
_pinned = False
_libc: ctypes.CDLL | None = None


def _glibc() -> ctypes.CDLL | None:
    global _libc
    if _libc is None:
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            lib.mallopt, lib.malloc_trim  # noqa: B018  (AttributeError off glibc)
        except (OSError, AttributeError):
            return None
        _libc = lib
    return _libc


def release_freed_memory() -> bool:
    """Pin glibc's mmap threshold (see the module doc) once per process; True when it applies.
    ``MALLOC_MMAP_THRESHOLD_`` in the environment wins (the user chose)."""
    global _pinned
    if _pinned or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return _pinned
    libc = _glibc()
    _pinned = bool(libc is not None and libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
    return _pinned


def trim() -> None:
    """Give the heap's free pages back to the system (after an exporter freed its tables)."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def available_bytes() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None where there is none)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None

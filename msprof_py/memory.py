"""Process memory: give freed table memory back to the system, and say what a load will need.

Why :func:`release_freed_memory`: glibc serves an allocation above its *mmap threshold* with its
own mapping, returned to the system on free; below it, from the heap, which it keeps.  The
threshold starts at 128 KiB but glibc raises it (up to 32 MiB) each time a mapped block is freed,
so after the parser frees its first big temporaries nearly every numpy column of a table (a few
MB each) lands on the heap, and the process keeps its highest heap forever: measured on the
1,000,968-task collection, 479 MB resident after the parse where 217 MB is in use, and every
exporter then grows from there.  Pinning the threshold at 4 MiB (mallopt M_MMAP_THRESHOLD, which
also stops the raising) sends every column of >= 0.5 M int64 values through its own mapping;
small objects stay on the heap.  A no-op off glibc.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

M_MMAP_THRESHOLD = -3  # glibc malloc.h
MMAP_THRESHOLD_BYTES = 4 * 1024 * 1024
_done = False


def release_freed_memory() -> bool:
    """Pin glibc's mmap threshold (see the module doc) once per process; True when it applied.
    ``MALLOC_MMAP_THRESHOLD_`` in the environment wins (the user chose)."""
    global _done
    if _done or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return _done
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        _done = bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to pin
        _done = False
    return _done


def available_bytes() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None where there is none)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None

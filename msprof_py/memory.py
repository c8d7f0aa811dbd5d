"""Process memory: give freed table memory back to the system.

Why: glibc serves an allocation above its *mmap threshold* with its own mapping, returned to the
system on free; below it, from the heap, which it keeps.  The threshold starts at 128 KiB but
glibc raises it (up to 32 MiB) each time a mapped block is freed, so after the parser frees its
first big temporaries nearly every numpy column of a table (a few MB each) lands on the heap,
and the process keeps its highest heap: measured on the 1,000,968-task collection, 479 MB
resident after the parse where 217 MB are in use, and every exporter then grows from there.

:func:`release_freed_memory` pins the threshold at 32 MiB (mallopt M_MMAP_THRESHOLD, which also
stops the raising) and glibc's automatic trim at 64 MiB of free heap top (M_TRIM_THRESHOLD, 128 KiB
by default): the columns of one device's tables (a few MB each for a million tasks) and the
exporters' temporaries come from the heap and are reused there, instead of being mapped, zeroed
and faulted in again for every temporary; only columns of >= 4 M int64 values get their own mapping.
:func:`trim` between two exporters and two devices hands back what the heap holds free
(``malloc_trim``), so the peak stays one exporter's working set; not between the exporters of a
one-device dir (issue 12 phase 13, ``jobs.run_job``): there the next exporter takes again what the
last one freed, where a trimmed page came back as a fresh page fault (on a VM with free page
reporting, a host fault too), and the peak is the parse's.  Why these values: the page faults
were the kernel time of the export.  On the 1,000,968-task collection (2 devices, `msprof-py export`,
2026-11-24, 2-core VM shared with a fuzz campaign): 4 MiB / default trim: 1.9 M page faults, 5.5 s
system time, 381-388 MB peak; 32 MiB / default trim: 1.2 M, 3.8-4.5 s, 384-394 MB; 32 MiB / 128 MiB
trim: 0.8 M, 3.4 s, 434 MB; 256 MiB and no trim at all: 2.3 s but 489 MB (benchmarks/RESULTS.md).
A threshold below 4 MiB costs more still (at 2 MiB: 12.9 s in the kernel).  Both are no-ops off
glibc; ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_`` in the environment win.

:func:`release_freed_memory` also stops numpy asking for transparent huge pages for its arrays of
4 MB and more (``madvise(MADV_HUGEPAGE)``, numpy's default on Linux; :func:`no_huge_pages`).  Why: a
huge page needs a free, aligned 2 MiB block, which on a VM with free page reporting is exactly what
the guest has handed back to its host (and, with the kernel's THP defrag at ``madvise``, what it
compacts memory for), so each one costs 512 host faults and often a compaction: touching 2 GiB of
fresh memory took 3.5-4.7 s of system time in huge pages against 0.7-2.5 s in 4 KiB pages here, and
the single-op million's first export after minutes of idleness 10.3-12.4 s (4.6-5.5 s of system time)
against 8.7-9.1 s (2.6 s) without them; warm, with four times the page faults, B' ~0.2 s slower and
the million the same (benchmarks/RESULTS.md, issue 12 phase 14).  ``NUMPY_MADVISE_HUGEPAGE`` in the environment wins.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import importlib
import os
from pathlib import Path

M_TRIM_THRESHOLD = -1  # glibc malloc.h
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
TRIM_THRESHOLD_BYTES = 64 * 1024 * 1024
TRIM_AT_ONCE_BYTES = 128 * 1024  # glibc's default M_TRIM_THRESHOLD
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
    """Pin glibc's mmap and trim thresholds and stop numpy's huge pages (see the module doc) once
    per process; True when the mmap threshold applies.  ``MALLOC_MMAP_THRESHOLD_`` /
    ``MALLOC_TRIM_THRESHOLD_`` / ``NUMPY_MADVISE_HUGEPAGE`` in the environment win (the user chose)."""
    global _pinned
    no_huge_pages()
    if _pinned or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return _pinned
    libc = _glibc()
    _pinned = bool(libc is not None and libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
    if _pinned and "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    if _pinned and "MALLOC_ARENA_MAX" not in os.environ:
        libc.mallopt(M_ARENA_MAX, 1)  # threads (the DB's, numpy's) share the one heap that is trimmed
    return _pinned


def no_huge_pages() -> bool:
    """numpy's arrays in 4 KiB pages from now on (no ``madvise(MADV_HUGEPAGE)``; see the module
    doc), unless ``NUMPY_MADVISE_HUGEPAGE`` is set; True when numpy's switch was found and is off.
    (numpy has no public call for it, only the environment variable read at its import; its
    ``_set_madvise_hugepage`` has been there since numpy 1.20, under ``numpy._core`` since 2.0.)"""
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return False
    for name in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            module = importlib.import_module(name)
            module._set_madvise_hugepage(False)
        except (ImportError, AttributeError, TypeError):
            continue
        return True
    return False


def trim() -> None:
    """Give the heap's free pages back to the system (after an exporter freed its tables)."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def trim_at_once() -> None:
    """From now on hand freed heap back as soon as ``TRIM_AT_ONCE_BYTES`` of it is free at the top
    (M_TRIM_THRESHOLD at glibc's default, not the pinned 64 MiB): for a forked DB process
    (:mod:`msprof_py.export.db_process`), whose freed temporaries no other work in the process
    reuses, and whose memory counts beside the export's.  Measured (benchmarks/RESULTS.md, issue
    12 phase 8): the process of the last device of the 1M-task collection A 91 -> 56 MB of its own
    pages at its end, the tree's PSS 375 -> 332 MB; no CPU measurable.  No-op off glibc."""
    libc = _glibc()
    if libc is not None and "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        libc.mallopt(M_TRIM_THRESHOLD, TRIM_AT_ONCE_BYTES)


def available_bytes() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None where there is none)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None

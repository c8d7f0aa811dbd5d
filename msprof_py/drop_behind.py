"""Drop-behind for large buffered outputs: the pages of a file being written are handed to the disk
as they fill (``sync_file_range(SYNC_FILE_RANGE_WRITE)``, which only starts the writeback) and,
once :data:`WINDOW_BYTES` further on, dropped from the page cache (``posix_fadvise(DONTNEED)``,
which drops only pages already written back and never waits).

Why: a buffered write copies every byte into a page-cache page the kernel must first allocate; a
multi-GB export (the single-op million writes 4.2 GB of text) would fill GBs of fresh page cache.
On a VM that hands freed memory back to its host (free page reporting: most cloud VMs) each fresh
page is also a host fault, and on any machine it pushes other files out of the cache.  With the
pages dropped behind the writer, the next writes reuse the memory just freed: here a 2 GB write
took 0.55 s of system time with drop-behind against 1.0 s (warm) and 4.5 s (after minutes of
idleness) without (benchmarks/RESULTS.md, issue 12 phase 13).  The output's bytes are the same;
only its pages are no longer cached after the export (a viewer opening it reads it from disk).

When it stays off: ``MSPROF_PY_DROP_BEHIND=0``, a platform without ``sync_file_range`` (not
Linux), and, for the rest of the process, once starting the writeback has been slow in the median
(:class:`_Pace`: a slow disk, whose queue is full; plain buffered writes then let the export end
while the kernel writes back).  The source of a copy (:meth:`DropBehind.copied`) has its copied
range dropped the same way (its bytes are on disk or on their way).

A leaf module: only the standard library.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
import time
from collections import deque

_clock = time.perf_counter  # (a name of this module's own: tests replace it)

ENV = "MSPROF_PY_DROP_BEHIND"  # "0": no drop-behind
STEP_BYTES = 32 << 20  # the writeback of a file's new bytes is started every STEP_BYTES
WINDOW_BYTES = 64 << 20  # bytes behind the last started writeback that stay cached (still being written back)
MIN_BYTES_PER_S = 200e6  # starting the writeback slower than this in the median: off for the process
_SYNC_FILE_RANGE_WRITE = 2


def _load_sync_file_range() -> object | None:
    """libc's ``sync_file_range`` (Linux), or None."""
    if not hasattr(os, "posix_fadvise"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_sync_file_range = _load_sync_file_range()


class _Pace:
    """The process's last writeback starts (each :data:`STEP_BYTES`): when the median of the last
    :data:`SAMPLES` went slower than :data:`MIN_BYTES_PER_S`, drop-behind is off from then on.
    The median: one start that waited for a busy core is slow once; a slow disk's are all slow."""

    SAMPLES = 15
    lock = threading.Lock()
    rates: deque[float] = deque(maxlen=SAMPLES)
    slow = False

    @classmethod
    def add(cls, n: int, dt: float) -> None:
        with cls.lock:
            cls.rates.append(n / max(dt, 1e-9))
            if len(cls.rates) == cls.SAMPLES and sorted(cls.rates)[cls.SAMPLES // 2] < MIN_BYTES_PER_S:
                cls.slow = True


def _after_fork_in_child() -> None:
    _Pace.lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def enabled() -> bool:
    """Whether new files get drop-behind (see the module's doc)."""
    return _sync_file_range is not None and os.environ.get(ENV, "1") != "0" and not _Pace.slow


class DropBehind:
    """Drop-behind of the file open as ``fd``, written from byte ``start`` on by one thread: call
    :meth:`wrote` after each write with the file's new size (or the bytes added), :meth:`copied`
    after copying a range of another file into it.  Errors of the two calls are ignored: they only
    advise the kernel, the bytes are written either way."""

    def __init__(self, fd: int, start: int = 0) -> None:
        self._fd = fd
        self._end = start  # bytes of the file written so far
        self._started = start  # the writeback is started below this offset
        self._dropped = start - start % 4096  # pages below this offset were dropped (the first one may be shared)

    def wrote(self, n: int) -> None:
        """``n`` more bytes were written at the end of the file."""
        self._end += n
        if self._end - self._started >= STEP_BYTES:
            self._step()

    def _step(self) -> None:
        if _Pace.slow:
            return
        n = self._end - self._started
        t0 = _clock()
        if _sync_file_range(self._fd, self._started, n, _SYNC_FILE_RANGE_WRITE) != 0:  # type: ignore[operator]
            return  # not supported here (a pipe, say): leave the file as it is
        _Pace.add(n, _clock() - t0)
        self._started = self._end
        upto = self._started - WINDOW_BYTES
        upto -= upto % 4096
        if upto - self._dropped >= STEP_BYTES:
            _advise_dontneed(self._fd, self._dropped, upto - self._dropped)
            self._dropped = upto

    def moved_to(self, end: int) -> None:
        """The file now ends at byte ``end`` (written by others through the same descriptor)."""
        if end > self._end:
            self.wrote(end - self._end)

    def copied(self, src_fd: int, offset: int, length: int) -> None:
        """``length`` bytes at ``offset`` of the file open as ``src_fd`` were appended to this one:
        the source's pages of that range are dropped (written back or not needed again), then
        this file's new bytes are handled as :meth:`wrote`'s."""
        if not _Pace.slow:
            _advise_dontneed(src_fd, offset, length)
        self.wrote(length)


def _advise_dontneed(fd: int, offset: int, length: int) -> None:
    try:
        os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)
    except OSError:
        pass

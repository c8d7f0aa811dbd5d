"""The direct-I/O half of the streamed outputs' writers (:mod:`msprof_py.chunk_writer`): where the
bytes go (:class:`_Sink`), other files' ranges read back (:class:`_Reader`, :func:`_copy_into`), the
pooled staging buffers (:data:`_POOL`), the direct writes' speed record (:class:`_Stats`) and whole
aligned blocks written in place (:func:`pwrite_blocks`: the unified DB's bulk pages).

Where the bytes go (:class:`_Sink`): into a staging buffer of :data:`STAGE_BYTES`, and from it
into the file in whole aligned blocks with ``O_DIRECT`` (the file's last partial block with a plain
write).  Why: a buffered write copies every byte into a page-cache page the kernel must first
allocate, and on a VM that hands freed memory back to its host (free page reporting) each such
fresh page is also a host fault: up to ~2.5 s of system time per GiB written here, most of the
kernel time of a multi-GB export; a direct write hands the staging buffer (the same few MB,
reused, see :data:`_POOL`) to the device and touches no new page.  A layer copied from an
earlier output (:meth:`_Sink.copy`) is read back with ``O_DIRECT`` too, into a reused buffer, so
neither file's bytes go through the page cache.  A file (or a copied range) smaller than one
staging buffer is written (read) the plain way: one buffered write costs less than a direct one
that waits for the disk, and its few pages do not matter.  ``O_DIRECT`` is on unless switched
off (``MSPROF_PY_DIRECT_IO=0``, :func:`direct_io_on`), and left off (plain buffered writes) where the
file system refuses it, for a file object that is not a plain ``FileIO`` and, for the rest of the
process, once direct writes have gone slower than :data:`DIRECT_MIN_BYTES_PER_S` in the median (a
slow disk: buffered writes let the export end while the kernel writes back).

A leaf module: only the standard library.
"""
from __future__ import annotations

import ctypes
import errno
import io
import mmap
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import IO, Any

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None  # type: ignore[assignment]

STAGE_BYTES = 1 << 20  # staging buffer of a file: what one direct write takes at most (as quick as 4 MiB here, 2.6 GB/s; a quarter of the memory per open writer)
ALIGN = 4096  # file offsets, lengths and buffer addresses of direct writes / reads are multiples
DIRECT_ENV = "MSPROF_PY_DIRECT_IO"  # "0": buffered writes only (direct ones are the default, see direct_io_on)
DIRECT_MIN_BYTES_PER_S = 200e6  # the median direct write slower than this: buffered writes from then on
DIRECT_SAMPLE_BYTES = 256 << 10  # direct writes this big are timed (see _Stats; the DB's pages go ~0.6 MB at a time)
_O_DIRECT = getattr(os, "O_DIRECT", 0)


class _Stats:
    """The process's last direct writes of at least :data:`DIRECT_SAMPLE_BYTES`, to stop using
    them on a slow disk: when the median rate of the last :data:`DIRECT_SAMPLES` is below
    :data:`DIRECT_MIN_BYTES_PER_S`.  The median, not the sum: a write whose thread waited for a
    core (a busy machine, a profiler pausing the process) is slow once; a slow disk's are all slow."""

    lock = threading.Lock()
    rates: deque[float] = deque(maxlen=31)
    slow = False

    @classmethod
    def add(cls, n: int, dt: float) -> None:
        if n < DIRECT_SAMPLE_BYTES:
            return
        with cls.lock:
            cls.rates.append(n / max(dt, 1e-9))
            if len(cls.rates) == cls.rates.maxlen and sorted(cls.rates)[len(cls.rates) // 2] < DIRECT_MIN_BYTES_PER_S:
                cls.slow = True


def direct_io_on() -> bool:
    """Direct writes unless switched off (``MSPROF_PY_DIRECT_IO=0``) or found slow (:class:`_Stats`).
    Why on by default: every byte of a buffered write lands in a page-cache page the kernel must
    find first, and on a VM whose balloon hands freed memory back to its host (free page
    reporting, common on cloud VMs) such a fresh page costs a host fault: ~2.5 s of system time
    per GiB written into fresh pages here against ~0.2 s into recycled ones.  The single-op
    million (~4 GB of text) took 7.5-8.4 s with direct writes against 8.9-15.2 s buffered, B'
    4.5-4.7 s against 5.3-5.7 s (benchmarks/RESULTS.md, issue 12 phase 14).  (Phase 10 measured
    the opposite with the writes on the producer's thread and buffered runs that followed
    buffered runs, so reused the page cache their predecessor's deleted outputs had left.)"""
    return bool(_O_DIRECT) and fcntl is not None and os.environ.get(DIRECT_ENV, "1") != "0" and not _Stats.slow


class _Pool:
    """Page-aligned anonymous buffers of :data:`STAGE_BYTES`, kept for the process and reused by
    the next file (freed memory would go back to the system and fault in again)."""

    def __init__(self) -> None:
        self._free: list[mmap.mmap] = []
        self._lock = threading.Lock()

    def get(self) -> mmap.mmap:
        with self._lock:
            while self._free:
                buf = self._free.pop()
                if len(buf) == STAGE_BYTES:
                    return buf
        return mmap.mmap(-1, STAGE_BYTES, flags=mmap.MAP_PRIVATE)  # (the default, MAP_SHARED, would be shared with a fork)

    def put(self, buf: mmap.mmap) -> None:
        with self._lock:
            self._free.append(buf)


_POOL = _Pool()


def _after_fork_in_child() -> None:
    """A forked process starts with pools and locks of its own (a parent's thread may have held
    them, or a buffer, at the fork); it keeps what the parent measured of the disk (a copy of the
    rates: consistent, the fork runs under the GIL)."""
    global _POOL
    _POOL = _Pool()
    _Stats.lock = threading.Lock()
    _Stats.rates = deque(_Stats.rates, maxlen=_Stats.rates.maxlen)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
_memmove = ctypes.memmove  # releases the GIL (a foreign call), unlike a memoryview slice assignment


def _address(buf: Any) -> int | None:
    """The address of a writable buffer's first byte (None for a read-only one: bytes)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(buf))
    except (TypeError, ValueError, BufferError):
        return None


class _Sink:
    """Writes bytes, other files' byte ranges and callables' output to ``fp`` in order.

    For a plain ``FileIO`` (or a ``BufferedWriter`` over one) with direct I/O on: staged in a
    pooled buffer whose offset ``i`` holds the byte of file offset ``base + i`` (``base`` a
    multiple of :data:`ALIGN`), so every whole aligned block goes out with ``O_DIRECT`` from an
    aligned address; what precedes the first aligned offset and the last partial block are plain
    writes.  Otherwise ``fp.write`` as given."""

    def __init__(self, fp: IO[bytes]) -> None:
        self._fp = fp
        raw = fp.raw if isinstance(fp, io.BufferedWriter) else fp
        self._raw: io.FileIO | None = raw if isinstance(raw, io.FileIO) and direct_io_on() else None
        self._stage: mmap.mmap | None = None
        self._mv: memoryview | None = None
        self._addr: int | None = None
        self._lo = self._fill = 0  # staged bytes: stage[lo:fill]
        self._base = 0  # file offset of stage[0]
        self._direct = False  # O_DIRECT set on the descriptor now
        self._spilled = False  # the stage filled once: the file is big, its blocks go out direct
        self._can_direct = self._raw is not None
        self.aborted = False  # set by the writer's abort (from the producer's thread)
        if self._raw is not None:
            fp.flush()
            pos = self._raw.tell()
            self._base, self._lo = pos - pos % ALIGN, pos % ALIGN
            self._fill = self._lo

    # -- bytes
    def write(self, buf: Any) -> None:
        if self._raw is None:
            self._fp.write(buf)
            return
        src = memoryview(buf).cast("B")
        n = len(src)
        if not n:
            return
        if self._stage is None:
            self._stage = _POOL.get()
            self._mv = memoryview(self._stage)
            self._addr = _address(self._stage)
        addr = _address(buf) if n >= 65536 and self._addr is not None else None
        off = 0
        cap = len(self._stage)
        while off < n:
            k = min(cap - self._fill, n - off)
            if addr is not None:
                _memmove(self._addr + self._fill, addr + off, k)
            else:
                self._mv[self._fill:self._fill + k] = src[off:off + k]
            self._fill += k
            off += k
            if self._fill == cap:
                self._spilled = True
                self._drain()

    def _drain(self) -> None:
        """Write the staged whole blocks (with ``O_DIRECT`` when it is on), keep the rest."""
        mv, lo, fill = self._mv, self._lo, self._fill
        end = fill - fill % ALIGN
        if lo % ALIGN:  # up to the first aligned offset: a plain write
            first = min(lo - lo % ALIGN + ALIGN, fill)
            self._write(mv[lo:first], False)
            lo = first
        if end > lo:
            self._write(mv[lo:end], self._can_direct and direct_io_on())
            lo = end
        rest = fill - lo  # < ALIGN unless nothing was written (lo == fill then)
        if rest and lo:
            mv[lo % ALIGN:lo % ALIGN + rest] = mv[lo:fill]
        self._base += lo - lo % ALIGN
        self._lo, self._fill = lo % ALIGN, lo % ALIGN + rest

    def _write(self, view: memoryview, direct: bool) -> None:
        raw = self._raw
        assert raw is not None
        if direct != self._direct:
            direct = self._set_direct(direct)
        t0 = time.perf_counter() if direct else 0.0
        done = 0
        while done < len(view):
            try:
                k = raw.write(view[done:])
            except OSError as err:
                if direct and err.errno == errno.EINVAL:  # refused after all: plain writes from now on
                    self._can_direct = False
                    direct = self._set_direct(False)
                    continue
                raise
            if k is None or k <= 0:
                raise OSError(errno.EIO, "write returned nothing", getattr(raw, "name", None))
            done += k
            if direct and done % ALIGN and done < len(view):  # a short direct write mid-block
                direct = self._set_direct(False)
        if direct:
            _Stats.add(len(view), time.perf_counter() - t0)

    def _set_direct(self, on: bool) -> bool:
        """Switch ``O_DIRECT`` on the descriptor; returns whether it is on."""
        assert self._raw is not None
        if fcntl is None:
            return False
        fd = self._raw.fileno()
        try:
            fl = fcntl.fcntl(fd, fcntl.F_GETFL)
            fcntl.fcntl(fd, fcntl.F_SETFL, (fl | _O_DIRECT) if on else (fl & ~_O_DIRECT))
        except OSError:
            if on:
                self._can_direct = False
            on = False
        self._direct = on
        return on

    # -- another file's bytes
    def copy(self, path: str | os.PathLike[str], offset: int, length: int) -> None:
        """Append ``length`` bytes at ``offset`` of ``path``."""
        if self._raw is None:
            _copy_into(self._fp, path, offset, length)
            return
        flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(path, flags | (_O_DIRECT if direct_io_on() and length >= STAGE_BYTES else 0))
        except OSError as err:
            if err.errno != errno.EINVAL:
                raise
            fd = os.open(path, flags)
        try:
            reader = _Reader(fd, path, offset, length)
            try:
                for view in reader:
                    if self.aborted:  # the producer failed: the file is removed, stop copying into it
                        return
                    self.write(view)
            finally:
                reader.close()
        finally:
            os.close(fd)

    # -- a callable writing to the file object
    def call(self, fn: Callable[[IO[bytes]], None]) -> None:
        if self._raw is None:
            fn(self._fp)
            return
        self.finish(keep=True)
        fn(self._fp)
        self._fp.flush()
        pos = self._raw.tell()
        self._base, self._lo = pos - pos % ALIGN, pos % ALIGN
        self._fill = self._lo

    def finish(self, keep: bool = False) -> None:
        """Write everything staged (the last partial block with a plain write); give the
        staging buffer back unless ``keep``."""
        if self._raw is None:
            return
        if self._stage is not None:
            if self._spilled:  # (a file that fit in the stage is one plain write)
                self._drain()
            if self._fill > self._lo:
                self._write(self._mv[self._lo:self._fill], False)
            self._base += self._fill - self._fill % ALIGN
            self._lo = self._fill = self._fill % ALIGN
        if self._direct:
            self._set_direct(False)
        if not keep:
            self.release()

    def release(self) -> None:
        """Give the staging buffer back (what it still holds is dropped)."""
        if self._stage is not None:
            self._mv.release()
            _POOL.put(self._stage)
            self._stage, self._mv = None, None


class _Reader:
    """``length`` bytes at ``offset`` of the open file ``fd``, read ahead by a thread of its own
    into two pooled buffers (whole aligned blocks, ``O_DIRECT`` when the descriptor has it), so
    the next block is read while the last one is written.  Iterating yields views of the
    buffers, each valid until the next one is asked for."""

    def __init__(self, fd: int, path: str | os.PathLike[str], offset: int, length: int) -> None:
        self._fd, self._path, self._offset, self._length = fd, path, offset, length
        self._bufs = [_POOL.get(), _POOL.get()]
        self._free: queue.Queue[int] = queue.Queue()
        self._ready: queue.Queue[Any] = queue.Queue()
        for k in range(len(self._bufs)):
            self._free.put(k)
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="msprof-py-reader", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        fd, offset, end = self._fd, self._offset, self._offset + self._length
        pos = offset - offset % ALIGN
        try:
            while pos < end:
                k = self._free.get()
                if self._stop:
                    return
                mv = memoryview(self._bufs[k])
                try:
                    n = os.preadv(fd, [mv], pos)
                except OSError as err:
                    if err.errno != errno.EINVAL or fcntl is None or not fcntl.fcntl(fd, fcntl.F_GETFL) & _O_DIRECT:
                        raise
                    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_O_DIRECT)  # refused: buffered
                    n = os.preadv(fd, [mv], pos)
                finally:
                    mv.release()
                if n <= 0:
                    raise OSError(errno.EIO, f"{self._path}: ended at byte {pos} while copying {self._length} bytes "
                                             f"from byte {offset}")
                self._ready.put((k, max(offset - pos, 0), min(end - pos, n)))
                pos += n
            self._ready.put(None)
        except BaseException as exc:
            self._ready.put(exc)

    def __iter__(self) -> Iterator[memoryview]:
        while True:
            item = self._ready.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            k, lo, hi = item
            mv = memoryview(self._bufs[k])
            try:
                yield mv[lo:hi]
            finally:
                mv.release()
                self._free.put(k)

    def close(self) -> None:
        self._stop = True
        self._free.put(0)  # wakes a reader waiting for a buffer
        self._thread.join()
        for b in self._bufs:
            _POOL.put(b)


def pwrite_blocks(path: str | os.PathLike[str], data: Any, offset: int, min_bytes: int | None = None) -> bool:
    """Write ``data`` at ``offset`` of the existing file ``path`` with ``O_DIRECT`` (through a
    pooled aligned buffer, :data:`STAGE_BYTES` at a time) when direct writes are on, ``offset`` and
    the length are multiples of :data:`ALIGN` and the data is at least ``min_bytes`` (default
    :data:`STAGE_BYTES`; a small write is cheaper buffered); returns False, having written nothing,
    otherwise (the caller then writes it the plain way).  Why: the pages of a unified DB's big tables (~0.5 GB on the single-op
    million) would otherwise each take a fresh page-cache page (see :func:`direct_io_on`)."""
    view = memoryview(data).cast("B")
    n = len(view)
    if n < (STAGE_BYTES if min_bytes is None else min_bytes) or n % ALIGN or offset % ALIGN or not direct_io_on():
        return False
    try:
        fd = os.open(path, os.O_WRONLY | _O_DIRECT | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        if err.errno == errno.EINVAL:  # the file system refuses O_DIRECT
            return False
        raise
    buf = _POOL.get()
    mv = memoryview(buf)
    done = 0
    try:
        while done < n:
            k = min(STAGE_BYTES, n - done)
            mv[:k] = view[done:done + k]
            t0 = time.perf_counter()
            try:
                w = os.pwrite(fd, mv[:k], offset + done)
            except OSError as err:
                if err.errno != errno.EINVAL or done:
                    raise
                return False  # refused after all, before any byte: the plain way
            if w <= 0 or w % ALIGN:
                raise OSError(errno.EIO, f"short direct write ({w} of {k} bytes)", str(path))
            _Stats.add(w, time.perf_counter() - t0)
            done += w
        return True
    finally:
        mv.release()
        _POOL.put(buf)
        os.close(fd)


def _copy_into(fp: IO[bytes], path: str | os.PathLike[str], offset: int, length: int) -> None:
    """Append ``length`` bytes at ``offset`` of ``path`` to ``fp``: ``copy_file_range`` (the kernel
    copies between the two files' pages, no read into Python), else a read / write loop."""
    fp.flush()
    with open(path, "rb") as src:
        off, left = offset, length
        if hasattr(os, "copy_file_range"):
            try:
                while left:
                    k = os.copy_file_range(src.fileno(), fp.fileno(), left, off)
                    if k == 0:
                        break
                    off, left = off + k, left - k
            except OSError:  # not supported between these files: copy what is left through Python
                pass
            fp.seek(0, os.SEEK_END)  # the kernel moved the file offset; the writer follows it
        src.seek(off)
        while left:
            block = src.read(min(left, 1 << 22))
            if not block:
                raise OSError(f"{path}: ended at byte {off} while copying {length} bytes from byte {offset}")
            fp.write(block)
            off, left = off + len(block), left - len(block)

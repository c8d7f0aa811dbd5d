"""Writers that take a streamed output's buffers: :class:`ChunkWriter` writes them on a thread of
its own (the producer goes on rendering while the kernel takes the previous buffer: ``write()``
releases the GIL), :class:`SyncWriter` on the caller's thread (``MSPROF_PY_WRITER_THREAD=0``).  The
bytes queued are bounded (:data:`WRITE_AHEAD_BYTES`) and a failed write is raised in the producer.
Opened through :func:`msprof_py.atomic.atomic_writer`, which gives them the temporary file and the
rename.

Where the bytes go (buffered, or staged for ``O_DIRECT`` writes; other files' ranges copied) is
:mod:`msprof_py.direct_io`'s :class:`~msprof_py.direct_io._Sink`; its names are importable from
here too.

A leaf module: only the standard library and :mod:`msprof_py.direct_io`.
"""
from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable
from typing import IO, Any

from msprof_py.direct_io import (ALIGN, DIRECT_ENV, DIRECT_MIN_BYTES_PER_S, DIRECT_SAMPLE_BYTES,  # noqa: F401
                                 STAGE_BYTES, _copy_into, _Reader, _Sink, _Stats, direct_io_on, fcntl)

WRITE_AHEAD_BYTES = 8 << 20  # bytes handed to a writer thread and not yet written, at most (~2 chunks)


class _Copy:
    """A queued copy of another file's byte range (:meth:`ChunkWriter.copy`)."""

    __slots__ = ("path", "offset", "length")

    def __init__(self, path: str | os.PathLike[str], offset: int, length: int) -> None:
        self.path, self.offset, self.length = path, offset, length


class ChunkWriter:
    """Writes buffers to a binary file object on a thread of its own, in the order given.

    :meth:`write` queues a buffer (``bytes`` or any contiguous buffer: the caller must not change
    it afterwards) and returns at once unless :data:`WRITE_AHEAD_BYTES` are already waiting;
    :meth:`copy` queues a byte range of another file and :meth:`call` queues ``fn(fp)``, each
    behind the writes before it.  The first exception of the thread stops it; the next
    :meth:`write`, :meth:`copy`, :meth:`call` or :meth:`close` raises it in the caller (so an
    ``ENOSPC`` becomes the same one-line error as a write made there).  Use through
    :func:`atomic_writer`."""

    def __init__(self, fp: IO[bytes], limit: int = WRITE_AHEAD_BYTES) -> None:
        self._fp, self._limit = fp, limit
        self._sink = _Sink(fp)
        self._items: deque[tuple[Any, int]] = deque()  # (buffer | _Copy | callable | None = end, bytes)
        self._bytes = 0  # bytes queued
        self._cv = threading.Condition()
        self._error: BaseException | None = None
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="msprof-py-writer", daemon=True)
        self._thread.start()

    @property
    def pending_bytes(self) -> int:
        """Bytes handed over and not yet written."""
        return self._bytes

    def write(self, buf: Any) -> None:
        n = buf.nbytes if hasattr(buf, "nbytes") else len(buf)
        if n:
            self._put(buf, n)

    def copy(self, path: str | os.PathLike[str], offset: int, length: int) -> None:
        """Queue ``length`` bytes at ``offset`` of the file ``path`` (complete, not written to)."""
        if length:
            self._put(_Copy(path, offset, length), 0)

    def call(self, fn: Callable[[IO[bytes]], None]) -> None:
        self._put(fn, 0)

    def _put(self, item: Any, n: int) -> None:
        with self._cv:
            while self._error is None and self._items and self._bytes + n > self._limit:
                self._cv.wait()
            self._raise()
            if self._stop:
                raise ValueError("write to a closed ChunkWriter")
            self._items.append((item, n))
            self._bytes += n
            self._cv.notify_all()

    def _raise(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            self._stop = True  # the thread has ended; its error is raised once
            raise err

    def _run(self) -> None:
        fp, items, cv, sink = self._fp, self._items, self._cv, self._sink
        while True:
            with cv:
                while not items and not self._stop:
                    cv.wait()
                if self._stop:
                    return
                item, n = items[0]
            try:
                if item is None:
                    sink.finish()
                elif isinstance(item, _Copy):
                    sink.copy(item.path, item.offset, item.length)
                elif callable(item):
                    sink.call(item)
                else:
                    sink.write(item)
            except BaseException as exc:  # handed to the producer, which raises it
                with cv:
                    if not self._stop:  # (an aborted producer has its own error)
                        self._error = exc
                    items.clear()
                    self._bytes = 0
                    cv.notify_all()
                return
            if item is None:
                return
            with cv:
                if self._stop:  # aborted while this item was written: the queue is gone
                    return
                items.popleft()
                self._bytes -= n
                cv.notify_all()

    def close(self) -> None:
        """Wait until everything queued is written; raise the thread's error if it had one."""
        with self._cv:
            if self._error is None and not self._stop:
                self._items.append((None, 0))
                self._cv.notify_all()
        self._thread.join()
        self._sink.release()
        with self._cv:
            self._raise()
            self._stop = True

    def abort(self) -> None:
        """Stop the thread without writing what is still queued (the producer failed)."""
        with self._cv:
            self._stop = True
            self._error = None
            self._items.clear()
            self._cv.notify_all()
        self._sink.aborted = True  # (a copy under way stops at its next block)
        self._thread.join()
        self._sink.release()


class SyncWriter:
    """:class:`ChunkWriter`'s interface, writing at once on the caller's thread
    (``MSPROF_PY_WRITER_THREAD=0``: for comparisons)."""

    pending_bytes = 0

    def __init__(self, fp: IO[bytes]) -> None:
        self._fp = fp
        self._sink = _Sink(fp)

    def write(self, buf: Any) -> None:
        self._sink.write(buf)

    def copy(self, path: str | os.PathLike[str], offset: int, length: int) -> None:
        if length:
            self._sink.copy(path, offset, length)

    def call(self, fn: Callable[[IO[bytes]], None]) -> None:
        self._sink.call(fn)

    def close(self) -> None:
        self._sink.finish()

    def abort(self) -> None:
        self._sink.release()


WRITER_THREAD_ENV = "MSPROF_PY_WRITER_THREAD"  # "0": streamed outputs written on the producer's thread


def for_file(fp: IO[bytes]) -> ChunkWriter | SyncWriter:
    """The writer of a streamed output: a :class:`ChunkWriter` unless ``MSPROF_PY_WRITER_THREAD=0``."""
    return ChunkWriter(fp) if os.environ.get(WRITER_THREAD_ENV, "1") != "0" else SyncWriter(fp)

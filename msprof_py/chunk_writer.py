"""Writers that take a streamed output's buffers: :class:`ChunkWriter` writes them on a thread of
its own (the producer goes on rendering while the kernel copies the previous buffer into the page
cache: ``write()`` releases the GIL), :class:`SyncWriter` on the caller's thread
(``MSPROF_PY_WRITER_THREAD=0``).  The bytes queued are bounded (:data:`WRITE_AHEAD_BYTES`) and a
failed write is raised in the producer.  Opened through :func:`msprof_py.atomic.atomic_writer`,
which gives them the temporary file and the rename.

A leaf module: only the standard library.
"""
from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable
from typing import IO, Any

WRITE_AHEAD_BYTES = 8 << 20  # bytes handed to a writer thread and not yet written, at most (~2 chunks)


class ChunkWriter:
    """Writes buffers to a binary file object on a thread of its own, in the order given.

    :meth:`write` queues a buffer (``bytes`` or any contiguous buffer: the caller must not change
    it afterwards) and returns at once unless :data:`WRITE_AHEAD_BYTES` are already waiting;
    :meth:`call` queues ``fn(fp)`` (e.g. a ``copy_file_range`` into the file) behind the writes
    before it.  The first exception of the thread stops it; the next :meth:`write`, :meth:`call`
    or :meth:`close` raises it in the caller (so an ``ENOSPC`` becomes the same one-line error
    as a write made there).  Use through :func:`atomic_writer`."""

    def __init__(self, fp: IO[bytes], limit: int = WRITE_AHEAD_BYTES) -> None:
        self._fp, self._limit = fp, limit
        self._items: deque[tuple[Any, int]] = deque()  # (buffer | callable | None = end, bytes)
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
        fp, items, cv = self._fp, self._items, self._cv
        while True:
            with cv:
                while not items and not self._stop:
                    cv.wait()
                if self._stop:
                    return
                item, n = items[0]
            if item is None:
                return
            try:
                if callable(item):
                    item(fp)
                else:
                    fp.write(item)
            except BaseException as exc:  # handed to the producer, which raises it
                with cv:
                    if not self._stop:  # (an aborted producer has its own error)
                        self._error = exc
                    items.clear()
                    self._bytes = 0
                    cv.notify_all()
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
        self._thread.join()


class SyncWriter:
    """:class:`ChunkWriter`'s interface, writing at once on the caller's thread
    (``MSPROF_PY_WRITER_THREAD=0``: for comparisons)."""

    pending_bytes = 0

    def __init__(self, fp: IO[bytes]) -> None:
        self._fp = fp

    def write(self, buf: Any) -> None:
        self._fp.write(buf)

    def call(self, fn: Callable[[IO[bytes]], None]) -> None:
        fn(self._fp)

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


WRITER_THREAD_ENV = "MSPROF_PY_WRITER_THREAD"  # "0": streamed outputs written on the producer's thread


def for_file(fp: IO[bytes]) -> ChunkWriter | SyncWriter:
    """The writer of a streamed output: a :class:`ChunkWriter` unless ``MSPROF_PY_WRITER_THREAD=0``."""
    return ChunkWriter(fp) if os.environ.get(WRITER_THREAD_ENV, "1") != "0" else SyncWriter(fp)

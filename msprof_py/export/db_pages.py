"""Rows of a big unified-DB table written as SQLite table B-tree pages, without SQLite's inserts.

Why: TASK_PMU_INFO has ~27 M rows on the 1M-task collection B' (TASK and COMPUTE_TASK_INFO ~1 M
each); through ``sqlite3``'s ``executemany`` each row cost ~113-127 ns (SQLite 41 %, CPython 23 %,
kernel 16 %, libc mutexes 11 %; SQLite's settings gave nothing, benchmarks/RESULTS.md issue 12
phase 10), and the last DB process's own rows ran alone after the text files.  Here a chunk of
rows becomes its records, cells and leaf pages in numpy, and the pages are appended to the file:
~64 ns a TASK_PMU_INFO row (5 M rows in a DB process's malloc settings: 0.32 s CPU against
0.59-0.64 s), and on B' the DB processes' CPU 2.6-3.0 s against 4.6-5.0 s, the DB done with the
text files instead of 1.2-2.8 s after them (benchmarks/RESULTS.md, issue 12 phase 11 "pages").

The records and pages are made by :mod:`msprof_py.export.db_btree` (its docstring: the facts of
SQLite's record and page formats it relies on); here they are spliced into the DB file, which
relies on these (https://www.sqlite.org/fileformat2.html; tests/export/test_db_pages.py checks the
result against SQLite's own inserts, ``PRAGMA integrity_check`` ok):

- The header's page count (offset 28) is the file's size when the version-valid-for number
  (92) equals the change counter (24); a connection compares bytes 24-39 with those it last
  saw at the start of each transaction and drops its cached pages when they differ.  So pages
  are written only between SQLite's transactions (the connection is committed first; the DB's
  journal mode is OFF or DELETE, never WAL), appended after the last page, and the page count
  updated; when the root page is rewritten, the change counter and 92 are advanced by one.

Rows go in rowid order (1, 2, ...) into a table that is empty when the first rows come
(:class:`TablePages`).  Leaves are written as they fill (the last, partly filled, kept: it is
state that pickles, for the next DB process), and so are the interior pages (a few pages'
children per level kept); the rest of them and the root when the table is complete
(:meth:`TablePages.finish`); until then the table reads as empty to SQL, so nothing may read or
write it through SQLite in between.  Where a table or its values do not fit
(:meth:`TablePages.usable`, :func:`~msprof_py.export.db_btree.serial`: None), the caller inserts
through SQLite instead (after :meth:`finish` of the rows written so far)."""
from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from msprof_py.direct_io import pwrite_blocks
from msprof_py.export.db_btree import TOP, Serial, varint_len, interiors, leaves, serial
from msprof_py.memory import M_TRIM_THRESHOLD, _glibc

_KEPT: list[bool] = []  # heap_kept in force (an outer one restores the threshold)
KEEP_BYTES = 16 << 20  # free heap heap_kept keeps: a chunk's temporaries (~5-10 MB)


class TablePages:
    """The pages of table ``table`` written here: rows appended in rowid order from 1
    (:meth:`append`), the tree completed by :meth:`finish`.  Pickles between DB processes (no
    file or connection held)."""

    def __init__(self, table: str, trim_after: int | None = None) -> None:
        self.table = table
        self.trim_after = trim_after  # the malloc trim threshold of the process, set back after heap_kept
        self.state: str = "new"  # "new", "on" (rows go here), "off" (SQLite's inserts: usable() said no / finished)
        self.rows = 0
        self.root = 0
        self.page_size = 0
        self.pend: list[Serial] | None = None  # the rows of the last leaf, not written yet
        self.levels: list[np.ndarray] = []  # per level of interior pages: [pages, largest rowids] of its children not in one yet

    @contextmanager
    def heap_kept(self) -> Iterator[None]:
        """Up to :data:`KEEP_BYTES` of freed heap kept (not handed back to the system) while rows
        are made: each chunk's temporaries reuse the last's pages instead of touching fresh ones
        (a page fault each, and more on a VM: ~1/3 of the writer's time in a micro-bench).  The
        heap's free holes are handed back first (``malloc_trim``: on B' the last DB process's
        PMU matching had left ~40 MB of them) and at the end.  Only in a process whose
        threshold is known (``trim_after``: a DB process's)."""
        libc = _glibc() if self.trim_after is not None and not _KEPT else None
        if libc is None:
            yield
            return
        libc.malloc_trim(0)  # (the holes the caller's temporaries left first: kept from here on otherwise)
        libc.mallopt(M_TRIM_THRESHOLD, KEEP_BYTES)
        _KEPT.append(True)
        try:
            yield
        finally:
            _KEPT.pop()
            libc.mallopt(M_TRIM_THRESHOLD, self.trim_after)
            libc.malloc_trim(0)

    def usable(self, con: sqlite3.Connection) -> bool:
        """Whether rows go here (decided at the first rows): the table exists, is empty, has no
        index, its root is an empty leaf; the DB is a file in rollback-journal mode, schema
        format 4, no reserved bytes per page."""
        if self.state == "new":
            self.state = "on" if self._check(con) else "off"
        return self.state == "on"

    def _check(self, con: sqlite3.Connection) -> bool:
        path = _path(con)
        if path is None:
            return False
        mode = str(con.execute("PRAGMA journal_mode").fetchone()[0]).lower()
        if mode not in ("off", "delete", "truncate", "persist"):
            return False
        got = con.execute("SELECT type, rootpage FROM sqlite_master WHERE tbl_name = ?", (self.table,)).fetchall()
        if [t for t, _ in got] != ["table"]:  # an index (or no table): SQLite's inserts
            return False
        if con.execute(f"SELECT 1 FROM {self.table} LIMIT 1").fetchone() is not None:
            return False
        self.root = int(got[0][1])
        con.commit()
        with open(path, "rb") as f:
            head = f.read(100)
            ps = int.from_bytes(head[16:18], "big")
            self.page_size = 65536 if ps == 1 else ps
            if head[20] != 0 or int.from_bytes(head[44:48], "big") != 4 or self.page_size < 1024:
                return False
            f.seek((self.root - 1) * self.page_size)
            root = f.read(8)
        return root[0] == 0x0D and root[3:5] == b"\0\0"

    def append(self, con: sqlite3.Connection, cols: list[Serial]) -> None:
        """Rows ``rows + 1 ...`` of columns ``cols`` (:func:`serial` of each); their full leaves
        written after the file's last page (and each interior page as soon as it is full)."""
        n = len(cols[0][0])
        if not n:
            return
        assert self.state == "on" and self.rows + n < TOP
        if self.pend is not None:
            cols = [(np.concatenate((a, st)), np.concatenate((b, bits))) for (a, b), (st, bits) in zip(self.pend, cols)]
        first = self.rows - (len(self.pend[0][0]) if self.pend is not None else 0) + 1
        self.rows += n
        data, used, keys = leaves(first, cols, self.page_size, last=False)
        if used:
            page = self._write(con, data)
            self._add(con, 0, np.arange(page, page + len(keys), dtype=np.int64), keys)
        self.pend = [(st[used:].copy(), bits[used:].copy()) for st, bits in cols]

    def _add(self, con: sqlite3.Connection, k: int, pages: np.ndarray, keys: np.ndarray) -> None:
        """Children ``pages`` (largest rowids ``keys``) for level ``k`` of interior pages; each of
        its pages written once it is full and two children wait after it (the greedy split of
        :func:`interiors` over all of them gives the same page: no lone child at the end), so
        the state is a few pages' children per level, whatever the table's size."""
        if len(self.levels) == k:
            self.levels.append(np.zeros((2, 0), np.int64))
        level = np.concatenate((self.levels[k], np.stack((pages, keys))), axis=1)
        while True:
            need = np.cumsum(6 + varint_len(level[1]))
            c = int(need.searchsorted(self.page_size - 12, side="right"))  # cells 0 .. c - 1, right-most child c
            if level.shape[1] < c + 3:
                break
            (node,), _ = interiors(level[0][:c + 1], level[1][:c + 1], self.page_size)
            page = self._write(con, node)
            self._add(con, k + 1, np.array([page], np.int64), level[1][c:c + 1].copy())
            level = level[:, c + 1:]
        self.levels[k] = level.copy()

    def finish(self, con: sqlite3.Connection) -> None:
        """The last leaf, the interior pages left and the root: the table complete (SQLite's from now on)."""
        if self.state != "on":
            self.state = "off"
            return
        self.state = "off"
        if not self.rows:
            return
        assert self.pend is not None
        data, _, keys = leaves(self.rows - len(self.pend[0][0]) + 1, self.pend, self.page_size, last=True)
        self.pend = None
        if not self.levels and len(keys) == 1:
            self._write(con, data, root=True)
            return
        page = self._write(con, data)
        self._add(con, 0, np.arange(page, page + len(keys), dtype=np.int64), keys)
        k = 0
        while True:
            level = self.levels[k]
            nodes, last = interiors(level[0], level[1], self.page_size)
            if k == len(self.levels) - 1 and len(nodes) == 1:
                self._write(con, nodes[0], root=True)
                self.levels = []
                return
            page = self._write(con, b"".join(nodes))
            if k == len(self.levels) - 1:
                self.levels.append(np.zeros((2, 0), np.int64))
            up = self.levels[k + 1]
            self.levels[k + 1] = np.concatenate(
                (up, np.stack((np.arange(page, page + len(nodes), dtype=np.int64), level[1][last]))), axis=1)
            k += 1

    def _write(self, con: sqlite3.Connection, pages: Any, root: bool = False) -> int:
        """Write ``pages`` (bytes of whole pages) after the file's last page (``root``: the one page into the root);
        returns the first one's number.  SQLite's transaction is committed first."""
        con.commit()
        path = _path(con)
        assert path is not None
        ps = self.page_size
        try:
            fd = os.open(path, os.O_RDWR)
            try:
                head = os.pread(fd, 100, 0)
                count = int.from_bytes(head[28:32], "big")
                assert count * ps == os.fstat(fd).st_size, "page count is not the file's size"
                if root:
                    assert len(pages) == ps
                    _pwrite(fd, pages, (self.root - 1) * ps)
                    change = (int.from_bytes(head[24:28], "big") + 1) & 0xFFFFFFFF
                    _pwrite(fd, change.to_bytes(4, "big"), 24)
                    _pwrite(fd, change.to_bytes(4, "big"), 92)
                    return self.root
                if not pwrite_blocks(path, pages, count * ps, DIRECT_BYTES):
                    _pwrite(fd, pages, count * ps)
                _pwrite(fd, (count + len(pages) // ps).to_bytes(4, "big"), 28)
                return count + 1
            finally:
                os.close(fd)
        except OSError as err:
            if err.errno == errno.ENOSPC:  # the words of SQLite's own error (the callers' disk-full path)
                raise sqlite3.OperationalError("database or disk is full") from None
            raise


# pages written at once at least this big go past the page cache (no fresh page-cache page per
# DB page: ~0.5 GB of TASK_PMU_INFO, TASK and COMPUTE_TASK_INFO on the single-op million, written
# ~0.6 MB at a time)
DIRECT_BYTES = 256 << 10
COLUMN_ROWS = 16_384  # rows made pages at a time by write_columns (TASK's 11 / COMPUTE_TASK_INFO's 17 columns: ~5 MB)


def write_columns(con: sqlite3.Connection, pages: TablePages, cols: Any, n: int) -> int:
    """Rows ``0 .. n - 1`` of integer columns ``cols`` (arrays, or objects giving a slice of rows
    as an array) appended to ``pages``' table, :data:`COLUMN_ROWS` at a time; returns the rows
    written: all, or those before a chunk with a value :func:`serial` does not take (``pages``
    finished then: the caller inserts the rest), 0 when the table is not for it."""
    if not pages.usable(con):
        pages.finish(con)
        return 0
    with pages.heap_kept():
        for lo in range(0, n, COLUMN_ROWS):
            got = [serial(np.asarray(c[lo:lo + COLUMN_ROWS])) for c in cols]
            if any(g is None for g in got):
                pages.finish(con)
                return lo
            pages.append(con, got)  # type: ignore[arg-type]
    return n


def _path(con: sqlite3.Connection) -> str | None:
    for _, name, file in con.execute("PRAGMA database_list"):
        if name == "main":
            return file or None
    return None


def _pwrite(fd: int, data: Any, offset: int) -> None:
    view = memoryview(data).cast("B")
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n


__all__ = ["KEEP_BYTES", "COLUMN_ROWS", "TablePages", "write_columns"]

"""Rows of a big unified-DB table written as SQLite table B-tree pages, without SQLite's inserts.

Why: TASK_PMU_INFO has ~27 M rows on the 1M-task collection B' (TASK and COMPUTE_TASK_INFO ~1 M
each); through ``sqlite3``'s ``executemany`` each row cost ~113-127 ns (SQLite 41 %, CPython 23 %,
kernel 16 %, libc mutexes 11 %; SQLite's settings gave nothing, benchmarks/RESULTS.md issue 12
phase 10), and the last DB process's own rows ran alone after the text files.  Here a chunk of
rows becomes its records, cells and leaf pages in numpy, and the pages are appended to the file:
~64 ns a TASK_PMU_INFO row (5 M rows in a DB process's malloc settings: 0.32 s CPU against
0.59-0.64 s), and on B' the DB processes' CPU 2.6-3.0 s against 4.6-5.0 s, the DB done with the
text files instead of 1.2-2.8 s after them (benchmarks/RESULTS.md, issue 12 phase 11 "pages").

It relies on these facts of SQLite's file format (https://www.sqlite.org/fileformat2.html),
checked against SQLite by tests/export/test_db_pages.py (the same rows through ``executemany``
and through here: the same ``SELECT rowid, *, typeof(..)``, ``PRAGMA integrity_check`` ok):

- A record is a header (its size as a varint, one serial type per column) then the values:
  NULL 0; an integer in the fewest of 1/2/3/4/6/8 bytes (types 1-6) by ``u = ~i if i < 0 else i``
  <= 127 / 32767 / 8388607 / 2147483647 / 2**47-1, and 0 and 1 as types 8 and 9 (schema format
  4, header offset 44); a REAL as type 7, 8 bytes big-endian.  Values are what a NUMERIC (or
  INTEGER) column stores for a bound Python int or float: a float that converts to an int64
  exactly (strictly between -2**63 and 2**63; -0.0 is 0) is an INTEGER
  (``sqlite3VdbeIntegerAffinity``), NaN is NULL (``sqlite3_bind_double``), others REAL.
- A table leaf cell is the payload size (varint), the rowid (varint), the record; cells of at
  most ``usable - 35`` bytes have no overflow page.  A leaf page (type 0x0D) is an 8-byte header
  (type, first freeblock 0, cell count, content start, fragmented bytes 0), the cell pointers in
  rowid order, then the cells packed at the page's end, in any order (here grouped by their
  layout, each group in rowid order; no freeblock, no gap).
- An interior page (0x05) has a 12-byte header whose last 4 bytes are the right-most child, and
  cells of a 4-byte child page and the largest rowid under it (varint).  The table's root page
  (sqlite_master.rootpage, given by ``CREATE TABLE``) holds the top node.
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
(:meth:`TablePages.finish`); until then the table reads as empty to SQL, so nothing
may read or write it through SQLite in between.  The pages depend only on the rows, not on how
they were split into chunks.  Where a table or its values do not fit (:meth:`TablePages.usable`,
:func:`serial`: None), the caller inserts through SQLite instead (after :meth:`finish` of the
rows written so far)."""
from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from msprof_py.memory import M_TRIM_THRESHOLD, _glibc

_LEN = np.array([0, 1, 2, 3, 4, 6, 8, 8, 0, 0], np.uint8)  # bytes of a value of serial type 0..9
_KEPT: list[bool] = []  # heap_kept in force (an outer one restores the threshold)
KEEP_BYTES = 16 << 20  # free heap heap_kept keeps: a chunk's temporaries (~5-10 MB)
_TOP = 1 << 56  # rowids and sizes here are below (varints of at most 8 bytes)

Serial = tuple[np.ndarray, np.ndarray]
"""One column's values as serial types (uint8) and their 64-bit patterns (int64)."""


def serial(values: np.ndarray) -> Serial | None:
    """The serial types and value bits of a column as a NUMERIC / INTEGER column stores its
    values bound as Python ints or floats (``tolist()``); None: a dtype this does not handle
    (object, an unsigned value above 2**63-1: bound, it would not fit)."""
    v = np.asarray(values)
    k = v.dtype.kind
    if k == "b":
        v, k = v.astype(np.int64), "i"
    if k == "u":
        if len(v) and v.max() > np.iinfo(np.int64).max:
            return None
        v, k = v.astype(np.int64), "i"
    if k == "i":
        i = v.astype(np.int64, copy=False)
        return _int_types(i), i
    if k != "f":
        return None
    x = v.astype(np.float64, copy=False)
    with np.errstate(invalid="ignore"):
        i = x.astype(np.int64)  # NaN, inf and past int64: INT64_MIN (x86) or saturated (ARM)
    # an int64 exactly, strictly inside (INT64_MIN, INT64_MAX): False for NaN, inf, +-2**63 and past
    whole = (i == x) & (i != np.iinfo(np.int64).min) & (i != np.iinfo(np.int64).max)
    if whole.all():
        return _int_types(i), i
    st = _int_types(i)
    st[~whole] = 7
    st[np.isnan(x)] = 0
    return st, np.where(whole, i, x.view(np.int64))


def _int_types(i: np.ndarray) -> np.ndarray:
    u = i ^ (i >> 63)  # ~i if i < 0 else i
    st = np.ones(len(i), np.uint8)
    for limit in (127, 2**15 - 1, 2**23 - 1, 2**31 - 1, 2**47 - 1):
        st += u > limit  # types 1, 2, 3, 4, 5 (6 bytes), 6 (8 bytes)
    small = (i >> 1) == 0  # 0 and 1: types 8 and 9
    st[small] = 8 + i[small]
    return st


def _varint_len(v: np.ndarray) -> np.ndarray:
    n = np.ones(len(v), np.int64)
    for b in range(1, 8):
        n += v >= (1 << (7 * b))
    return n


def _varint_value(v: np.ndarray, w: int) -> np.ndarray:
    """The ``w``-byte varints of ``v`` as integers (their big-endian bytes are the varint's)."""
    out = v & 0x7F
    for g in range(1, w):
        out |= (((v >> (7 * g)) & 0x7F) | 0x80) << (8 * g)
    return out


_LEN_CODE = np.array([0, 1, 2, 3, 4, 0, 5, 0, 6], np.int32)  # value length 0/1/2/3/4/6/8 -> 0..6


def _rowid_len(rowid0: int, n: int) -> np.ndarray:
    """Varint lengths of the rowids ``rowid0 .. rowid0 + n - 1``."""
    lr = np.full(n, len(_varint(rowid0)), np.int32)
    for b in range(1, 8):
        t = (1 << (7 * b)) - rowid0  # the first row whose varint has more than b bytes
        if 0 < t < n:
            lr[t:] += 1
    return lr


def _records(rows: np.ndarray, cols: list[Serial], ls: list[int], lr: int, rowid0: int) -> bytes:
    """The cells of ``rows`` (all of one layout: value lengths ``ls``, rowid varint length
    ``lr``) one after the other: each field written as the last bytes of an 8-byte big-endian
    window ending where it ends (fields from the last to the first, a window's leading bytes
    overwritten by the fields before it), or byte by byte when it ends within a cell's first 8
    bytes."""
    k = len(rows)
    h = 1 + len(cols)
    payload = h + sum(ls)
    lp = 1 if payload < 128 else 2
    z = lp + lr + payload
    buf = np.empty(k * z, np.uint8)
    grid = buf.reshape(k, z)
    every = len(rows) == len(cols[0][0])

    def field(x: np.ndarray, end: int, width: int) -> None:
        if end >= 8 and z >= 8:  # (a window inside its own cell)
            np.ndarray((k,), ">i8", buf, end - 8, (z,))[...] = x
        else:
            for b in range(width):
                grid[:, end - width + b] = (x >> (8 * (width - 1 - b))) & 0xFF

    end = z
    for (st, bits), ln in zip(reversed(cols), reversed(ls)):
        if ln:
            field(bits if every else bits[rows], end, ln)
        end -= ln
    at = lp + lr
    grid[:, at] = h
    for j, (st, _) in enumerate(cols):
        grid[:, at + 1 + j] = st if every else st[rows]
    field(_varint_value(rowid0 + rows, lr), lp + lr, lr)
    if lp == 1:
        grid[:, 0] = payload
    else:
        grid[:, 0], grid[:, 1] = (payload >> 7) | 0x80, payload & 0x7F
    return buf.data


_KEY_SPACE = 1 << 20  # layout keys above this are renumbered first (_room)


def _room(key: np.ndarray, mult: int, radix: int) -> tuple[np.ndarray, int]:
    """``key`` (layout codes so far, below ``mult``) renumbered by rank among its values when the
    next digit (``radix``) would take the key space past :data:`_KEY_SPACE`: the groups and their
    order stay the same, and the space (a ``bincount`` of that size) stays bounded.  Without it,
    rows whose many columns all vary in length (corrupt input: 17 columns of COMPUTE_TASK_INFO)
    made 7**17 keys: an int32 overflow or an array of 18.9 GiB (fuzz campaign 14)."""
    if mult * radix <= _KEY_SPACE:
        return key, mult
    uniq, inv = np.unique(key, return_inverse=True)
    return inv.astype(np.int64).reshape(-1), len(uniq)


def leaves(rowid0: int, cols: list[Serial], page_size: int, last: bool) -> tuple[Any, int, np.ndarray]:
    """Leaf pages of rows ``rowid0, rowid0 + 1, ...`` of columns ``cols`` (:func:`serial`), each
    filled in rowid order while its cells fit: the pages' bytes, the rows in them (``last``:
    all; else every page but the last, whose rows more rows may join), each page's largest rowid.

    In a page the cells are grouped by layout (value lengths, rowid varint length): a group's
    cells are all the same size, made at once by :func:`_records`; the pointers are in rowid
    order."""
    n = len(cols[0][0])
    lens = [_LEN[st] for st, _ in cols]
    lr = _rowid_len(rowid0, n)
    key = np.zeros(n, np.int64)
    mult = 1
    for ln in lens:
        if ln[0] != ln[-1] or (ln != ln[0]).any():
            key, mult = _room(key, mult, 7)
            key += _LEN_CODE[ln] * mult
            mult *= 7
    if lr[0] != lr[-1]:
        key, mult = _room(key, mult, 9)
        key += (lr - lr[0]) * mult
        mult *= 9
    if mult == 1:
        inv = np.zeros(n, np.uint8)
        groups = [np.arange(n)]
    else:
        present = np.flatnonzero(np.bincount(key, minlength=mult))
        code = np.zeros(mult, np.uint8 if len(present) <= 256 else np.int32)
        code[present] = np.arange(len(present))
        inv = code[key]
        order = np.argsort(inv, kind="stable")
        bounds = np.concatenate(([0], np.cumsum(np.bincount(inv, minlength=len(present)))))
        groups = [order[bounds[g]:bounds[g + 1]] for g in range(len(present))]
    shape = [([int(ln[g[0]]) for ln in lens], int(lr[g[0]])) for g in groups]
    h = 1 + len(cols)
    zs = np.array([(1 if h + sum(ls) < 128 else 2) + r + h + sum(ls) for ls, r in shape], np.int64)
    # greedy split: a page's cells and their 2-byte pointers after its 8-byte header
    need = np.cumsum((zs + 2)[inv])
    starts, base, room = [0], 0, page_size - 8
    while starts[-1] < n:
        b = int(np.searchsorted(need, base + room, side="right"))
        assert b > starts[-1], "cell larger than a page"
        starts.append(b)
        base = int(need[b - 1])
    if not last:
        starts.pop()
    pages = len(starts) - 1
    if pages <= 0:
        return b"", 0, np.zeros(0, np.int64)
    used = starts[-1]
    st_arr = np.asarray(starts, np.int64)
    count = np.diff(st_arr)
    content = need[st_arr[1:] - 1] - np.concatenate(([0], need[st_arr[1:-1] - 1])) - 2 * count
    first = page_size - content
    out = np.zeros((pages, page_size), np.uint8)
    out[:, 0] = 0x0D
    out[:, 3], out[:, 4] = count >> 8, count & 0xFF
    out[:, 5], out[:, 6] = (first >> 8) & 0xFF, first & 0xFF
    flat = out.reshape(-1)
    pv = flat.view(">u2")
    dest = memoryview(flat)
    base_ptr = np.arange(pages, dtype=np.int64) * (page_size // 2) + 4 - st_arr[:-1]  # pointer of row i: pv[i + base]
    at = first.copy()  # where the next group's cells go in each page
    for g, (ls, r), z in zip(groups, shape, zs.tolist()):
        g = g[:int(np.searchsorted(g, used))]
        if not len(g):
            continue
        cnt = np.diff(np.searchsorted(g, st_arr))  # the group's cells in each page
        off = at - np.concatenate(([0], np.cumsum(cnt)[:-1])) * z  # cell j of the group: off[page] + j * z
        pv[g + np.repeat(base_ptr, cnt)] = np.arange(len(g)) * z + np.repeat(off, cnt)
        src = memoryview(_records(g, cols, ls, r, rowid0))
        for p, (c, a) in enumerate(zip(cnt.tolist(), at.tolist())):
            if c:
                d = p * page_size + a
                j = (a - int(off[p])) // z
                dest[d:d + c * z] = src[j * z:(j + c) * z]
        at += cnt * z
    return flat.data, used, rowid0 + st_arr[1:] - 1


def interiors(children: np.ndarray, keys: np.ndarray, page_size: int) -> tuple[list[bytes], list[int]]:
    """Interior pages over ``children`` (page numbers, in rowid order; ``keys``: the largest rowid
    under each): each filled greedily with cells (4-byte child, key varint), its last child the
    right-most pointer, none with a lone child.  Returns the pages and each one's last child."""
    n = len(keys)
    vl = _varint_len(keys)
    w = int(vl.max())
    grid = np.empty((n, 4 + w), np.uint8)
    grid[:, :4] = children.astype(">u4").view(np.uint8).reshape(n, 4)
    keep = np.ones((n, 4 + w), bool)
    for j in range(w):
        g = w - 1 - j
        grid[:, 4 + j] = ((keys >> (7 * g)) & 0x7F) | (0x80 if g else 0)
        keep[:, 4 + j] = vl > g
    stream = np.compress(keep.ravel(), grid.ravel())
    size = 4 + vl
    off = np.concatenate(([0], np.cumsum(size)))
    need = np.cumsum(size + 2)
    bounds, a, base = [0], 0, 0
    while a < n:
        c = int(need.searchsorted(base + page_size - 12, side="right"))  # cells a .. c - 1 fit
        b = min(max(c + 1, a + 2), n)  # cells a .. b - 2 and the right-most child b - 1
        bounds.append(b)
        a, base = b, int(need[b - 1])
    if len(bounds) > 2 and bounds[-1] - bounds[-2] == 1:  # a lone child: take one from the node before
        bounds[-2] -= 1
    pages = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        k = b - a - 1
        body = stream[off[a]:off[b - 1]]
        start = page_size - len(body)
        page = np.zeros(page_size, np.uint8)
        page[0] = 0x05
        page[3:5] = (k >> 8, k & 0xFF)
        page[5:7] = (start >> 8 & 0xFF, start & 0xFF)
        page[8:12] = np.frombuffer(int(children[b - 1]).to_bytes(4, "big"), np.uint8)
        page[12:12 + 2 * k] = (start + off[a:b - 1] - off[a]).astype(">u2").view(np.uint8)
        page[start:] = body
        pages.append(page.tobytes())
    return pages, [b - 1 for b in bounds[1:]]


def _varint(v: int) -> bytes:
    assert 0 <= v < _TOP
    out = [v & 0x7F]
    v >>= 7
    while v:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    return bytes(reversed(out))


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
        assert self.state == "on" and self.rows + n < _TOP
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
            need = np.cumsum(6 + _varint_len(level[1]))
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
                _pwrite(fd, pages, count * ps)
                _pwrite(fd, (count + len(pages) // ps).to_bytes(4, "big"), 28)
                return count + 1
            finally:
                os.close(fd)
        except OSError as err:
            if err.errno == errno.ENOSPC:  # the words of SQLite's own error (the callers' disk-full path)
                raise sqlite3.OperationalError("database or disk is full") from None
            raise


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


__all__ = ["TablePages", "leaves", "serial", "write_columns"]

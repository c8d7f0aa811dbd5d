"""SQLite table B-tree pages made in numpy from columns of rows: records, cells, leaf and interior pages.

The page building of :mod:`msprof_py.export.db_pages` (which splices these pages into a DB file).
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

The pages depend only on the rows, not on how they were split into chunks."""
from __future__ import annotations

from typing import Any

import numpy as np

_LEN = np.array([0, 1, 2, 3, 4, 6, 8, 8, 0, 0], np.uint8)  # bytes of a value of serial type 0..9
TOP = 1 << 56  # rowids and sizes here are below (varints of at most 8 bytes)

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


def varint_len(v: np.ndarray) -> np.ndarray:
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
    vl = varint_len(keys)
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
    assert 0 <= v < TOP
    out = [v & 0x7F]
    v >>= 7
    while v:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    return bytes(reversed(out))


__all__ = ["TOP", "Serial", "interiors", "leaves", "serial", "varint_len"]

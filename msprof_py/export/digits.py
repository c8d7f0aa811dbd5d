"""Numbers as text in NUL-padded byte matrices, for the row renderer (:mod:`msprof_py.export.rows`):
integers, ``ns -> "us.nnn"`` decimals, digit tables.  Every writer fills a ``(rows, width)`` uint8
view right-aligned, leading positions NUL (dropped with the padding), with numpy arithmetic and
table lookups, never a Python call per value.
"""
from __future__ import annotations

import numpy as np

# "000".."999" as bytes: three digits per table lookup
_D3 = np.array([[ord(c) for c in f"{i:03d}"] for i in range(1000)], dtype=np.uint8)
_POW10 = np.array([10**k for k in range(1, 19)], dtype=np.int64)


def digit_count(v: np.ndarray) -> np.ndarray:
    """Number of decimal digits of each non-negative int64 (0 has one digit)."""
    return np.searchsorted(_POW10, v, side="right") + 1


_TABLES: dict[tuple[int, bool], np.ndarray] = {}


def digit_table(width: int, nul: bool) -> np.ndarray:
    """0 .. 10**width - 1 as ``width`` bytes each, right-aligned: leading zeros as NUL
    (``nul``) or as "0"; a contiguous ``(10**width, width)`` uint8 matrix built once."""
    t = _TABLES.get((width, nul))
    if t is None:
        v = np.arange(10**width, dtype=np.int64)
        t = np.empty((len(v), width), dtype=np.uint8)
        for j in range(width):
            t[:, width - 1 - j] = (v // 10**j) % 10 + 48
        if nul:
            t[np.arange(width)[None, :] < (width - digit_count(v))[:, None]] = 0
        _TABLES[(width, nul)] = t
    return t


_GROUPS: dict[int, np.ndarray] = {}


def group_table(width: int) -> np.ndarray:
    """The texts of one group of ``width`` (1-4) digits of a number, by ``digits + 10**width *
    state``: state 0 all NUL (the number has no digit here), 1 NUL-padded (the number's first
    digits), 2 zero-padded (more digits to the left).  ``(3 * 10**width, width)`` uint8, built
    once (120 KB for 4: stays in cache; 4-byte items are ``np.take``'s fast path)."""
    t = _GROUPS.get(width)
    if t is None:
        t = np.concatenate([np.zeros((10**width, width), np.uint8), digit_table(width, True),
                            digit_table(width, False)])
        _GROUPS[width] = t
    return t


# ".000" .. ".999": the decimal point and the three decimals of a µs value, one 4-byte item
_DOT3 = np.concatenate([np.full((1000, 1), ord("."), np.uint8), _D3], axis=1)


def split(v: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.divmod(v, d)`` for a constant ``d``: numpy's floor division by a scalar uses a
    multiply-and-shift (libdivide), its divmod a hardware division per value (~7x slower)."""
    q = v // d
    return q, v - q * d


def gather(out: np.ndarray, table: np.ndarray, idx: np.ndarray) -> None:
    """``out[:] = table[idx]`` for uint8 matrices (``out`` a column range of a row buffer,
    ``table`` contiguous): each row moved as one fixed-size void item by ``np.take`` straight
    into ``out``, without the fancy-indexing temporary (~3x faster for rows of 4-40 bytes;
    items of 4, 8 or 16 bytes are another ~2x faster: take copies them as integers)."""
    w = out.shape[1]
    if w == 0 or len(idx) == 0:
        return
    if out.strides[1] != 1 or not table.flags.c_contiguous:  # (take would copy the whole table)
        out[:] = table[idx]
        return
    np.take(table.view(f"V{w}")[:, 0], idx, out=out.view(f"V{w}")[:, 0])


def write_uint(out: np.ndarray, v: np.ndarray) -> None:
    """Write non-negative ints (int64 or uint64) right-aligned into ``out`` (a ``(len(v), width)``
    uint8 view; every value below ``10**width``), leading zeros as NUL.

    Four digits at a time from the right, each group one lookup in :func:`group_table` (its
    state says whether the group is empty, the first or an inner one), so a width that is a
    multiple of 4 costs only 4-byte gathers (:meth:`RowBuilder.int` rounds widths up to one).
    Wide values of a chunk that share their leading digits (timestamps, ids counting up) write
    those once as a constant (:func:`_shared_head`)."""
    w = out.shape[1]
    if w == 0 or len(v) == 0:
        return
    if w > 8 and _shared_head(out, v):
        return
    _write_groups(out, v, first=True)


def _write_groups(out: np.ndarray, v: np.ndarray, first: bool) -> None:
    """:func:`write_uint`'s groups; ``first``: the lowest group prints "0" for 0 (state >= 1)."""
    w = out.shape[1]
    col, rest = w, v
    while col > 0:
        g = min(4, col)
        if col > g:
            nxt, d = split(rest, 10**g)
            state = (nxt > 0).astype(np.int64) + (1 if first else (rest > 0))
        else:  # the top group: every value fits (below 10**width)
            nxt, d = None, rest
            state = 1 if first else (rest > 0).astype(np.int64)
        # (a group's digits fit int64 whatever the input type: uint64 + int64 would be float64)
        gather(out[:, col - g:col], group_table(g), d.astype(np.int64, copy=False) + state * 10**g)
        col -= g
        if nxt is None:
            break
        rest, first = nxt, False
        if col > 0 and not rest.any():  # no value has more digits: the rest is NUL
            fill_const(out[:, :col], bytes(col))
            break


def _shared_head(out: np.ndarray, v: np.ndarray) -> bool:
    """Values of one chunk with the same number of digits and the same leading ones (``head``,
    at least 4 digits): the head written as a constant, the ``k`` digits after it (a multiple
    of 4) computed.  False (nothing written) otherwise."""
    lo, hi = int(v.min()), int(v.max())
    if lo <= 0:
        return False
    k = 0
    while lo // 10**k != hi // 10**k:
        k += 4
    head = str(hi // 10**k).encode() if hi // 10**k else b""
    if len(head) < 4 or len(head) + k > out.shape[1]:
        return False
    w, digits = out.shape[1], len(head) + k
    fill_const(out[:, :w - k], bytes(w - digits) + head)
    if k:
        _write_zero_padded(out[:, w - k:], v - np.asarray((hi // 10**k) * 10**k, dtype=v.dtype))
    return True


def fill_const(out: np.ndarray, text: bytes) -> None:
    """Every row of ``out`` (a ``(rows, len(text))`` column range) set to ``text``: 8- and
    4-byte pieces as one ``np.take`` each, the last 1-3 bytes column by column (a broadcast
    assignment of a short row costs a loop call per row: ~3x slower)."""
    pos, n = 0, len(text)
    zero = np.zeros(len(out), np.intp) if n >= 4 else None
    while n - pos >= 4:
        g = 8 if n - pos >= 8 else 4
        gather(out[:, pos:pos + g], np.frombuffer(text[pos:pos + g], np.uint8)[None, :], zero)
        pos += g
    for j in range(pos, n):
        out[:, j] = text[j]


def _write_zero_padded(out: np.ndarray, v: np.ndarray) -> None:
    """Ints below ``10**width`` as exactly ``width`` digits, "0"-padded (width a multiple of 4)."""
    col, rest = out.shape[1], v
    while col > 4:
        rest, d = split(rest, 10_000)
        gather(out[:, col - 4:col], digit_table(4, False), d)
        col -= 4
    gather(out[:, :col], digit_table(col, False), rest)


def int_width(v: np.ndarray) -> int:
    """Characters needed for the widest of ``v`` (one more for a sign column if any is negative)."""
    if len(v) == 0:
        return 1
    lo, hi = int(v.min()), int(v.max())
    return len(str(max(abs(lo), abs(hi)))) + (1 if lo < 0 else 0)


def magnitude(v: np.ndarray) -> np.ndarray:
    """``|v|`` of int64 values as uint64 (exact for -2**63, whose int64 ``abs`` is itself)."""
    u = v.astype(np.uint64)
    return np.where(v < 0, ~u + np.uint64(1), u)


def write_int(out: np.ndarray, v: np.ndarray) -> None:
    """Signed ints into ``out``; a minus sign sits in the first column (the NULs between it and
    the digits vanish with the padding)."""
    neg = v < 0
    if neg.any():
        out[:, 0] = np.where(neg, ord("-"), 0)
        write_uint(out[:, 1:], magnitude(v))
    else:
        write_uint(out, v)


def us3_width(ns: np.ndarray) -> int:
    if len(ns) == 0:
        return 5
    lo, hi = int(ns.min()), int(ns.max())
    return len(str(max(abs(lo), abs(hi)) // 1000)) + (1 if lo < 0 else 0) + 4


def write_us3(out: np.ndarray, ns: np.ndarray, decimals: np.ndarray = _DOT3) -> None:
    """Integer ns as µs with exactly three decimals (1234567 -> ``1234.567``): msprof's
    ``DivideByPowersOfTenWithPrecision``, integer arithmetic, no float rounding.  ``decimals``:
    the 4 bytes written for each of ``.000`` .. ``.999`` (another table prints them otherwise)."""
    w = out.shape[1]
    neg = ns < 0
    signed = bool(neg.any())
    whole, frac = split(magnitude(ns) if signed else ns, 1000)
    if signed:
        out[:, 0] = np.where(neg, ord("-"), 0)
        write_uint(out[:, 1:w - 4], whole)
    else:
        write_uint(out[:, :w - 4], whole)
    gather(out[:, w - 4:], decimals, frac)


def round4(width: int) -> int:
    """A field width rounded up to a multiple of 4: the extra columns are NUL (dropped with the
    padding) and every digit group is then a 4-byte item (:func:`write_uint`)."""
    return -(-width // 4) * 4

"""Vectorised protobuf wire format: many messages of one shape encoded at once with numpy.

A :class:`Messages` holds ``n`` messages as a list of byte blocks: each block is a ``(n, w)``
uint8 matrix whose row ``i`` starts with ``lens[i]`` meaningful bytes (the rest is padding).
Fields are appended column-wise (``varint``, ``fixed64``, ``double``, nested ``message``); an
absent field is a block row of length 0.  :meth:`Messages.render` stacks the blocks side by side
and keeps the meaningful bytes with one boolean mask, which concatenates every row's fields in
order -- no per-message Python.  Protobuf bytes may contain NUL, so the mask (not a padding value)
says what is kept.

Only what the native trace needs is here: varint (uint64, int64 as two's complement), fixed64,
double, and length-delimited nested messages.  Tags are written as varints of
``field_number << 3 | wire_type``.
"""
from __future__ import annotations

import numpy as np

VARINT, FIXED64, LEN = 0, 1, 2


def tag(field: int, wire: int) -> bytes:
    """The varint key of a field."""
    return varint_bytes((field << 3) | wire)


def varint_bytes(v: int) -> bytes:
    """One varint (small values: tags, lengths of the few descriptor messages)."""
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


_THRESH = np.array([1 << (7 * k) for k in range(1, 10)], dtype=np.uint64)


def varint_len(v: np.ndarray) -> np.ndarray:
    """Bytes of each uint64 as a varint (1..10)."""
    return np.searchsorted(_THRESH, np.asarray(v, dtype=np.uint64), side="right").astype(np.int64) + 1


def _as_u64(v: np.ndarray) -> np.ndarray:
    a = np.asarray(v)
    return a.astype(np.int64, copy=False).view(np.uint64) if a.dtype.kind == "i" else a.astype(np.uint64, copy=False)


def varint_block(v: np.ndarray, prefix: bytes = b"") -> tuple[np.ndarray, np.ndarray]:
    """``(n, len(prefix) + w)`` bytes: ``prefix`` then the varint of each value (left-aligned),
    and the row lengths.  Negative int64 values are encoded as protobuf does (two's complement,
    10 bytes)."""
    u = _as_u64(v)
    p = len(prefix)
    top = int(u.max()) if len(u) else 0
    if top < 128:  # one byte each: the common case for ids and lengths
        out = np.empty((len(u), p + 1), dtype=np.uint8)
        if p:
            out[:, :p] = np.frombuffer(prefix, dtype=np.uint8)
        out[:, p] = u
        return out, np.full(len(u), p + 1, np.int64)
    lens = varint_len(u)
    w = int(lens.max())
    out = np.empty((len(u), p + w), dtype=np.uint8)
    if p:
        out[:, :p] = np.frombuffer(prefix, dtype=np.uint8)
    rest = u.copy()
    for k in range(w):
        byte = (rest & np.uint64(0x7F)).astype(np.uint8)
        rest >>= np.uint64(7)
        out[:, p + k] = byte | ((k < lens - 1).astype(np.uint8) << 7)
    return out, lens + p


class Messages:
    """``n`` protobuf messages of one shape, built field by field (see module doc)."""

    def __init__(self, n: int) -> None:
        self.n = n
        # (matrix, row lengths or None when every row uses the full width)
        self.blocks: list[tuple[np.ndarray, np.ndarray | None]] = []

    def _add(self, mat: np.ndarray, lens: np.ndarray | None, present: np.ndarray | None) -> None:
        if present is not None:
            lens = np.where(present, lens if lens is not None else mat.shape[1], 0)
        self.blocks.append((mat, lens))

    def const(self, data: bytes, present: np.ndarray | None = None) -> "Messages":
        """The same bytes (usually a whole field: tag + value) in every message."""
        if data:
            row = np.frombuffer(data, dtype=np.uint8)
            self._add(np.broadcast_to(row, (self.n, len(row))), None, present)
        return self

    def varint(self, field: int, values: np.ndarray, present: np.ndarray | None = None,
               prefix: bytes = b"") -> "Messages":
        """A varint field (``prefix``: constant bytes written before its tag, e.g. the head of
        an enclosing one-field message)."""
        mat, lens = varint_block(values, prefix + tag(field, VARINT))
        self._add(mat, lens, present)
        return self

    def fixed64(self, field: int, values: np.ndarray, present: np.ndarray | None = None) -> "Messages":
        """A fixed64 (or, given float64 values, a double) field."""
        t = tag(field, FIXED64)
        v = np.asarray(values)
        v = v.astype("<f8") if v.dtype.kind == "f" else _as_u64(v).astype("<u8", copy=False)
        mat = np.empty((self.n, len(t) + 8), dtype=np.uint8)
        mat[:, :len(t)] = np.frombuffer(t, dtype=np.uint8)
        mat[:, len(t):] = np.ascontiguousarray(v).view(np.uint8).reshape(self.n, 8)
        self._add(mat, None, present)
        return self

    def small_message(self, field: int, head: bytes, value_field: int, values: np.ndarray,
                      present: np.ndarray | None = None) -> "Messages":
        """A nested message of constant ``head`` bytes then one varint (or, given float64 values,
        double) field, shorter than 128 bytes: e.g. a debug annotation ``{name_iid, int_value}``.
        One block, one varint computation."""
        t = tag(field, LEN)
        v = np.asarray(values)
        if v.dtype.kind == "f":
            prefix = t + b"\x00" + head + tag(value_field, FIXED64)
            mat = np.empty((self.n, len(prefix) + 8), dtype=np.uint8)
            mat[:, :len(prefix)] = np.frombuffer(prefix, dtype=np.uint8)
            mat[:, len(prefix):] = np.ascontiguousarray(v.astype("<f8")).view(np.uint8).reshape(self.n, 8)
            mat[:, len(t)] = mat.shape[1] - len(t) - 1
            self._add(mat, None, present)
            return self
        mat, lens = varint_block(v, t + b"\x00" + head + tag(value_field, VARINT))
        mat[:, len(t)] = lens - len(t) - 1
        self._add(mat, lens, present)
        return self

    def lengths(self) -> np.ndarray:
        total = np.zeros(self.n, dtype=np.int64)
        for m, lens in self.blocks:
            total += lens if lens is not None else m.shape[1]
        return total

    def message(self, field: int, sub: "Messages", present: np.ndarray | None = None) -> "Messages":
        """A nested message field (length-delimited)."""
        if all(ln is None for _, ln in sub.blocks):  # every message the same length: a constant head
            self.const(tag(field, LEN) + varint_bytes(sum(m.shape[1] for m, _ in sub.blocks)), present)
        else:
            mat, lens = varint_block(sub.lengths(), tag(field, LEN))
            self._add(mat, lens, present)
        for m, ln in sub.blocks:
            self._add(m, ln, present)
        return self

    def matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """Every message as one padded row and the mask of its meaningful bytes."""
        width = sum(m.shape[1] for m, _ in self.blocks)
        mat = np.empty((self.n, width), dtype=np.uint8)
        mask = np.ones((self.n, width), dtype=bool)
        o = 0
        for m, lens in self.blocks:
            w = m.shape[1]
            mat[:, o:o + w] = m
            if lens is not None:
                mask[:, o:o + w] = (_COLS[:w] if w <= len(_COLS) else np.arange(w)) < lens[:, None]
            o += w
        return mat, mask

    def render(self) -> bytes:
        """The messages back to back (each one's fields in the order they were added)."""
        mat, mask = self.matrix()
        return mat[mask].tobytes()


_COLS = np.arange(256)


def interleave(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n: int) -> bytes:
    """Rows of several message sets, put at given positions: ``parts`` holds
    ``(positions, matrix, mask)`` per set; the output is the ``n`` rows in position order."""
    if len(parts) == 1 and len(parts[0][0]) == n:
        pos, m, k = parts[0]
        if (np.diff(pos) > 0).all():
            return m[k].tobytes()
    w = max((m.shape[1] for _, m, _ in parts), default=0)
    mat = np.empty((n, w), dtype=np.uint8)
    mask = np.zeros((n, w), dtype=bool)
    for pos, m, k in parts:
        rows = slice(int(pos[0]), int(pos[-1]) + 1) if len(pos) and pos[-1] - pos[0] + 1 == len(pos) else pos
        mat[rows, :m.shape[1]] = m
        mask[rows, :k.shape[1]] = k
    return mat[mask].tobytes()

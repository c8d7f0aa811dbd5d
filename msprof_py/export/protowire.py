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


def varint_len(v: np.ndarray) -> np.ndarray:
    """Bytes of each uint64 as a varint (1..10)."""
    v = np.asarray(v, dtype=np.uint64)
    n = np.ones(len(v), dtype=np.int64)
    for k in range(1, 10):
        n += v >= np.uint64(1 << (7 * k))
    return n


def varint_block(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(n, w)`` varint bytes (left-aligned) and their lengths; negative int64 values are
    encoded as protobuf does (two's complement, 10 bytes)."""
    u = np.asarray(v).astype(np.int64, copy=False).view(np.uint64) if np.asarray(v).dtype.kind == "i" \
        else np.asarray(v, dtype=np.uint64)
    lens = varint_len(u)
    w = int(lens.max()) if len(u) else 1
    out = np.empty((len(u), w), dtype=np.uint8)
    for k in range(w):
        byte = ((u >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        out[:, k] = byte | ((k < lens - 1).astype(np.uint8) << 7)
    return out, lens


class Messages:
    """``n`` protobuf messages of one shape, built field by field (see module doc)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.blocks: list[tuple[np.ndarray, np.ndarray]] = []

    def _add(self, mat: np.ndarray, lens: np.ndarray | int, present: np.ndarray | None) -> None:
        lens = np.broadcast_to(np.asarray(lens, dtype=np.int64), (self.n,))
        if present is not None:
            lens = np.where(present, lens, 0)
        self.blocks.append((mat, lens))

    def const(self, data: bytes, present: np.ndarray | None = None) -> "Messages":
        """The same bytes (usually a whole field: tag + value) in every message."""
        if data:
            row = np.frombuffer(data, dtype=np.uint8)
            self._add(np.broadcast_to(row, (self.n, len(row))), len(row), present)
        return self

    def varint(self, field: int, values: np.ndarray, present: np.ndarray | None = None) -> "Messages":
        t = np.frombuffer(tag(field, VARINT), dtype=np.uint8)
        mat, lens = varint_block(values)
        self._add(np.hstack([np.broadcast_to(t, (self.n, len(t))), mat]), lens + len(t), present)
        return self

    def fixed64(self, field: int, values: np.ndarray, present: np.ndarray | None = None) -> "Messages":
        """A fixed64 (or, given float64 values, a double) field."""
        t = np.frombuffer(tag(field, FIXED64), dtype=np.uint8)
        v = np.ascontiguousarray(values)
        v = v.astype("<f8") if v.dtype.kind == "f" else v.astype("<u8")
        mat = v.view(np.uint8).reshape(self.n, 8)
        self._add(np.hstack([np.broadcast_to(t, (self.n, len(t))), mat]), len(t) + 8, present)
        return self

    def lengths(self) -> np.ndarray:
        total = np.zeros(self.n, dtype=np.int64)
        for _, lens in self.blocks:
            total += lens
        return total

    def message(self, field: int, sub: "Messages", present: np.ndarray | None = None) -> "Messages":
        """A nested message field (length-delimited)."""
        size = sub.lengths()
        t = np.frombuffer(tag(field, LEN), dtype=np.uint8)
        mat, lens = varint_block(size)
        keep = present
        self._add(np.hstack([np.broadcast_to(t, (self.n, len(t))), mat]), lens + len(t), keep)
        for m, ln in sub.blocks:
            self._add(m, ln, keep)
        return self

    def take(self, rows: np.ndarray) -> "Messages":
        """The messages at ``rows`` (a selection of this set, same shape)."""
        out = Messages(len(rows))
        out.blocks = [(m[rows], ln[rows]) for m, ln in self.blocks]
        return out

    def matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """Every message as one padded row and the mask of its meaningful bytes."""
        if not self.blocks:
            return np.zeros((self.n, 0), np.uint8), np.zeros((self.n, 0), bool)
        mat = np.hstack([m for m, _ in self.blocks])
        mask = np.hstack([np.arange(m.shape[1])[None, :] < ln[:, None] for m, ln in self.blocks])
        return mat, mask

    def render(self) -> bytes:
        """The messages back to back (each one's fields in the order they were added)."""
        mat, mask = self.matrix()
        return mat[mask].tobytes()


def interleave(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n: int) -> bytes:
    """Rows of several message sets, put at given positions: ``parts`` holds
    ``(positions, matrix, mask)`` per set; the output is the ``n`` rows in position order."""
    w = max((m.shape[1] for _, m, _ in parts), default=0)
    mat = np.zeros((n, w), dtype=np.uint8)
    mask = np.zeros((n, w), dtype=bool)
    for pos, m, k in parts:
        mat[pos, :m.shape[1]] = m
        mask[pos, :k.shape[1]] = k
    return mat[mask].tobytes()

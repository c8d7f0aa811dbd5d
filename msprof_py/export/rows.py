"""Vectorised text rows: build millions of CSV lines or JSON events without per-row Python.

A row is a sequence of *segments*.  Each segment becomes a fixed-width block of bytes in a
``(rows, width)`` uint8 matrix, padded with NUL bytes; the finished matrix is flattened and the
NULs are dropped, which leaves the variable-length text.  NUL never occurs in UTF-8 text or in
JSON/CSV output, so the padding is unambiguous.  Constant segments are filled once per chunk
buffer, variable ones (integers, ``ns -> "us.nnn"`` decimals, categorical strings) are computed
with numpy arithmetic and fancy indexing.

Usage::

    rb = RowBuilder(n)
    rb.lit('{"name":').cat(codes, json_names).lit(',"ts":"').us3(start_ns).lit('"}')
    for chunk in rb.chunks(): fp.write(chunk)
"""
from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pandas as pd

# "000".."999" as bytes: three digits per table lookup
_D3 = np.array([[ord(c) for c in f"{i:03d}"] for i in range(1000)], dtype=np.uint8)
_POW10 = np.array([10**k for k in range(1, 19)], dtype=np.int64)
CHUNK_ROWS = 1 << 16
# threads rendering chunks in parallel (MSPROF_PY_THREADS overrides; 1 = serial)
WORKERS = int(os.environ.get("MSPROF_PY_THREADS", "0")) or min(4, os.cpu_count() or 1)

Fill = Callable[[int, int], np.ndarray]  # (start, stop) -> (stop-start, width) uint8 block


def digit_count(v: np.ndarray) -> np.ndarray:
    """Number of decimal digits of each non-negative int64 (0 has one digit)."""
    return np.searchsorted(_POW10, v, side="right") + 1


_TABLES: dict[str, np.ndarray] = {}


def _six_digit_tables() -> tuple[np.ndarray, np.ndarray]:
    """0..999999 as 6 bytes: right-aligned with NUL padding, and zero-padded ("000042")."""
    if not _TABLES:
        v = np.arange(1_000_000, dtype=np.int64)
        zero = np.empty((len(v), 6), dtype=np.uint8)
        for j in range(6):
            zero[:, 5 - j] = (v // 10**j) % 10 + 48
        nul = zero.copy()
        nd = digit_count(v)
        nul[np.arange(6)[None, :] < (6 - nd)[:, None]] = 0
        _TABLES["nul"], _TABLES["zero"] = nul, zero
    return _TABLES["nul"], _TABLES["zero"]


def uint_block(v: np.ndarray, width: int) -> np.ndarray:
    """Right-aligned decimal digits of non-negative ints, leading zeros replaced by NUL.

    Six digits per table lookup (a 6 MB table built once), so an epoch-µs value costs three
    gathers and two divisions instead of one division per digit."""
    v = np.asarray(v, dtype=np.int64)
    nul, zero = _six_digit_tables()
    if width <= 6:
        return nul[v][:, 6 - width:]
    hi, lo = np.divmod(v, 1_000_000)
    head = np.where((hi > 0)[:, None], uint_block(hi, width - 6), 0).astype(np.uint8)
    tail = np.where((hi > 0)[:, None], zero[lo], nul[lo])
    return np.hstack([head, tail])


def int_block(v: np.ndarray) -> np.ndarray:
    """Decimal text of signed ints as a NUL-padded block."""
    v = np.asarray(v, dtype=np.int64)
    if len(v) == 0:
        return np.zeros((0, 1), dtype=np.uint8)
    neg = v < 0
    mag = np.abs(v)
    width = int(digit_count(mag).max())
    digits = uint_block(mag, width)
    if not neg.any():
        return digits
    sign = np.where(neg, ord("-"), 0).astype(np.uint8)[:, None]
    # put the sign right before the first digit: NULs around it vanish anyway
    return np.hstack([sign, digits])


def us3_block(ns: np.ndarray) -> np.ndarray:
    """Integer nanoseconds as microseconds with exactly three decimals: 1234567 -> ``1234.567``.

    This is msprof's ``DivideByPowersOfTenWithPrecision``: integer arithmetic, no float rounding.
    """
    ns = np.asarray(ns, dtype=np.int64)
    neg = ns < 0
    mag = np.abs(ns)
    whole = int_block(mag // 1000)
    frac = _D3[mag % 1000]
    dot = np.full((len(ns), 1), ord("."), dtype=np.uint8)
    parts = [whole, dot, frac]
    if neg.any():
        parts.insert(0, np.where(neg, ord("-"), 0).astype(np.uint8)[:, None])
    return np.hstack(parts)


def text_table(values: Sequence[str]) -> np.ndarray:
    """Strings -> ``(len(values), maxlen)`` NUL-padded UTF-8 matrix (for :meth:`RowBuilder.cat`)."""
    encoded = [s.encode("utf-8") for s in values]
    if any(b"\0" in b for b in encoded):  # NUL is the padding byte: callers escape it first
        raise ValueError("row text must not contain NUL characters; escape them first")
    width = max((len(b) for b in encoded), default=0)
    mat = np.zeros((len(encoded), max(width, 1)), dtype=np.uint8)
    for i, b in enumerate(encoded):  # once per distinct string, not per row
        mat[i, :len(b)] = np.frombuffer(b, dtype=np.uint8)
    return mat


class RowBuilder:
    """Collects segments for ``n`` rows and yields the joined text in byte chunks."""

    def __init__(self, n: int) -> None:
        self.n = int(n)
        self._segs: list[tuple[int, bytes | None, Fill | None]] = []

    # -- segments ---------------------------------------------------------------------------
    def lit(self, text: str) -> "RowBuilder":
        b = text.encode("utf-8")
        if self._segs and self._segs[-1][1] is not None:  # merge adjacent literals
            w, prev, _ = self._segs.pop()
            b = prev + b
        self._segs.append((len(b), b, None))
        return self

    def block(self, width: int, fill: Fill) -> "RowBuilder":
        self._segs.append((width, None, fill))
        return self

    def int(self, values: np.ndarray) -> "RowBuilder":
        """Signed integers as decimal text."""
        v = np.asarray(values, dtype=np.int64)
        if len(v) and v.min() == v.max():  # one value for every row: plain text
            return self.lit(str(int(v[0])))
        width = int_block(v[:0] if len(v) == 0 else np.array([v.max(), v.min()])).shape[1]
        return self.block(width, lambda a, b: _fit(int_block(v[a:b]), width))

    def us3(self, ns: np.ndarray) -> "RowBuilder":
        """Integer ns as ``us.nnn``."""
        v = np.asarray(ns, dtype=np.int64)
        width = us3_block(np.array([v.max(), v.min()])).shape[1] if len(v) else 5
        return self.block(width, lambda a, b: _fit(us3_block(v[a:b]), width))

    def cat(self, codes: np.ndarray, table: Sequence[str] | np.ndarray) -> "RowBuilder":
        """``table[codes[i]]`` per row; ``table`` holds the already escaped/quoted texts."""
        mat = table if isinstance(table, np.ndarray) else text_table(table)
        c = np.asarray(codes, dtype=np.intp)
        return self.block(mat.shape[1], lambda a, b: mat[c[a:b]])

    def strings(self, values: pd.Series | np.ndarray | Sequence[str],
                encode: Callable[[str], str] = str) -> "RowBuilder":
        """Per-row strings, factorised first so each distinct value is encoded once."""
        codes, uniques = pd.factorize(pd.Series(values, dtype=object), sort=False)
        if len(uniques) == 0:
            uniques = pd.Index([""])
        return self.cat(codes, [encode(str(u)) for u in uniques])

    # -- output -----------------------------------------------------------------------------
    def _buffer(self, rows: int) -> tuple[np.ndarray, np.ndarray]:
        width = sum(w for w, _, _ in self._segs)
        buf = np.zeros((rows, width), dtype=np.uint8)
        offsets = np.cumsum([0] + [w for w, _, _ in self._segs])
        for (w, lit, _), off in zip(self._segs, offsets):
            if lit is not None:  # constant text is written once per buffer, not per chunk
                buf[:, off:off + w] = np.frombuffer(lit, dtype=np.uint8)
        return buf, offsets

    def _render(self, buf: np.ndarray, offsets: np.ndarray, start: int, stop: int) -> bytes:
        view = buf[:stop - start]
        for (w, lit, fill), off in zip(self._segs, offsets):
            if fill is not None:
                view[:, off:off + w] = fill(start, stop)
        return view.tobytes().replace(b"\0", b"")

    def chunks(self, chunk_rows: int = CHUNK_ROWS, workers: int | None = None) -> Iterator[bytes]:
        """The rows' text in order, ``chunk_rows`` rows per chunk.  With ``workers`` > 1, chunks
        are rendered on a thread pool (numpy releases the GIL for most of the work)."""
        if self.n == 0:
            return
        rows = min(chunk_rows, self.n)
        starts = list(range(0, self.n, rows))
        nworkers = WORKERS if workers is None else workers
        if nworkers <= 1 or len(starts) < 3:
            buf, offsets = self._buffer(rows)
            for start in starts:
                yield self._render(buf, offsets, start, min(start + rows, self.n))
            return
        local = threading.local()

        def job(start: int) -> bytes:
            if not hasattr(local, "buf"):
                local.buf, local.offsets = self._buffer(rows)
            return self._render(local.buf, local.offsets, start, min(start + rows, self.n))

        with ThreadPoolExecutor(max_workers=nworkers) as pool:
            pending: deque[Future[bytes]] = deque()
            for start in starts:
                pending.append(pool.submit(job, start))
                if len(pending) > 2 * nworkers:  # bounded: a few chunks in flight, not the file
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()

    def to_bytes(self) -> bytes:
        return b"".join(self.chunks())


def _fit(block: np.ndarray, width: int) -> np.ndarray:
    """Left-pad a block with NUL columns to ``width`` (chunks may need fewer digits)."""
    if block.shape[1] == width:
        return block
    pad = np.zeros((block.shape[0], width - block.shape[1]), dtype=np.uint8)
    return np.hstack([pad, block])

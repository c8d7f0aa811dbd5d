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
from typing import Any
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pandas as pd

from msprof_py.export.digits import gather, int_width, round4, us3_width, write_int, write_us3

Fill = Callable[[np.ndarray, int, int], None]  # (out view (rows, width), start, stop): write the rows' text
CHUNK_ROWS = 1 << 14
# threads rendering chunks in parallel (MSPROF_PY_THREADS overrides; 1 = serial)
_ASKED = int(os.environ.get("MSPROF_PY_THREADS", "0"))
WORKERS = _ASKED or min(4, os.cpu_count() or 1)


def render_workers() -> int:
    """Threads for a table's chunks now: :data:`WORKERS`, at most the cores the calling thread
    may run on (unless ``MSPROF_PY_THREADS`` asked): on one core (an export run under ``taskset``,
    a container's CPU set) a pool only adds its hand-overs of the GIL to the same work, so every
    chunk is then rendered by the thread that asks for it."""
    if _ASKED or WORKERS <= 1 or not hasattr(os, "sched_getaffinity"):
        return WORKERS
    try:
        return max(1, min(WORKERS, len(os.sched_getaffinity(0))))
    except OSError:
        return WORKERS


def text_table(values: Sequence[str]) -> np.ndarray:
    """Strings -> ``(len(values), maxlen)`` NUL-padded UTF-8 matrix."""
    return _bytes_table(encode_all(values))


def encode_all(values: Sequence[str]) -> list[bytes]:
    """UTF-8 of each string, encoded as one joined string and split again (no Python call per
    value).  NUL is the padding byte of the row buffers, so a string holding one is refused
    (callers escape it first)."""
    if not values:
        return []
    encoded = "\0".join(values).encode("utf-8").split(b"\0")
    if len(encoded) != len(values):
        raise ValueError("row text must not contain NUL characters; escape them first")
    return encoded


def _bytes_table(encoded: list[bytes]) -> np.ndarray:
    """NUL-free byte strings -> ``(len, maxlen)`` uint8 matrix, NUL-padded on the right: numpy's
    fixed-width ``S`` dtype is exactly that layout (built in C, no per-byte index arrays)."""
    width = max(1, max(map(len, encoded), default=0))
    return np.array(encoded, dtype=f"S{width}").view(np.uint8).reshape(len(encoded), width)


def code_dtype(n: int) -> type:
    """The smallest signed integer type holding the codes of ``n`` texts (and -1)."""
    return np.int8 if n <= 127 else np.int16 if n <= 32767 else np.int32 if n < 2**31 else np.int64


# adjacent categorical segments are joined into one (see RowBuilder._layout) while the joined
# table stays small: at most this many distinct combinations, and at most one per 8 rows
MERGE_MAX = 1 << 16
MERGE_MAX_BYTES = 8 << 20  # and its padded table (kept while the rows are written) under 8 MiB


def _merge_cats(a: tuple[np.ndarray, list[bytes]], sep: bytes,
                b: tuple[np.ndarray, list[bytes]], n: int) -> tuple[np.ndarray, list[bytes]] | None:
    """Two categorical segments (codes, texts) with the literal ``sep`` between them as one
    segment whose texts are the combinations that occur; None when there would be too many."""
    (ca, ta), (cb, tb) = a, b
    if len(ta) * len(tb) >= 1 << 62:
        return None
    width = max(map(len, ta), default=0) + len(sep) + max(map(len, tb), default=0)
    key = ca.astype(np.int64) * len(tb) + cb
    if len(ta) * len(tb) <= max(1 << 20, 4 * n):  # few possible pairs: mark the ones used
        used = np.zeros(len(ta) * len(tb), dtype=bool)
        used[key] = True
        uniq = np.flatnonzero(used)
        if len(uniq) > min(MERGE_MAX, max(256, n // 8)) or len(uniq) * width > MERGE_MAX_BYTES:
            return None
        code_of = np.zeros(len(used), dtype=code_dtype(len(uniq)))
        code_of[uniq] = np.arange(len(uniq))
        codes = code_of[key]
    else:
        codes, uniq = pd.factorize(key, sort=False)
        if len(uniq) > min(MERGE_MAX, max(256, n // 8)) or len(uniq) * width > MERGE_MAX_BYTES:
            return None
    ia, ib = np.divmod(np.asarray(uniq, dtype=np.int64), len(tb))
    texts = [ta[x] + sep + tb[y] for x, y in zip(ia.tolist(), ib.tolist())]
    return np.asarray(codes).astype(code_dtype(len(uniq)), copy=False), texts


def _cat_block(codes: np.ndarray, texts: list[bytes]) -> tuple[int, None, Fill]:
    mat = _bytes_table(texts)

    def fill(out: np.ndarray, a: int, b: int) -> None:
        gather(out, mat, codes[a:b])

    return mat.shape[1], None, fill


class RowBuilder:
    """Collects segments for ``n`` rows and yields the joined text in byte chunks.

    Categorical segments next to each other (with only a literal between them, e.g. the text
    columns of a CSV row) are rendered as one: each row then costs one gather instead of one per
    column, and the padding is that of the longest *combination* instead of the sum of each
    column's longest text (the NUL padding is most of what the compaction has to scan)."""

    def __init__(self, n: int) -> None:
        self.n = int(n)
        # ("lit", bytes) | ("block", (width, fill)) | ("cat", (codes, texts))
        self._segs: list[tuple[str, Any]] = []
        self._final: list[tuple[int, bytes | None, Fill | None]] | None = None

    # -- segments ---------------------------------------------------------------------------
    def lit(self, text: str) -> "RowBuilder":
        b = text.encode("utf-8")
        if self._segs and self._segs[-1][0] == "lit":  # merge adjacent literals
            b = self._segs.pop()[1] + b
        return self._add("lit", b)

    def _add(self, kind: str, payload: Any) -> "RowBuilder":
        self._segs.append((kind, payload))
        self._final = None
        return self

    def block(self, width: int, fill: Fill) -> "RowBuilder":
        return self._add("block", (width, fill))

    def int(self, values: np.ndarray) -> "RowBuilder":
        """Signed integers as decimal text (int32 stays int32: no copy)."""
        v = np.asarray(values)
        v = v if v.dtype in (np.int32, np.int64) else v.astype(np.int64)
        if len(v) and ((v.ndim == 1 and v.strides[0] == 0) or v.min() == v.max()):  # one value: plain text
            return self.lit(str(int(v[0])))
        return self.block(round4(int_width(v)), lambda out, a, b: write_int(out, v[a:b]))

    def us3(self, ns: np.ndarray) -> "RowBuilder":
        """Integer ns as ``us.nnn``."""
        v = np.asarray(ns, dtype=np.int64)
        return self.block(round4(us3_width(v) - 4) + 4, lambda out, a, b: write_us3(out, v[a:b]))

    def cat(self, codes: np.ndarray, table: Sequence[str]) -> "RowBuilder":
        """``table[codes[i]]`` per row (a code of -1: the last text); ``table`` holds the
        already escaped/quoted texts."""
        texts = encode_all(table)
        c = np.asarray(codes)
        c = c.astype(code_dtype(len(texts)) if c.dtype.kind in "iu" and len(c) else np.intp, copy=False)
        if len(c) and len(texts) and c.min() < 0:
            c = np.where(c < 0, c + len(texts), c).astype(c.dtype, copy=False)
        return self._add("cat", (c, texts))

    def strings(self, values: pd.Series | np.ndarray | Sequence[str],
                encode: Callable[[str], str] = str) -> "RowBuilder":
        """Per-row strings, factorised first so each distinct value is encoded once."""
        codes, uniques = pd.factorize(pd.Series(values, dtype=object), sort=False)
        if len(uniques) == 0:
            uniques = pd.Index([""])
        return self.cat(codes, [encode(str(u)) for u in uniques])

    def _layout(self) -> list[tuple[int, bytes | None, Fill | None]]:
        """(width, literal, fill) per segment, adjacent categoricals joined where that pays."""
        if self._final is not None:
            return self._final
        segs, out, i = self._segs, [], 0
        while i < len(segs):
            kind, p = segs[i]
            i += 1
            if kind == "lit":
                out.append((len(p), p, None))
            elif kind == "block":
                out.append((p[0], None, p[1]))
            else:
                while True:  # join the next [literal] categorical while the table stays small
                    k, sep = i, b""
                    if k < len(segs) and segs[k][0] == "lit":
                        sep, k = segs[k][1], k + 1
                    if k >= len(segs) or segs[k][0] != "cat":
                        break
                    joined = _merge_cats(p, sep, segs[k][1], self.n)
                    if joined is None:
                        break
                    p, i = joined, k + 1
                out.append(_cat_block(*p))
        self._final = out
        return out

    # -- output -----------------------------------------------------------------------------
    def width(self) -> int:
        """Bytes of one row in the render buffer (text and padding)."""
        return sum(w for w, _, _ in self._layout())

    def _buffer(self, rows: int) -> tuple[np.ndarray, np.ndarray]:
        segs = self._layout()
        width = sum(w for w, _, _ in segs)
        buf = np.zeros((rows, width), dtype=np.uint8)
        offsets = np.cumsum([0] + [w for w, _, _ in segs])
        for (w, lit, _), off in zip(segs, offsets):
            if lit is not None:  # constant text is written once per buffer, not per chunk
                buf[:, off:off + w] = np.frombuffer(lit, dtype=np.uint8)
        return buf, offsets

    def _render(self, buf: np.ndarray, offsets: np.ndarray, start: int, stop: int, raw: bool = False) -> Any:
        view = buf[:stop - start]
        for (w, lit, fill), off in zip(self._layout(), offsets):
            if fill is not None:
                fill(view[:, off:off + w], start, stop)
        flat = view.reshape(-1)
        text = flat[flat != 0]  # drop the NUL padding (a numpy mask: bytes.replace is per NUL)
        return text if raw else text.tobytes()

    def chunks(self, chunk_rows: int | None = None, workers: int | None = None, raw: bool = False) -> Iterator[Any]:
        """The rows' text in order, ``chunk_rows`` rows per chunk.  With ``workers`` > 1, chunks
        are rendered on a thread pool (numpy releases the GIL for most of the work).  ``raw``:
        each chunk as the 1-D uint8 array it was compacted into (a buffer ``write()`` takes as
        it is), not copied once more into ``bytes``."""
        if self.n == 0:
            return
        rows = min(chunk_rows or CHUNK_ROWS, self.n)
        starts = list(range(0, self.n, rows))
        nworkers = render_workers() if workers is None else workers
        if nworkers <= 1 or len(starts) < 3:
            buf, offsets = self._buffer(rows)
            for start in starts:
                yield self._render(buf, offsets, start, min(start + rows, self.n), raw)
            return
        local = threading.local()

        def job(start: int) -> Any:
            if not hasattr(local, "buf"):
                local.buf, local.offsets = self._buffer(rows)
            return self._render(local.buf, local.offsets, start, min(start + rows, self.n), raw)

        with ThreadPoolExecutor(max_workers=nworkers) as pool:
            pending: deque[Future[Any]] = deque()
            for start in starts:
                pending.append(pool.submit(job, start))
                if len(pending) > nworkers:  # bounded: one chunk per worker and the one awaited, not the file
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()

    def row_lengths(self, chunk_rows: int = CHUNK_ROWS) -> np.ndarray:
        """Bytes of each row's text (rendered chunk by chunk and counted, not kept)."""
        out = np.empty(self.n, dtype=np.int64)
        if self.n == 0:
            return out
        rows = min(chunk_rows, self.n)
        buf, offsets = self._buffer(rows)
        for start in range(0, self.n, rows):
            stop = min(start + rows, self.n)
            view = buf[:stop - start]
            for (w, _, fill), off in zip(self._layout(), offsets):
                if fill is not None:
                    fill(view[:, off:off + w], start, stop)
            out[start:stop] = np.count_nonzero(view, axis=1)
        return out

    def to_bytes(self) -> bytes:
        return b"".join(self.chunks())

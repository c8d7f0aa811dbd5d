"""Write a summary table as msprof CSV or as a JSON array of ``{header: value}`` objects.

A table is a header plus one :class:`Col` per header cell.  Cells are formatted once, for the
whole column, by :class:`~msprof_py.export.rows.RowBuilder`:

* ``Col.ints``: integers.
* ``Col.us``: integer ns shown as µs with 3 decimals; ``stamp=True`` marks a timestamp, which
  gets msprof's trailing ``\\t`` in CSV (keeps Excel from using scientific notation) and is a
  JSON *string* (a double cannot hold µs.ns of an epoch time exactly).
* ``Col.real3``: thousandths (int64) shown as SQLite prints ``ROUND(x, 3)`` (``1.5``, ``2.0``:
  :mod:`msprof_py.export.real3`), the PMU metrics of op_summary.
* ``Col.lazy``: numbers of one of those kinds made a chunk of rows at a time (:class:`Lazy`), not
  held for every row while the table is written (op_summary's 25 PMU columns).
* ``Col.text``: strings, CSV-quoted where needed; ``quote=True`` always quotes (shape cells,
  as msprof writes them).  Also used for preformatted numbers of small tables (``number=True``
  writes them unquoted in JSON).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

from msprof_py.export.base import write_chunks
from msprof_py.export.digits import int_width, round4, us3_width, write_int, write_us3
from msprof_py.export.real3 import real3_width, write_real3
from msprof_py.export.rows import CHUNK_ROWS, RowBuilder, code_dtype
from msprof_py.export.trace_events import jstr_many


class Lazy:
    """A number column made a chunk of rows at a time: ``get(a, b)`` gives rows ``a:b`` (int32 or
    int64; rows shown as a special text may hold anything within ``bounds``), ``bounds`` the
    (min, max) of every value (what the column's width is made from: a wider range than the
    values' only pads, and the padding is dropped).  The writers read it as an array: ``len``,
    ``min`` / ``max`` and slices."""

    def __init__(self, n: int, bounds: tuple[int, int], get: Callable[[int, int], np.ndarray]) -> None:
        self.n, self.bounds, self.get = int(n), (int(bounds[0]), int(bounds[1])), get

    def __len__(self) -> int:
        return self.n

    def min(self) -> int:
        return self.bounds[0]

    def max(self) -> int:
        return self.bounds[1]

    def __getitem__(self, rows: slice) -> np.ndarray:
        return self.get(rows.start or 0, self.n if rows.stop is None else min(rows.stop, self.n))


@dataclass
class Col:
    kind: str  # "int" | "us" | "real3" | "text"
    values: Any
    stamp: bool = False
    quote: bool = False
    number: bool = False
    na_mask: np.ndarray | None = None  # rows shown as N/A instead of the value (number columns)
    # rows shown as other fixed texts: (codes, texts), code c >= 1 shows texts[c - 1], 0 the value
    special: tuple[np.ndarray, list[str]] | None = None
    suffix: str = ""  # digits written after every number (not after a special text)

    @staticmethod
    def ints(values: Any, na_mask: np.ndarray | None = None) -> "Col":
        return Col("int", _integers(values), na_mask=na_mask)

    @staticmethod
    def us(ns: Any, stamp: bool = False, na_mask: np.ndarray | None = None) -> "Col":
        return Col("us", np.asarray(ns, dtype=np.int64), stamp=stamp, na_mask=na_mask)

    @staticmethod
    def fixed3(thousandths: Any, special: tuple[np.ndarray, list[str]] | None = None, suffix: str = "") -> "Col":
        """``"%.3f"`` of ``thousandths / 1000`` (non-negative) followed by ``suffix`` (digits: e.g.
        ``"000"`` prints 6 decimals of a value whose last 3 are 0), or a fixed text per ``special``."""
        return Col("us", _integers(thousandths), special=special, suffix=suffix)

    @staticmethod
    def real3(thousandths: Any, na_mask: np.ndarray | None = None) -> "Col":
        return Col("real3", _integers(thousandths), na_mask=na_mask)

    @staticmethod
    def lazy(kind: str, values: Lazy, na_mask: np.ndarray | None = None) -> "Col":
        """Numbers of ``kind`` ("int" | "us" | "real3") made a chunk of rows at a time."""
        return Col(kind, values, na_mask=na_mask)

    @staticmethod
    def text(values: Any, quote: bool = False, number: bool = False) -> "Col":
        return Col("text", values, quote=quote, number=number)

    @staticmethod
    def const(value: str, n: int, number: bool = False) -> "Col":
        return Col("text", pd.Categorical.from_codes(np.zeros(n, dtype=np.int64), [value]) if n else [],
                   number=number)


def _integers(values: Any) -> np.ndarray:
    """Signed integers as given (int32 columns stay int32: op_summary holds ~30 of them per
    device while it is written), anything else as int64."""
    v = np.asarray(values)
    return v if v.dtype in (np.int32, np.int64) else v.astype(np.int64)


def csv_cell(s: str, always: bool = False) -> str:
    """RFC 4180 quoting (what Python's csv module and Excel expect).  CSV cannot carry a NUL
    character, so one shows as the four characters ``\\x00``."""
    if "\x00" in s:
        s = s.replace("\x00", "\\x00")
    if always and (s == "N/A" or (len(s) >= 2 and s[0] == '"' and s[-1] == '"')):
        return s  # nothing to quote / already quoted by the producer
    if always or "," in s or '"' in s or "\n" in s or "\r" in s:
        return '"' + s.replace('"', '""') + '"'
    return s


_CSV_SPECIAL = re.compile('[,"\n\r\x00]')


def csv_cells(texts: list[str], always: bool = False) -> list[str]:
    """:func:`csv_cell` of each text; when none needs quoting or escaping (one regex scan of
    them all), the texts themselves, without a Python call per distinct value."""
    if not always and not _CSV_SPECIAL.search("".join(texts)):
        return texts
    return [csv_cell(c, always) for c in texts]


def json_cells(texts: list[str], number: bool) -> list[str]:
    """:func:`_json_text` of each text: with ``number``, texts that ``float`` accepts are
    written as they are (all of them checked by one numpy cast, which calls ``float`` on each),
    the others as JSON strings (one orjson call for all)."""
    if number:
        try:
            np.array(texts, dtype=object).astype(np.float64)
            return texts
        except (ValueError, TypeError):
            return [_json_text(c, True) for c in texts]
    return jstr_many(texts)


def _json_str(s: str) -> str:
    return orjson.dumps(s).decode()


def _json_text(s: str, number: bool) -> str:
    if number:
        try:
            float(s)
            return s
        except ValueError:
            pass
    return _json_str(s)


def _factorize(values: Any) -> tuple[np.ndarray, list[str]]:
    if isinstance(values, pd.Categorical) or isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        cat = pd.Categorical(values)
        cats = [str(c) for c in cat.categories.tolist()]
        # codes stay as small as pandas keeps them (int8 / int16 for most columns): every text
        # column holds its codes for all rows while the table is written
        codes = np.asarray(cat.codes).astype(code_dtype(len(cats) + 1), copy=False)
        if (codes < 0).any():  # NaN -> N/A
            codes = np.where(codes < 0, len(cats), codes).astype(codes.dtype, copy=False)
            cats.append("N/A")
        return codes, cats
    codes, uniques = pd.factorize(pd.Series(values, dtype=object).fillna("N/A"), sort=False)
    return np.asarray(codes).astype(code_dtype(len(uniques)), copy=False), [str(u) for u in uniques]


def _add_cell(rb: RowBuilder, col: Col, json_mode: bool) -> None:
    n = rb.n
    if col.kind == "text":
        codes, cats = _factorize(col.values)
        if json_mode:
            if col.quote:  # the quotes are CSV presentation; JSON strings need none
                cats = [c[1:-1] if len(c) >= 2 and c[0] == c[-1] == '"' else c for c in cats]
            texts = json_cells(cats, col.number)
        else:
            texts = csv_cells(cats, col.quote)
        rb.cat(codes, texts or [""])
        return
    codes, texts = _specials(col)
    quote = json_mode and col.stamp
    if codes is None:
        _number(rb, col.kind, col.values, quote, col.stamp and not json_mode, col.suffix)
        return
    shown = [_json_text(t, True) for t in texts] if json_mode else texts
    # (a column that already holds 0 on its special rows is not copied; a lazy one gives values
    # within its bounds there, and the special texts overwrite them)
    vals = col.values if isinstance(col.values, Lazy) or not col.values[codes != 0].any() \
        else np.where(codes != 0, 0, col.values)
    rb.block(*_special_block(vals, codes, shown, col.kind, quote, col.stamp and not json_mode, col.suffix))


def _specials(col: Col) -> tuple[np.ndarray | None, list[str]]:
    """(codes, texts) of the rows not showing the number (None when every row does)."""
    if col.special is not None and np.any(col.special[0]):
        return col.special
    if col.na_mask is not None and np.any(col.na_mask):
        return np.asarray(col.na_mask, bool).view(np.uint8), ["N/A"]
    return None, []


def _number(rb: RowBuilder, kind: str, vals: np.ndarray, quote: bool, tab: bool, suffix: str = "") -> None:
    if quote:
        rb.lit('"')
    if isinstance(vals, Lazy) and kind != "real3":  # (RowBuilder.int / us3 take whole arrays)
        width_of, write = _WRITERS[kind]
        rb.block(round4(width_of(vals)) if kind == "int" else round4(width_of(vals) - 4) + 4,
                 lambda out, a, b: write(out, vals[a:b]))
    elif kind == "int":
        rb.int(vals)
    elif kind == "real3":
        rb.block(real3_width(vals), lambda out, a, b: write_real3(out, vals[a:b]))
    else:
        rb.us3(vals)
    if suffix:
        rb.lit(suffix)
    if tab:
        rb.lit("\t")
    if quote:
        rb.lit('"')


# the number kinds: (width of a column's widest value, writer into a (rows, width) uint8 view)
_WRITERS = {"int": (int_width, write_int), "us": (us3_width, write_us3), "real3": (real3_width, write_real3)}


def _special_block(vals: np.ndarray, codes: np.ndarray, texts: list[str], kind: str, quote: bool, tab: bool,
                   suffix: str = ""):
    """(width, fill) writing per row the formatted number (code 0, then ``suffix``) or ``texts[code - 1]``."""
    width_of, write = _WRITERS[kind]
    numw = width_of(vals)
    encoded = [np.frombuffer(t.encode(), dtype=np.uint8) for t in texts]
    tail = np.frombuffer(suffix.encode(), dtype=np.uint8)
    body = numw + len(tail) + (2 if quote else 0) + (1 if tab else 0)
    width = max([body] + [len(e) for e in encoded])
    rows = np.zeros((len(texts), width), dtype=np.uint8)  # each text, then NUL padding
    for i, e in enumerate(encoded):
        rows[i, :len(e)] = e

    def fill(out: np.ndarray, a: int, b: int) -> None:
        out[:, :width - body] = 0
        pos = width - body
        if quote:
            out[:, pos] = ord('"')
            pos += 1
        write(out[:, pos:pos + numw], vals[a:b])
        pos += numw
        if len(tail):
            out[:, pos:pos + len(tail)] = tail
            pos += len(tail)
        if tab:
            out[:, pos] = ord("\t")
            pos += 1
        if quote:
            out[:, pos] = ord('"')
        c = codes[a:b]
        for i in range(len(texts)):
            out[c == i + 1] = rows[i]

    return width, fill


def csv_texts(col: Col) -> list[str]:
    """The CSV cells of one column, as strings (for checks; the writers never make them)."""
    rb = RowBuilder(_length([col]))
    _add_cell(rb, col, json_mode=False)
    rb.lit("\n")
    return rb.to_bytes().decode().split("\n")[:-1]


def write_table(path_stem: Path, header: Sequence[str], cols: Sequence[Col], fmt: str = "csv") -> Path:
    """Write ``{path_stem}.csv`` (msprof CSV) or ``{path_stem}.json`` (array of objects)."""
    assert len(header) == len(cols), (header, len(cols))
    n = _length(cols)
    if fmt == "json":
        path = path_stem.with_suffix(".json")
        rb = RowBuilder(n)
        for i, (h, c) in enumerate(zip(header, cols)):
            rb.lit(("{" if i == 0 else ",") + _json_str(h) + ":")
            _add_cell(rb, c, json_mode=True)
        rb.lit("},\n")
        return write_chunks(path, _json_array(rb, _chunk_rows(rb)))
    path = path_stem.with_suffix(".csv")
    rb = RowBuilder(n)
    for i, c in enumerate(cols):
        if i:
            rb.lit(",")
        _add_cell(rb, c, json_mode=False)
    rb.lit("\n")
    head = (",".join(csv_cell(h) for h in header) + "\n").encode()
    return write_chunks(path, _prepend(head, rb.chunks(_chunk_rows(rb), raw=True)))  # (arrays: no bytes copy)


# rows rendered at a time: a buffer of about this many bytes per renderer thread (a wide table,
# op_summary with PMU columns: ~600 bytes a row, renders 4 k rows a chunk instead of 16 k; its
# buffers, their compacted copies and the chunks in flight are ~40 MB less at the same CPU)
CHUNK_BYTES = 2 << 20


def _chunk_rows(rb: RowBuilder) -> int:
    return max(1024, min(CHUNK_ROWS, CHUNK_BYTES // max(1, rb.width())))


def _length(cols: Sequence[Col]) -> int:
    lens = {len(c.values) for c in cols}
    if len(lens) > 1:
        raise ValueError(f"columns of different lengths: {sorted(lens)}")
    return lens.pop() if lens else 0


def _prepend(head: bytes, chunks):
    yield head
    yield from chunks


def _json_array(rb: RowBuilder, chunk_rows: int | None = None):
    """``[`` + rows + ``]``, with the last row's ``,\\n`` turned into ``\\n]``."""
    yield b"["
    prev = None
    for c in rb.chunks(chunk_rows):
        if prev is not None:
            yield prev
        prev = c
    if prev is None:
        yield b"]\n"
    else:
        yield prev[:-2] + b"\n]\n"

"""SQLite's text of ``ROUND(x, 3)`` for whole columns, with no Python string per value.

msprof's C++ analysis reads PMU metrics back from SQLite as ``ROUND(value, 3)`` and prints
them as SQLite prints a REAL: the shortest digits, at least one decimal (``0.5``, ``12.0``,
``3.142``).  For a value below 1e9 that text is ``k / 1000`` written with its trailing zeros
dropped (one ``0`` kept), ``k`` the rounded value in thousandths, so a column is rendered from
an int64 array ``k`` by the row renderer: ``k`` as µs with three decimals, then the trailing zeros
turned into NUL padding (which the renderer drops).

``sqlite_real_text`` (pmu_export) stays the per-value definition; a differential test checks
this against it.
"""
from __future__ import annotations

import sqlite3

import numpy as np

from msprof_py.export.digits import us3_width, write_us3

_LIMIT = 1e9  # below it a double's step is far under 0.0005: k / 1000 is exact text


def round3_thousandths(values: np.ndarray, fixes: bool = False) -> tuple[np.ndarray, ...]:
    """``(k, exact)``: ``k`` (int64) is SQLite's ``ROUND(x, 3)`` of each value in thousandths,
    valid where ``exact`` (finite and below 1e9 in magnitude; the others, rare, need the text
    of :func:`~msprof_py.export.pmu_export.sqlite_real_text`).  ``fixes``: also the positions
    where ``k`` is not :func:`round3_plain`'s number (the values SQLite rounds otherwise).

    numpy's rounding agrees with SQLite's except next to a tie (x * 1000 within a few ulps of
    k + 0.5); those values are rounded by SQLite itself.

    ``np.round(x, 3)`` is ``rint(x * 1000) / 1000``, and that times 1000 rounds back to
    ``m = rint(x * 1000)`` below 1e9 (``|m| < 1e12``), so ``k`` is ``m`` there; the values next
    to a tie are found from ``|y - m|`` (``y = x * 1000``: exact, ``m`` is within 0.5 of ``y``)
    with a margin, then tested as before (``|y - floor(y) - 0.5|`` against the tolerance): one
    product and one rint per value, not two of each and a floor (op_summary: 21 metric columns
    of every task with PMU data)."""
    v = np.asarray(values, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        y = v * 1000.0
        m = np.rint(y)
        exact = np.abs(m) < _LIMIT * 1000.0
        every = bool(exact.all())
        if every:  # the usual column: no masked gather and scatter
            k = m.astype(np.int64)
            top = max(float(y.max(initial=0.0)), -float(y.min(initial=0.0)))
        else:
            k = np.zeros(len(v), np.int64)
            k[exact] = m[exact].astype(np.int64)
            top = float(np.abs(y[exact]).max(initial=0.0))
        # a tie's tolerance grows with |y|: its largest (over the exact values) bounds every
        # value's, so only the few values within it are tested one by one
        tol = 16 * np.spacing(top) + 1e-9
        d = np.abs(y - m)  # (0.5 - d is the distance to the tie, within 1e-15 of the test's)
        near = np.flatnonzero(d >= 0.5 - tol - 1e-6) if every else np.flatnonzero(exact & (d >= 0.5 - tol - 1e-6))
        del d, m
        if len(near):
            yn = y[near]
            off = np.abs(yn - np.floor(yn) - 0.5)
            near = near[(off <= tol) & (off <= 16 * np.spacing(np.abs(yn)) + 1e-9)]
        del y
    fixed = []
    if len(near):
        con = sqlite3.connect(":memory:")
        try:
            for i in near.tolist():
                t = con.execute("SELECT CAST(ROUND(?, 3) AS TEXT)", (float(v[i]),)).fetchone()[0]
                y1 = float(t) * 1000.0
                if abs(y1) < _LIMIT * 1000.0 and abs(y1 - round(y1)) < 1e-6:
                    if int(round(y1)) != k[i]:
                        k[i] = int(round(y1))
                        fixed.append(i)
                else:  # not a 3-decimal text after all: let the caller print it
                    exact[i] = False
        finally:
            con.close()
    if fixes:
        return k, exact, np.array(fixed, np.int64)
    return k, exact


def round3_plain(values: np.ndarray) -> np.ndarray:
    """numpy's ``ROUND(x, 3)`` in thousandths, ``rint(x * 1000)`` (``np.round(x, 3)`` is that
    divided by 1000, which times 1000 rounds back to it below 1e9): :func:`round3_thousandths`
    where it finds no value next to a tie and every one exact (callers check that once, then
    make chunks of a column with this)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.rint(np.asarray(values, np.float64) * 1000.0).astype(np.int64)


def real3_width(k: np.ndarray) -> int:
    """Characters for the widest of ``k`` thousandths as ``[-]whole.ddd``."""
    return us3_width(k)


def _trimmed_decimals() -> np.ndarray:
    """``.ddd`` for 0..999 with the trailing zeros as NUL padding, the first decimal kept
    (``.500`` -> ``.5``, ``.000`` -> ``.0``, ``.250`` -> ``.25``): a ``(1000, 4)`` uint8 table."""
    texts = []
    for f in range(1000):
        d = f"{f:03d}"
        d = d.rstrip("0") or "0"
        texts.append(("." + d).encode().ljust(4, b"\0"))
    return np.frombuffer(b"".join(texts), np.uint8).reshape(1000, 4)


_DECIMALS = _trimmed_decimals()


def write_real3(out: np.ndarray, k: np.ndarray) -> None:
    """Thousandths ``k`` into ``out`` (``(len(k), width)`` uint8, width from :func:`real3_width`)
    as SQLite prints ``k / 1000``: ``1500 -> 1.5``, ``2000 -> 2.0``, ``-250 -> -0.25``: the
    ``%.3f`` text of the µs writer with its decimals from a table whose trailing zeros are
    padding (``.000`` keeps its first 0), no pass over the written text."""
    write_us3(out, k, _DECIMALS)

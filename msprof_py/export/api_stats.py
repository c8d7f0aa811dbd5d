"""api_statistic numbers: per (API name, level) the count, total, average, min, max and variance
of the call durations, computed the way the analysis that would export the capture computes them.

* msprof's C++ analysis (``platform_version`` 5/15/16 with an all-export driver): calls whose raw
  begin counter is 0 are dropped when the API data is read (``api_event_db_dumper.cpp``); then
  ``api_statistic_assembler.cpp``: each duration ``(end - start) ns / 1000`` as a double rounded
  with :func:`cpp_round`, summed in order, ``avg = cpp_round(sum / n)``, ``variance =
  cpp_round(Σ (d - avg)² / n)``, printed ``%.3f`` without trailing zeros.
* msprof's Python analysis (every other capture; what msprof wrote on the 310B in 2024,
  ``viewer/api_statistic_viewer.py`` ApiStatisticViewer with ``ApiDataViewModel``): every call is
  counted, also one that began before profiling; each call's duration is its raw counter
  difference converted on its own, ``ticks / (CPU Frequency x 1e6) x 1e6`` µs as a Python float
  (``InfoConfReader.get_host_duration``; ``ticks x 1e6 / 1e9`` when the host counter is ns); then
  ``sum = round(Σ d, 3)`` (summed in file order), ``avg = round(sum / n, 3)``, min and max rounded
  to 3, and ``variance = round(Σ round((d - avg)², 3) / n, 3)``.  Python's ``round`` rounds the
  exact binary value; :func:`py_round` reproduces it.  The CSV shows Python's ``str`` of those
  floats (``0.0``, ``2.5``, ``8.520987376418883e+20``): :func:`py_str`.

Checked against the api_event.db msprof left in the 25 310B captures of shared/realdata: all 380
api_statistic rows equal to the character.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from msprof_py.parse.py_clock import py_round

HOST_NS_FREQ_HZ = 1e9  # msprof's HOST_DEFAULT_FREQ: no valid host frequency => the counter is ns


def cpp_round(values: np.ndarray, ndigits: int = 3) -> np.ndarray:
    """msprof's C++ ``RoundToDecimalPlaces``: ``std::round(x * 10**n) / 10**n`` (the product in
    double, halves away from zero)."""
    y = np.asarray(values, np.float64) * 10.0 ** ndigits
    t = np.trunc(y)
    return (t + np.where(np.abs(y - t) >= 0.5, np.sign(y), 0.0)) / 10.0 ** ndigits


EXACT_NS = 2**51  # below this many ns a duration's µs double is its own RoundToDecimalPlaces (ns_to_us)


def ns_to_us(dur_ns: np.ndarray) -> np.ndarray:
    """``cpp_round(dur_ns / 1000.0)``, each duration in µs as msprof's C++ analysis rounds it, for
    integer ns.  For ``|n| < 2**51`` the double ``x = n / 1000.0`` times 1000 is within
    ``|n| * 2**-52 < 0.5`` of ``n`` (two roundings), so ``std::round`` gives ``n`` back and ``n /
    1000.0`` is ``x`` again: the rounding is the identity, bit for bit, and is skipped (4.2 M API
    calls on the single-op million: ~0.1 s of the tail); larger values are rounded."""
    n = np.asarray(dur_ns, np.int64)
    us = n / 1000.0
    if len(n) and (int(n.max()) >= EXACT_NS or int(n.min()) <= -EXACT_NS):
        return cpp_round(us)
    return us


def py_round_square(d: np.ndarray, ndigits: int = 3) -> np.ndarray:
    """Python's ``round(x ** 2, ndigits)`` of every float64: ``x ** 2`` is libm's ``pow``, which
    can differ from the correctly rounded ``x * x`` by one ulp; that ulp shows only when the square
    is past 2**40 or next to a rounding tie, and those values are computed by Python itself."""
    d = np.asarray(d, np.float64)
    sq = d * d
    out = py_round(sq, ndigits)
    y = sq * 10.0 ** ndigits
    frac = y - np.floor(y)
    doubtful = (sq >= 2.0**40) | (np.abs(frac - 0.5) <= 8 * np.spacing(np.abs(y))) | ~np.isfinite(sq)
    for i in np.flatnonzero(doubtful):
        out[i] = round(float(d[i]) ** 2, ndigits)
    return out


def py_str(values: np.ndarray) -> list[str]:
    """Python's ``str`` of each float (one per group: small tables only)."""
    return [str(float(x)) for x in np.asarray(values, np.float64).tolist()]


def host_freq_hz(devices: pd.DataFrame) -> float:
    """msprof's host frequency in Hz: ``float(CPU Frequency) * 1e6`` of the host dir's info.json
    (the devices table's host row, else any row), or 1e9 when the counter is ns."""
    if len(devices) == 0 or "host_cpu_frequency_mhz" not in devices:
        return HOST_NS_FREQ_HZ
    rows = devices[pd.to_numeric(devices["device_id"], errors="coerce") == 64]
    vals = pd.to_numeric((rows if len(rows) else devices)["host_cpu_frequency_mhz"], errors="coerce").dropna()
    if not len(vals) or not vals.iloc[0] > 0:
        return HOST_NS_FREQ_HZ
    return float(vals.iloc[0]) * 1e6


def text_ranks(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """(each value's index into the sorted distinct texts, those texts as an object array): the
    text of a value is its ``str`` (a missing one "nan", as numpy's ``astype(str)`` prints it).
    A categorical's strings are made and sorted once per category, not per row."""
    cat = values if isinstance(values, pd.Categorical) else pd.Categorical(np.asarray(values, dtype=object))
    texts = np.append(np.asarray(cat.categories, dtype=object).astype(str), "nan")
    uniq, inverse = np.unique(texts, return_inverse=True)
    codes = np.asarray(cat.codes, np.int64)
    return inverse.reshape(-1)[np.where(codes < 0, len(texts) - 1, codes)], uniq.astype(object)


DENSE_LIMIT = 1 << 16  # possible (name, level) pairs numbered with a flag array rather than a sort


def group_keys(name: Any, level: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Groups of (name, level) numbered in name-then-level order of their texts: (each row's
    group, the groups' names, their levels)."""
    n_rank, n_text = text_ranks(name)
    l_rank, l_text = text_ranks(level)
    key = n_rank * len(l_text) + l_rank
    pairs = len(n_text) * len(l_text)
    if pairs <= DENSE_LIMIT or pairs <= 4 * len(key):  # a flag per possible pair: no sort of the rows
        seen = np.zeros(pairs, dtype=bool)
        seen[key] = True
        present = np.flatnonzero(seen)
        number = np.cumsum(seen) - 1
        keys = number[key]
    else:
        present, keys = np.unique(key, return_inverse=True)
        keys = keys.reshape(-1)
    return keys, n_text[present // len(l_text)], l_text[present % len(l_text)]


def _min_max(us: np.ndarray, keys: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Each group's min and max of ``us``; ``keys`` number the groups 0..n_groups-1, every one
    present (:func:`group_keys`), so they are the grouper's codes as they are (no hashing of
    4.2 M keys again per aggregation)."""
    by = pd.Series(us).groupby(pd.Categorical.from_codes(keys, categories=pd.RangeIndex(n_groups)), observed=False)
    return by.min().to_numpy(), by.max().to_numpy()


def api_stats_frame(level: Any, name: Any, dur_ns: np.ndarray, python_path: bool = False,
                    dur_ticks: np.ndarray | None = None, freq_hz: float = HOST_NS_FREQ_HZ) -> pd.DataFrame:
    """One row per (name, level), sorted by name then level (msprof's ``ORDER BY api_name,
    level``): ``count`` and, in µs as float64, ``total``, ``avg``, ``min``, ``max``, ``var`` (µs²).

    ``dur_ns``: each call's duration in ns (the C++ rule); ``dur_ticks`` / ``freq_hz``: its raw
    host counter difference and the host frequency (the Python rule; without ticks the ns are used).
    ``level`` / ``name``: arrays or categoricals (grouped by their texts, :func:`group_keys`)."""
    keys, names, levels = group_keys(name, level)
    n_groups = len(names)
    count = np.bincount(keys, minlength=n_groups)
    out = pd.DataFrame({"name": names, "level": levels, "count": count})
    if python_path:
        if dur_ticks is not None:
            t = np.asarray(dur_ticks, np.float64)
            us = t / freq_hz * 1e6 if freq_hz != HOST_NS_FREQ_HZ else t * 1e6 / HOST_NS_FREQ_HZ
        else:
            us = np.asarray(dur_ns, np.float64) / 1000.0
        # np.bincount adds in input (file) order, as Python's sum over the rows of one group
        total = py_round(np.bincount(keys, weights=us, minlength=n_groups))
        avg = py_round(total / count)
        dev = py_round_square(us - avg[keys])
        out["total"], out["avg"] = total, avg
        low, high = _min_max(us, keys, n_groups)
        out["min"], out["max"] = py_round(low), py_round(high)
        out["var"] = py_round(np.bincount(keys, weights=dev, minlength=n_groups) / count)
        return out
    # C++: durations as doubles of µs, rounded (RoundToDecimalPlaces), summed in order, the
    # average rounded, the population variance of the rounded durations around it, rounded
    us = ns_to_us(dur_ns)
    total = np.bincount(keys, weights=us, minlength=n_groups)
    avg = cpp_round(total / count)
    dev = us - avg[keys]
    out["total"], out["avg"] = total, avg
    out["min"], out["max"] = _min_max(us, keys, n_groups)
    out["var"] = cpp_round(np.bincount(keys, weights=dev * dev, minlength=n_groups) / count)
    return out

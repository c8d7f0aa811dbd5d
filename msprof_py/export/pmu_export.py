"""Device counters in the exports: op_summary PMU columns and the "AI Core Freq" timeline counter
(the unified DB's TASK_PMU_INFO and AICORE_FREQ tables: :mod:`msprof_py.export.pmu_db`).  Reads the session's ``pmu`` and
``aicore_freq`` tables (:mod:`msprof_py.parse.pmu`); only formats.

op_summary, as msprof's C++ MetricProcessor / OpSummaryAssembler write it (910B):
headers renamed by ``ModifySummaryHeaders``, msprof's UNSUPPORTED_HEADER columns dropped, values
``ROUND(x, 3)`` printed as SQLite prints a REAL (``0.0``, ``0.941``), cycle counts as integers,
``cube_utilization(%)`` = ``aic_total_cycles / (aic_frequency * ai_core_num) * 100 / duration``
with 3 fixed decimals (``0`` for a zero duration), and ``N/A`` in every PMU column of a task
without PMU data (AI CPU tasks, communication rows).  Other chips (msprof's Python path): un-prefixed
columns and ``memory_bound`` = ``mte2 / max(vec, mac)`` of the rounded ratios.
"""
from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.export.rows import RowBuilder
from msprof_py.export.real3 import round3_plain, round3_thousandths
from msprof_py.export.table_writer import Col, Lazy
from msprof_py.export.trace_events import Counters, Meta, format_pid
from msprof_py.parse.keys import first_match
from msprof_py.parse.pmu import metrics as M
from msprof_py.parse.pmu.table import CUBE_BASE, KEY_COLS
from msprof_py.parse.session import Session

JOIN = ["stream_id", "task_id", "context_id", "start_ns"]
SORT_AICORE_FREQ_AFTER_HW = 1  # msprof puts "AI Core Freq" right after "Ascend Hardware"


def _pmu(session: Session, device_id: int | None = None) -> pd.DataFrame:
    p = session.pmu
    if not len(p) or len(p.columns) <= len(KEY_COLS):
        return pd.DataFrame(columns=KEY_COLS)
    if device_id is not None:
        p = p[p["device_id"].to_numpy(np.int64) == device_id]
    # dropna(axis=1, how="all") without its mask of every cell (16 MB for 500 k rows)
    keep = [c for c in p.columns if p[c].notna().any()]
    return p if len(keep) == len(p.columns) else p[keep]


def metric_columns(p: pd.DataFrame) -> list[str]:
    return [c for c in p.columns if c not in KEY_COLS and c != CUBE_BASE]


def match_rows(p: pd.DataFrame, rows: pd.DataFrame) -> np.ndarray:
    """Index into ``p`` of each of ``rows`` (same stream, task, context, start), else -1."""
    if not len(p) or not len(rows):
        return np.full(len(rows), -1, np.int64)
    left_cols = [pd.to_numeric(rows[k], errors="coerce").fillna(-2).to_numpy(np.int64) for k in JOIN]
    right_cols = [p[k].to_numpy(np.int64) for k in JOIN]
    got = first_match(left_cols, right_cols)  # (a sort and a search: 4 columns of 1 M rows hashed took ~0.3 s)
    if got is not None:
        return got
    left = pd.DataFrame(dict(zip(JOIN, left_cols)))
    right = pd.DataFrame(dict(zip(JOIN, right_cols))).assign(_i=np.arange(len(p)))
    m = left.merge(right.drop_duplicates(JOIN), on=JOIN, how="left")
    return m["_i"].fillna(-1).to_numpy(np.int64)


def sqlite_real_text(values: np.ndarray) -> np.ndarray:
    """``ROUND(x, 3)`` as SQLite prints a REAL: shortest digits, at least one decimal.

    numpy's rounding agrees with SQLite's except next to a tie (x * 1000 within a few ulps of
    k + 0.5), where the two round the binary value differently; those rare values are rounded
    by SQLite itself, so the result is SQLite's on every input."""
    v = np.asarray(values, np.float64)
    r = np.round(v, 3) + 0.0
    # "%.3f" of r is k/1000 printed with 3 decimals, k = r * 1000 as an integer, wherever the
    # double's step is far below 0.0005 (|r| < 1e9): printed by integer arithmetic then; others
    # (huge, NaN, inf) by np.char.mod
    fast = np.abs(r) < 1e9
    s = np.empty(len(v), dtype=object)
    if fast.any():
        k = np.rint(r[fast] * 1000.0).astype(np.int64)
        s[fast] = [t.rstrip("0") for t in RowBuilder(len(k)).us3(k).lit("\n").to_bytes().decode().split("\n")[:-1]]
    if not fast.all():
        s[~fast] = np.char.rstrip(np.char.mod("%.3f", r[~fast]), "0")
    s = np.array([t + "0" if t.endswith(".") else t for t in s.tolist()], dtype=str)
    scaled = v * 1000.0
    near_tie = np.abs(scaled - np.floor(scaled) - 0.5) <= 16 * np.spacing(np.abs(scaled)) + 1e-9
    if near_tie.any():
        s = s.astype(object)
        con = sqlite3.connect(":memory:")
        try:
            for i in np.flatnonzero(near_tie):
                s[i] = con.execute("SELECT CAST(ROUND(?, 3) AS TEXT)", (float(v[i]),)).fetchone()[0]
        finally:
            con.close()
        s = s.astype(str)
    return s


def op_summary_columns(session: Session, device_id: int, tasks: pd.DataFrame, n_comm: int, order: np.ndarray,
                       dur_ns: np.ndarray) -> tuple[list[str], list[Col]]:
    """PMU headers and columns for op_summary.  ``tasks``: the op rows (before the comm rows);
    ``order``: the row order of [tasks, comm]; ``dur_ns``: durations in that final order.

    The metric and cycle columns are made a chunk of rows at a time while the table is written
    (:class:`~msprof_py.export.table_writer.Lazy`: each row's PMU row, gathered from the
    session's ``pmu`` table): 25 columns of every row held at once were the export's peak."""
    p = _pmu(session, device_id)
    names = metric_columns(p)
    if not names:
        return [], []
    v4 = "aic_total_cycles" in names
    if v4:
        names = [n for n in names if n not in M.UNSUPPORTED]
    idx = match_rows(p, tasks)
    hit = idx >= 0
    n_t = len(tasks)
    total = n_t + n_comm
    headers: list[str] = []
    cols: list[Col] = []
    rounded: dict[str, np.ndarray] = {}
    rows = np.flatnonzero(hit)
    na = np.ones(total, bool)
    na[rows] = False
    na = na[order]
    # each final row's pmu row (-1: none), the one array every lazy column reads
    src = idx[hit]  # the pmu row of each task that has one (once, not per metric)
    del idx
    at = np.full(total, -1, np.int64)
    at[rows] = src
    del rows
    at = at[order].astype(np.int32 if len(p) < 2**31 else np.int64)
    # (made before the metric columns, with the fewest arrays held: its temporaries, ~8 arrays
    # of every row, were the top of op_summary's working set)
    cube = _cube_usage(p[CUBE_BASE].to_numpy(np.float64), hit, total, order, dur_ns, src) \
        if v4 and "aic_mac_ratio" in {M.summary_header(n) for n in names} and CUBE_BASE in p.columns else None
    pending: list[tuple[np.ndarray, dict[str, np.ndarray]]] = []  # each column's fixes, placed below
    for name in names:
        values = p[name].to_numpy()
        vals = values[src]
        headers.append(M.summary_header(name))
        if "cycle" in name:
            cols.append(Col.lazy("int", _lazy(values, at, _as_int64, vals), na_mask=na))
            continue
        k, exact, fix = round3_thousandths(vals, fixes=True)
        if exact.all():  # numbers rendered in place (no string per task: 25 metrics x 500 k tasks)
            # the few values SQLite rounds otherwise than numpy (next to a tie), kept by pmu row
            fixes: dict[str, np.ndarray] | None = None
            if len(fix):
                fixes = {}
                pending.append((np.unique(np.stack([src[fix], k[fix]]), axis=1), fixes))
            cols.append(Col.lazy("real3", _lazy(values, at, round3_plain, k, fixes), na_mask=na))
        else:  # a NaN / inf / huge value somewhere: each distinct text made once
            cols.append(Col.text(_metric_texts(vals, sqlite_real_text, hit, total, order), number=True))
        del k, exact
        if not v4:  # for memory_bound
            rounded[name] = np.round(vals.astype(np.float64), 3)
    _place_fixes(at, len(p), pending)
    extra = _memory_bound(rounded, hit, total) if not v4 else None
    if extra is not None:
        headers.append("memory_bound")
        cols.append(Col.text(pd.Categorical(extra[order]), number=True))
    if cube is not None:
        headers.append("cube_utilization(%)")
        cols.append(cube)
    return headers, cols


def _as_int64(v: np.ndarray) -> np.ndarray:
    return v.astype(np.int64)


def _place_fixes(at: np.ndarray, n_pmu: int, pending: list[tuple[np.ndarray, dict[str, np.ndarray]]]) -> None:
    """Each column's fixes, ``(pmu rows sorted, their numbers)``, as the final rows showing them
    (``rows``, sorted) and their numbers (``k``), filled into the column's dict: the rows of every
    column's fixed pmu rows found in one pass over ``at`` (final row -> pmu row, -1: none), so a
    chunk finds its fixes by two scalar searches, not a search per row and column."""
    if not pending:
        return
    marked = np.zeros(n_pmu + 1, bool)  # (the extra last slot: ``at`` -1, no pmu row)
    marked[np.concatenate([f[0] for f, _ in pending])] = True
    rows = np.flatnonzero(marked[at])
    pos = at[rows].astype(np.int64)
    for f, into in pending:
        j = np.minimum(np.searchsorted(f[0], pos), f.shape[1] - 1)
        mine = f[0][j] == pos
        into["rows"], into["k"] = rows[mine], f[1][j[mine]]


def _lazy(values: np.ndarray, at: np.ndarray, convert: Any, shown: np.ndarray,
          fixes: dict[str, np.ndarray] | None = None) -> Lazy:
    """One PMU column of op_summary as numbers made per chunk of rows: ``convert`` of
    ``values[at]`` (rows without a PMU row, ``at`` -1, give 0: they show N/A); ``shown``:
    the numbers of every row shown (the column's width; 0 counted in as the rows without);
    ``fixes``: ``rows`` (final rows, sorted) and their numbers ``k``, where ``convert`` is not
    the number (:func:`_place_fixes`)."""
    lo, hi = (min(0, int(shown.min())), max(0, int(shown.max()))) if len(shown) else (0, 0)

    def get(a: int, b: int) -> np.ndarray:
        pos = at[a:b]
        some = pos >= 0
        if some.all():
            out = convert(values[pos])
        else:
            out = np.zeros(len(pos), np.int64)
            out[some] = convert(values[pos[some]])
        if fixes is not None:
            rows = fixes["rows"]
            i, j = int(np.searchsorted(rows, a)), int(np.searchsorted(rows, b))
            if j > i:
                out[rows[i:j] - a] = fixes["k"][i:j]
        return out

    return Lazy(len(at), (lo, hi), get)


def _metric_texts(vals: np.ndarray, fmt: Any, hit: np.ndarray, total: int, order: np.ndarray) -> pd.Categorical:
    """One metric's op_summary cells, already in the final row order: ``fmt`` (elementwise) of
    each distinct value once, "N/A" for the rows without PMU data and the communication rows
    (not one Python string per task: 25 metrics x 500 k tasks made ~1 GB of them)."""
    # distinct values by hashing (the order of the categories does not show in the output)
    inv, uniq = pd.factorize(vals, use_na_sentinel=False)
    texts = np.asarray(fmt(np.asarray(uniq)), dtype=object).astype(str).astype(object)
    remap, cats = pd.factorize(np.append(texts, np.array(["N/A"], dtype=object)))
    codes = np.full(total, remap[-1], np.int64)
    codes[np.flatnonzero(hit)] = remap[:-1][inv.reshape(-1)]
    return pd.Categorical.from_codes(codes[order], categories=pd.Index(cats, dtype=object))


def _memory_bound(rounded: dict[str, np.ndarray], hit: np.ndarray, total: int) -> np.ndarray | None:
    """msprof's add_mem_bound on the rounded ratios (``0`` when vec and mac are both 0)."""
    for mac, vec, mte2 in (("mac_ratio", "vec_ratio", "mte2_ratio"),
                           ("mac_exe_ratio", "vec_exe_ratio", "mte2_exe_ratio")):
        if all(k in rounded for k in (mac, vec, mte2)):
            top = np.maximum(rounded[vec], rounded[mac])
            val = np.where(top != 0, np.round(rounded[mte2] / np.where(top != 0, top, 1.0), 3), 0.0)
            out = np.full(total, "N/A", dtype=object)
            txt = np.where(top != 0, np.array([repr(float(x)) for x in val], dtype=object), "0")
            out[:len(hit)][hit] = txt
            return out
    return None


def _cube_usage(base: np.ndarray, hit: np.ndarray, total: int, order: np.ndarray, dur_ns: np.ndarray,
                src: np.ndarray | None = None) -> Col:
    """``cube_utilization(%)`` cells in the final row order (``order``; ``dur_ns`` already in it);
    ``base`` (``base[src]`` with ``src``): the base of each task with a PMU row (``hit``).

    C++: ``std::to_string`` (6 decimals) of cycles / (freq * cores) * 100, read back as a double,
    divided by the printed duration (µs, 3 decimals), printed ``%.3f``; ``0`` for a zero duration,
    ``N/A`` without a PMU row or without AI Core frequency / core count."""
    val = np.full(total, np.nan)
    val[:len(hit)][hit] = to_string_6(np.asarray(base, np.float64) if src is None else np.asarray(base, np.float64)[src])
    val = val[order]
    dur_us = np.round(np.asarray(dur_ns, np.float64) / 1000.0, 3)
    ok = ~np.isnan(val)
    nz = ok & (dur_us != 0)
    q = val[nz] / dur_us[nz]
    del val  # (the temporaries of every row held at once are this column's working set)
    k, fast = _fixed3_thousandths(q)
    # the few values the integers cannot print (next to a tie, negative) as fixed texts of their own
    slow_codes, slow_texts = pd.factorize(np.char.mod("%.3f", q[~fast]).astype(object)) if not fast.all() \
        else (np.zeros(0, np.int64), [])
    if len(slow_texts) <= 250:  # numbers rendered in place, no text per task (special codes: uint8)
        special = np.full(total, 1, np.uint8)  # N/A
        special[ok & (dur_us == 0)] = 2
        code = np.zeros(len(q), np.uint8)
        code[~fast] = slow_codes + 3
        special[nz] = code
        k_all = np.zeros(total, np.int64)
        k_all[nz] = k
        return Col.fixed3(k_all, special=(special, ["N/A", "0", *[str(t) for t in slow_texts]]))
    txt_codes, texts = fixed3_texts(q)
    codes = np.full(total, len(texts), np.int64)
    texts = texts + ["N/A", "0"]
    codes[ok & (dur_us == 0)] = len(texts) - 1
    codes[nz] = txt_codes
    cat_codes, cats = pd.factorize(np.asarray(texts, dtype=object))  # a text made twice is one category
    return Col.text(pd.Categorical.from_codes(cat_codes[codes], categories=pd.Index(cats, dtype=object)),
                    number=True)


def _exact_rint(y: np.ndarray) -> np.ndarray:
    """Where ``rint(y)`` is the rounding of the exact decimal value ``y`` stands for: finite, below
    2**52 and not within a few ulps of a tie (where the product that made ``y`` may have crossed it)."""
    ay = np.abs(y)
    with np.errstate(over="ignore", invalid="ignore"):
        return (ay < 2.0**52) & (np.abs(ay - np.floor(ay) - 0.5) > 4 * np.spacing(np.maximum(ay, 1.0)))


def to_string_6(x: np.ndarray) -> np.ndarray:
    """``float("%.6f" % v)`` of each double (C++ ``std::stod(std::to_string(v))``; NaN stays NaN):
    ``rint(v * 1e6) / 1e6`` (an integer divided by 1e6 is the double nearest that decimal, as the
    parse gives) wherever that rint is exact; the other values through ``%.6f`` itself."""
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # inf / NaN go the slow way
        y = x * 1e6
        out = np.rint(y) / 1e6
    slow = ~_exact_rint(y) & ~np.isnan(x)
    if slow.any():
        out[slow] = np.char.mod("%.6f", x[slow]).astype(np.float64)
    return out


def _fixed3_thousandths(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(k, fast): ``"%.3f" % v`` is ``k / 1000`` with three decimals where ``fast`` (the
    thousandths' rint is exact and the value not negative)."""
    q = np.asarray(q, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        y = q * 1000.0
        fast = _exact_rint(y) & ~np.signbit(q)  # (-0.0 prints "-0.000")
    k = np.zeros(len(q), np.int64)
    k[fast] = np.rint(y[fast]).astype(np.int64)
    return k, fast


def fixed3_texts(q: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """``"%.3f" % v`` of each double as (code per value, texts): each distinct text made once
    (thousandths as integers wherever their rint is exact, ``%.3f`` itself for the others)."""
    q = np.asarray(q, np.float64)
    k, fast = _fixed3_thousandths(q)
    codes = np.empty(len(q), np.int64)
    k_codes, k_uniq = pd.factorize(k[fast])
    texts = [f"{k // 1000}.{k % 1000:03d}" for k in np.asarray(k_uniq).tolist()]
    codes[fast] = k_codes
    if not fast.all():
        s_codes, s_uniq = pd.factorize(np.char.mod("%.3f", q[~fast]).astype(object))
        codes[~fast] = s_codes + len(texts)
        texts += [str(t) for t in s_uniq]
    return codes, texts


# -- timeline ---------------------------------------------------------------------------------
def freq_counters(session: Session, device_id: int, meta: Meta, host_pid: int, hw_sort: int) -> list[Counters]:
    """The "AI Core Freq" counter process of one device (msprof: ``{"MHz": f}`` per change)."""
    f = session.aicore_freq
    if not len(f):
        return []
    f = f[f["device_id"].to_numpy(np.int64) == device_id]
    if not len(f):
        return []
    sort = hw_sort + SORT_AICORE_FREQ_AFTER_HW
    pid = format_pid(host_pid, sort, device_id)
    meta.process(pid, "AI Core Freq", f"NPU {device_id}", sort)
    return [Counters("AI Core Freq", pid, f["timestamp_ns"].to_numpy(np.int64),
                     {"MHz": f["freq_mhz"].to_numpy(np.float64)})]

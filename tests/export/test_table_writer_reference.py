"""write_table (vectorised: whole-column formatting, joined categorical columns, NUL-padded
chunks rendered on threads) against a plain per-row reference written from msprof's rules,
byte for byte, for CSV and JSON (hypothesis)."""
from __future__ import annotations

import math

import numpy as np
import orjson
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msprof_py.export import rows
from msprof_py.export.table_writer import Col, write_table

INT64 = st.integers(-(2**63), 2**63 - 1)
EDGE = st.sampled_from([0, 1, -1, 999, 1000, -1000, 999_999, 1_000_000, 2**53 + 1, 2**63 - 1, -(2**63),
                        1_732_435_774_123_456_789])
WORDS = st.sampled_from(["N/A", "", "MatMul", "a,b", 'say "hi"', '"1,3"', "line\nbreak", "cr\r", "nul\x00x",
                         "Conv2D", "µs", "x" * 40, "12.5", "0", "-3.250"])
TEXT = st.one_of(WORDS, st.text(max_size=12), st.none())
NUMBER_TEXT = st.one_of(st.sampled_from(["N/A", "abc", "12.5", "0", "-3.25", "1e-05"]),
                        st.integers(-10**6, 10**6).map(str),
                        st.floats(-1e9, 1e9, allow_nan=False).map(lambda f: f"{f:.3f}"))


def ref_us(ns: int) -> str:
    """µs with 3 decimals from integer ns, by Python ints (msprof's DivideByPowersOfTenWithPrecision)."""
    sign = "-" if ns < 0 else ""
    return f"{sign}{abs(ns) // 1000}.{abs(ns) % 1000:03d}"


def ref_csv_text(v: object, always: bool) -> str:
    s = "N/A" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
    s = s.replace("\x00", "\\x00")
    if always and (s == "N/A" or (len(s) >= 2 and s[0] == '"' and s[-1] == '"')):
        return s
    if always or any(ch in s for ch in ',"\n\r'):
        return '"' + s.replace('"', '""') + '"'
    return s


def ref_json_text(v: object, quote: bool, number: bool) -> str:
    s = "N/A" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
    if quote and len(s) >= 2 and s[0] == s[-1] == '"':
        s = s[1:-1]
    if number:
        try:
            float(s)
            return s
        except ValueError:
            pass
    return orjson.dumps(s).decode()


def ref_cell(spec: dict, i: int, fmt: str) -> str:
    kind = spec["kind"]
    if kind == "text":
        v = spec["values"][i]
        return ref_csv_text(v, spec["quote"]) if fmt == "csv" else ref_json_text(v, spec["quote"], spec["number"])
    if spec["na"] is not None and spec["na"][i]:
        return "N/A" if fmt == "csv" else '"N/A"'
    v = int(spec["values"][i])
    if kind == "int":
        return str(v)
    text = ref_us(v)
    if spec["stamp"]:
        return text + "\t" if fmt == "csv" else f'"{text}"'
    return text


def reference(header: list[str], specs: list[dict], n: int, fmt: str) -> bytes:
    if fmt == "csv":
        lines = [",".join(ref_csv_text(h, False) for h in header)]
        lines += [",".join(ref_cell(s, i, "csv") for s in specs) for i in range(n)]
        return ("\n".join(lines) + "\n").encode()
    objs = ["{" + ",".join(orjson.dumps(h).decode() + ":" + ref_cell(s, i, "json") for h, s in zip(header, specs))
            + "}" for i in range(n)]
    return ("[" + ",\n".join(objs) + ("\n" if objs else "") + "]\n").encode()


@st.composite
def tables(draw: st.DrawFn) -> tuple[int, list[dict]]:
    n = draw(st.integers(0, 40))
    specs = []
    for _ in range(draw(st.integers(1, 7))):
        kind = draw(st.sampled_from(["int", "us", "text", "text", "cat"]))
        if kind in ("int", "us"):
            values = draw(st.lists(st.one_of(INT64, EDGE), min_size=n, max_size=n))
            na = draw(st.one_of(st.none(), st.lists(st.booleans(), min_size=n, max_size=n)))
            specs.append({"kind": kind, "values": values, "na": None if na is None else np.array(na, bool),
                          "stamp": kind == "us" and draw(st.booleans())})
        else:
            number = draw(st.booleans())
            pool = draw(st.lists(NUMBER_TEXT if number else TEXT, min_size=1, max_size=6)) \
                if draw(st.booleans()) else None  # few distinct values (joined) or any values
            values = [draw(st.sampled_from(pool)) if pool else draw(NUMBER_TEXT if number else TEXT)
                      for _ in range(n)]
            specs.append({"kind": "text", "values": values, "quote": draw(st.booleans()), "number": number,
                          "cat": kind == "cat"})
    return n, specs


def to_col(spec: dict) -> Col:
    if spec["kind"] == "int":
        return Col.ints(np.array(spec["values"], dtype=np.int64), na_mask=spec["na"])
    if spec["kind"] == "us":
        return Col.us(np.array(spec["values"], dtype=np.int64), stamp=spec["stamp"], na_mask=spec["na"])
    values = pd.Categorical(spec["values"]) if spec["cat"] else pd.Series(spec["values"], dtype=object)
    return Col.text(values, quote=spec["quote"], number=spec["number"])


@pytest.mark.parametrize("join", [True, False], ids=["joined", "separate"])
@given(table=tables(), fmt=st.sampled_from(["csv", "json"]), chunk=st.sampled_from([1, 3, 16384]))
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_write_table_matches_per_row_reference(tmp_path, monkeypatch, join, table, fmt, chunk) -> None:
    n, specs = table
    # categorical columns are joined unless the joined table would be too big: both paths
    monkeypatch.setattr(rows, "MERGE_MAX", 1 << 16 if join else 0)
    monkeypatch.setattr(rows, "CHUNK_ROWS", chunk)  # several chunks (and the thread pool) too
    header = [f"H{i}" if i % 3 else f'h,"{i}"' for i in range(len(specs))]
    path = write_table(tmp_path / f"t_{join}_{chunk}", header, [to_col(s) for s in specs], fmt)
    assert path.read_bytes() == reference(header, specs, n, fmt)


@given(st.lists(st.one_of(INT64, EDGE), min_size=1, max_size=200))
@settings(max_examples=200, deadline=None)
def test_ints_and_us_over_the_whole_int64_range(values: list[int]) -> None:
    v = np.array(values, dtype=np.int64)
    got = rows.RowBuilder(len(v)).int(v).lit(",").us3(v).lit("\n").to_bytes().decode()
    assert got == "".join(f"{x},{ref_us(x)}\n" for x in values)


@given(st.lists(st.one_of(st.floats(-1e12, 1e12), st.sampled_from([0.0, -0.0, 0.0005, -0.0005, 12.3455, 1e9,
                                                                      999999999.9995, math.nan, math.inf])),
                min_size=1, max_size=50))
@settings(max_examples=150, deadline=None)
def test_pmu_real_text_matches_printf(values: list[float]) -> None:
    """op_summary's PMU cells (integer-printed below 1e9) against ``%.3f`` of numpy's round per
    value, trailing zeros stripped (SQLite's own text where the two roundings may differ)."""
    import sqlite3

    from msprof_py.export.pmu_export import sqlite_real_text

    con = sqlite3.connect(":memory:")
    want = []
    for x in values:
        t = ("%.3f" % (float(np.round(x, 3)) + 0.0)).rstrip("0")
        t = t + "0" if t.endswith(".") else t
        scaled = x * 1000.0
        if math.isfinite(x) and abs(scaled - math.floor(scaled) - 0.5) <= 16 * np.spacing(abs(scaled)) + 1e-9:
            t = con.execute("SELECT CAST(ROUND(?, 3) AS TEXT)", (x,)).fetchone()[0]
        want.append(t)
    with np.errstate(invalid="ignore"):
        assert sqlite_real_text(np.array(values, dtype=np.float64)).tolist() == want

"""The vectorised row builder against naive per-row formatting (differential, hypothesis)."""
from __future__ import annotations

import csv
import io
import json

import numpy as np
import pandas as pd
from hypothesis import example, given, settings
from hypothesis import strategies as st

from msprof_py.export.rows import RowBuilder
from msprof_py.export.table_writer import Col, write_table

ints = st.lists(st.integers(-(2**62), 2**62), min_size=1, max_size=300)


def naive_us3(ns: int) -> str:
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


@given(ints)
@settings(max_examples=200, deadline=None)
def test_int_and_us3_match_python_formatting(values: list[int]) -> None:
    v = np.array(values, dtype=np.int64)
    got = RowBuilder(len(v)).int(v).lit(",").us3(v).lit("\n").to_bytes().decode()
    want = "".join(f"{x},{naive_us3(x)}\n" for x in values)
    assert got == want


# values of every digit count in one column: the digit tables, the 4-digit groups and the rows
# whose higher groups are empty (leading zeros as NUL) all meet in one buffer
mixed_widths = st.lists(st.integers(0, 18).flatmap(lambda k: st.integers(-(10**k), 10**k)), min_size=1, max_size=300)


@given(mixed_widths)
@example([-(2**63), 2**63 - 1, 0, 9999, 10000, 99_999_999, 100_000_000])
@settings(max_examples=200, deadline=None)
def test_mixed_digit_counts_match_python_formatting(values: list[int]) -> None:
    v = np.array(values, dtype=np.int64)
    got = RowBuilder(len(v)).int(v).lit(",").us3(v).lit("\n").to_bytes().decode()
    assert got == "".join(f"{x},{naive_us3(x)}\n" for x in values)


# values close together (timestamps, ids counting up) whose chunks share their leading digits,
# near a power of ten so that a chunk can straddle a change of digit count; chunks of 1-40 rows
clustered = st.tuples(st.integers(0, 18).flatmap(lambda k: st.integers(max(0, 10**k - 50), 10**k + 50)),
                      st.lists(st.integers(0, 10**6), min_size=1, max_size=120), st.integers(1, 40),
                      st.booleans())


@given(clustered)
@example((1_767_225_600_000_000_000, [0, 999, 10**6], 2, False))
@example((9_999_999_999_999, [0, 1, 2], 1, True))
@settings(max_examples=200, deadline=None)
def test_shared_leading_digits_match_python_formatting(case) -> None:
    base, steps, chunk_rows, negative = case
    v = np.minimum(base + np.cumsum(np.array(steps, dtype=np.int64)), 2**63 - 1)
    v = -v if negative else v
    got = b"".join(RowBuilder(len(v)).int(v).lit(",").us3(v).lit("\n").chunks(chunk_rows=chunk_rows)).decode()
    assert got == "".join(f"{x},{naive_us3(x)}\n" for x in v.tolist())


@given(st.lists(st.integers(0, 2**63 - 1), min_size=1, max_size=60), st.integers(0, 3))
@settings(max_examples=150, deadline=None)
def test_write_uint_any_width(values: list[int], extra: int) -> None:
    # widths that are not a multiple of 4 (the CSV writer's exact widths) and uint64 input
    from msprof_py.export.digits import int_width, write_uint
    v = np.array(values, dtype=np.uint64)
    w = int_width(np.array(values, dtype=np.int64)) + extra
    out = np.full((len(v), w), 7, np.uint8)
    write_uint(out, v)
    assert [bytes(r).replace(b"\0", b"").decode() for r in out] == [str(x) for x in values]
    assert all(bytes(r).lstrip(b"\0").find(b"\0") < 0 for r in out)  # only leading NULs


@given(st.lists(st.text(min_size=0, max_size=12), min_size=1, max_size=200))
@settings(max_examples=100, deadline=None)
def test_strings_round_trip_through_json(values: list[str]) -> None:
    rb = RowBuilder(len(values)).lit('{"s":').strings(values, encode=lambda s: json.dumps(s)).lit("}\n")
    lines = rb.to_bytes().decode().splitlines()
    assert [json.loads(line)["s"] for line in lines] == values


def test_chunking_keeps_widths_per_column() -> None:
    # chunk 1 has only small numbers, chunk 2 a large one: each chunk must still be correct
    v = np.array([1] * 5 + [123456789], dtype=np.int64)
    rb = RowBuilder(len(v)).int(v).lit("|")
    got = b"".join(rb.chunks(chunk_rows=5)).decode()
    assert got == "1|" * 5 + "123456789|"


@given(st.lists(st.tuples(st.text(max_size=8), st.integers(0, 10**12), st.booleans()), min_size=1, max_size=50))
@settings(max_examples=60, deadline=None)
def test_csv_table_parses_back(tmp_path_factory, rows) -> None:
    out = tmp_path_factory.mktemp("t") / "x"
    texts, nums, na = zip(*rows)
    path = write_table(out, ["Name", "Start(us)", "Dur"], [
        Col.text(pd.Series(texts)), Col.us(np.array(nums), stamp=True),
        Col.ints(np.array(nums), na_mask=np.array(na))])
    parsed = list(csv.reader(io.StringIO(path.read_bytes().decode("utf-8"), newline="")))
    assert parsed[0] == ["Name", "Start(us)", "Dur"]
    for (t, n, m), row in zip(rows, parsed[1:]):
        assert row == [t.replace("\x00", "\\x00"), naive_us3(n) + "\t", "N/A" if m else str(n)]


@given(st.lists(st.text(max_size=10), max_size=50))
@example(['",', ''])  # an escaped quote followed by the separator's text (found by hypothesis)
@example(['a\\', 'b'])  # a string ending in a backslash: its closing quote follows an escape
@settings(max_examples=200, deadline=None)
def test_jstr_many_equals_one_by_one(values: list[str]) -> None:
    from msprof_py.export.trace_events import jstr, jstr_many
    assert jstr_many(values) == [jstr(v) for v in values]


def test_render_threads_follow_the_calling_threads_cores(monkeypatch) -> None:
    """On one core (the export narrows its threads while the last DB process runs) chunks are
    rendered by the calling thread, with the same text; on more, the pool's threads render them;
    MSPROF_PY_THREADS, when set, wins."""
    import os
    import threading

    import pytest

    import msprof_py.export.rows as rows

    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two cores and sched_setaffinity")
    monkeypatch.setattr(rows, "_ASKED", 0)
    monkeypatch.setattr(rows, "WORKERS", 2)
    v = np.arange(20_000, dtype=np.int64) * 7919
    seen: set[str] = set()

    def build() -> RowBuilder:
        rb = RowBuilder(len(v)).int(v).lit("\n")
        segs = rb._layout()
        w, lit, fill = segs[0]

        def spy(out, a, b):
            seen.add(threading.current_thread().name)
            fill(out, a, b)
        rb._final = [(w, lit, spy), *segs[1:]]
        return rb

    expected = "".join(f"{x}\n" for x in v.tolist()).encode()
    assert b"".join(build().chunks(1024)) == expected
    assert seen and threading.current_thread().name not in seen  # the pool's threads
    full = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(full)})
    try:
        assert rows.render_workers() == 1
        seen.clear()
        assert b"".join(build().chunks(1024)) == expected
        assert seen == {threading.current_thread().name}
        monkeypatch.setattr(rows, "_ASKED", 2)  # MSPROF_PY_THREADS=2: asked for
        assert rows.render_workers() == 2
    finally:
        os.sched_setaffinity(0, full)
    monkeypatch.setattr(rows, "_ASKED", 0)
    assert rows.render_workers() == 2

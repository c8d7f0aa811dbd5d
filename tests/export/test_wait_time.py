"""op_summary Task Wait Time as msprof's C++ analysis prints it (msprof_py.export.wait_time)."""
from __future__ import annotations

import numpy as np

from msprof_py.export.wait_time import wait_texts


def test_gaps_are_taken_between_the_doubles_of_the_printed_starts() -> None:
    # a real 910B capture (relu_torch_b1): msprof printed 183.920000 for the second row, not the
    # exact 183.884: both epoch-µs starts round to the 0.25 µs grid of a double (.419 -> .5,
    # .383 -> .5) before they are subtracted
    start = np.array([1784177894729170419, 1784177894729364383, 1784177894729424064], np.int64)
    dur = np.array([10080, 2480, 2300], np.int64)
    assert list(wait_texts(start, dur, None)) == ["0", "183.920000", "57.020000"]


def test_a_device_continues_from_the_previous_devices_last_row_and_never_goes_below_zero() -> None:
    start = np.array([1767225600000100000, 1767225600000100500], np.int64)
    dur = np.array([1000, 10], np.int64)
    # the last row of the device before ended 400 ns after this device's first start: 0, not -0.4
    assert list(wait_texts(start, dur, (1767225600000000000, 100400))) == ["0.000000", "0.000000"]
    assert list(wait_texts(start, dur, (1767225600000000000, 50000))) == ["50.000000", "0.000000"]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from msprof_py.export.table_writer import Col, write_table  # noqa: E402
from msprof_py.export.wait_time import wait_ns  # noqa: E402


@given(rows=st.lists(st.tuples(st.integers(0, 10**7), st.integers(0, 10**7)), max_size=30), first=st.booleans(),
       fmt=st.sampled_from(["csv", "json"]))
@settings(max_examples=200, deadline=None)
def test_wait_column_rendered_in_place_as_the_texts(rows: list, first: bool, fmt: str, tmp_path_factory) -> None:
    """op_summary's wait column (``%.3f`` + ``000`` per row, the file's first row ``0``) writes
    the bytes of the per-distinct-value texts it replaced, CSV and JSON."""
    base = 1767225600000000000
    gaps = np.array([g for g, _ in rows], dtype=np.int64)
    start = base + np.cumsum(gaps)
    dur = np.array([d for _, d in rows], dtype=np.int64)
    prev = None if first else (base - 5000, 1234)
    texts = wait_texts(start, dur, prev)
    special = np.zeros(len(start), np.uint8)
    if prev is None and len(start):
        special[0] = 1
    d = tmp_path_factory.mktemp("w")
    a = write_table(d / "a", ["Task Wait Time(us)"], [Col.text(texts, number=True)], fmt)
    b = write_table(d / "b", ["Task Wait Time(us)"], [Col.fixed3(wait_ns(start, dur, prev), special=(special, ["0"]),
                                                                 suffix="000")], fmt)
    assert a.read_bytes() == b.read_bytes()

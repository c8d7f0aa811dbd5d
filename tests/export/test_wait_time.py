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

"""``lpmInfoConv.data`` / ``lpmFreqConv.data``: AI Core frequency changes (888 B records).

A record carries up to 55 ``(syscnt, value)`` entries; ``lpmInfoConv`` records have a type
(0 = AI Core frequency MHz, 1/2 = voltages, ignored here), ``lpmFreqConv`` records are all
frequencies.  A count above 55 is clamped with a warning naming the record.
"""
from __future__ import annotations

import numpy as np

from msprof_py.errors import WarningLog
from msprof_py.parse.reader import Decoded
from msprof_py.raw import lpm_info as raw


def decode(dec: Decoded | None, warnings: WarningLog, typed: bool = True) -> dict[str, np.ndarray]:
    """Frequency entries in file order: ``syscnt`` u64, ``freq_mhz`` int64."""
    if dec is None or not len(dec):
        return {"syscnt": np.zeros(0, np.uint64), "freq_mhz": np.zeros(0, np.int64)}
    count = dec.field("count").astype(np.int64)
    bad = count > raw.N_ENTRIES
    if bad.any():
        path, off = dec.where(int(np.argmax(bad)))
        warnings.warn(f"{path}: byte {off}: {int(bad.sum())} frequency record(s) claim more than "
                      f"{raw.N_ENTRIES} entries; read {raw.N_ENTRIES}")
    count = np.minimum(count, raw.N_ENTRIES)
    if typed:
        count = np.where(dec.field("type") == raw.TYPE_AIC_FREQ, count, 0)
    entries = dec.field("entries")  # (n, 55) structured
    valid = np.arange(raw.N_ENTRIES)[None, :] < count[:, None]
    return {"syscnt": entries["syscnt"][valid].astype(np.uint64),
            "freq_mhz": entries["value"][valid].astype(np.int64)}

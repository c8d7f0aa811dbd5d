"""``lpmInfoConv.data`` / ``lpmFreqConv.data``: AI Core frequency changes (888 B records).

A record carries up to 55 ``(syscnt, value)`` entries; ``lpmInfoConv`` records have a type
(0 = AI Core frequency MHz, 1/2 = voltages, ignored here), ``lpmFreqConv`` records are all
frequencies.  A count above 55 is clamped with a warning naming the record.
"""
from __future__ import annotations

import numpy as np

from msprof_py.parse.records.parts import DecodeContext, Parts
from msprof_py.raw import lpm_info as raw


def decode_info(parts: Parts, ctx: DecodeContext) -> dict[str, np.ndarray]:
    """``lpmInfoConv``: the AI Core frequency entries (type 0)."""
    return decode(parts, ctx, typed=True)


def decode_freq(parts: Parts, ctx: DecodeContext) -> dict[str, np.ndarray]:
    """``lpmFreqConv``: every entry is a frequency."""
    return decode(parts, ctx, typed=False)


def decode(dec: Parts, ctx: DecodeContext, typed: bool = True) -> dict[str, np.ndarray]:
    """Frequency entries in file order: ``syscnt`` u64, ``freq_mhz`` int64."""
    warnings = ctx.warnings
    if not len(dec):
        return {"syscnt": np.zeros(0, np.uint64), "freq_mhz": np.zeros(0, np.int64)}
    count = dec.col("count").astype(np.int64)
    bad = count > raw.N_ENTRIES
    if bad.any():
        path, off = dec.where(int(np.argmax(bad)))
        warnings.warn(f"{path}: byte {off}: {int(bad.sum())} frequency record(s) claim more than "
                      f"{raw.N_ENTRIES} entries; read {raw.N_ENTRIES}")
    count = np.minimum(count, raw.N_ENTRIES)
    if typed:
        count = np.where(dec.col("type") == raw.TYPE_AIC_FREQ, count, 0)
    entries = dec.col("entries")  # (n, 55) structured
    valid = np.arange(raw.N_ENTRIES)[None, :] < count[:, None]
    return {"syscnt": entries["syscnt"][valid].astype(np.uint64),
            "freq_mhz": entries["value"][valid].astype(np.int64)}

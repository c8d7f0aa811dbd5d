"""Low-power info: 888-byte device records in ``lpmInfoConv.data.{dev}.slice_N``.

Layout (msprof ``LPM_INFO_FMT`` = ``II`` + ``QII`` x 55): ``count`` (valid entries), ``type``
(0 = AI Core frequency in MHz, 1 = AI Core voltage mV, 2 = bus voltage mV), then 55 entries of
``syscnt`` u64, ``value`` u32, reserved u32.  ``lpmFreqConv.data`` has the same size with no
type word (``count, resv, 55 x {syscnt, freq, resv}``; msprof's C++ FreqParser).
"""
from __future__ import annotations

import numpy as np

from msprof_py.raw.common import packed_dtype

FILE_TAG = "lpmInfoConv.data"
FREQ_FILE_TAG = "lpmFreqConv.data"
RECORD_SIZE = 888
N_ENTRIES = 55
TYPE_AIC_FREQ = 0
TYPE_AIC_VOLTAGE = 1
TYPE_BUS_VOLTAGE = 2

ENTRY_DTYPE = packed_dtype([("syscnt", "<u8", 0), ("value", "<u4", 8), ("resv", "<u4", 12)], 16)
DTYPE = packed_dtype([("count", "<u4", 0), ("type", "<u4", 4), ("entries", (ENTRY_DTYPE, (N_ENTRIES,)), 8)],
                     RECORD_SIZE)

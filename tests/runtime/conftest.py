"""A recording ProfilerHooks fake: keeps every reported array, names and types."""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from msprof_py.raw.common import concat_records
from msprof_py.raw.hash_dic import stable_hash
from msprof_py.runtime.clock import SimClock
from msprof_py.runtime.device import ATLAS_A2


def _copy(records: np.ndarray) -> np.ndarray:
    """A byte-exact copy (``ndarray.copy`` skips the gap bytes of padded dtypes)."""
    return concat_records([records])


class RecordingHooks:
    enabled = True

    def __init__(self) -> None:
        self.hashes: dict[int, str] = {}
        self.types: dict[tuple[int, int], str] = {}
        self._host: dict[tuple[str, bool], list[np.ndarray]] = defaultdict(list)
        self._dev: dict[tuple[int, str], list[np.ndarray]] = defaultdict(list)

    def hash_id(self, name: str) -> int:
        h = stable_hash(name)
        self.hashes[h] = name
        return h

    def register_type(self, level: int, type_id: int, name: str) -> None:
        self.types[(level, type_id)] = name

    def report_host(self, tag: str, aging: bool, records: np.ndarray) -> None:
        assert records.dtype.itemsize in (40, 64, 256), (tag, records.dtype.itemsize)
        self._host[(tag, aging)].append(_copy(records))

    def report_device(self, device_id: int, tag: str, records: np.ndarray) -> None:
        assert records.dtype.itemsize in (40, 64), (tag, records.dtype.itemsize)
        self._dev[(device_id, tag)].append(_copy(records))

    def host(self, tag: str, aging: bool | None = None) -> np.ndarray:  # noqa: D102
        parts = [a for (t, ag), arrs in sorted(self._host.items()) if t == tag and (aging is None or ag == aging)
                 for a in arrs]
        return concat_records(parts) if parts else np.zeros(0)

    def device(self, device_id: int, tag: str) -> np.ndarray:
        parts = self._dev.get((device_id, tag), [])
        return concat_records(parts) if parts else np.zeros(0)

    def type_id(self, level: int, name: str) -> int:
        return next(t for (lv, t), n in self.types.items() if lv == level and n == name)


@pytest.fixture
def hooks() -> RecordingHooks:
    return RecordingHooks()


@pytest.fixture
def fixed_clock() -> SimClock:
    return SimClock.create(ATLAS_A2.host_cpu_frequency_mhz, ATLAS_A2.hwts_frequency_mhz, fixed=True)

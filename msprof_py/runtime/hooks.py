"""The profiler-hook protocol: how the simulated stack reports what it does.

It mirrors CANN's reporter API (``MsprofReportApi``, ``MsprofReportCompactInfo``,
``MsprofReportAdditionalInfo``, ``MsprofRegTypeInfo``, ``MsprofGetHashId``) plus the device-side
channels (STARS logs, ts_track).  Records are numpy arrays of the layouts in :mod:`msprof_py.raw`,
reported in batches so nothing is a per-record Python object.  The runtime never imports
``collect``; ``collect`` implements this protocol.  When profiling is off the runtime gets
:class:`NullHooks` and skips building records altogether (``enabled`` is False).
"""
from __future__ import annotations

from typing import Protocol

import numpy as np


class ProfilerHooks(Protocol):
    enabled: bool

    def hash_id(self, name: str) -> int:
        """The 64-bit id of ``name`` (goes to hash_dic)."""

    def register_type(self, level: int, type_id: int, name: str) -> None:
        """Register a ``level_type:name`` entry (goes to type_info_dic)."""

    def report_host(self, tag: str, aging: bool, records: np.ndarray) -> None:
        """Host records of one kind: ``tag`` is the raw module's FILE_TAG (e.g. "compact.task_track")."""

    def report_device(self, device_id: int, tag: str, records: np.ndarray) -> None:
        """Device records (``stars_soc.data`` or ``ts_track.data``) for one device."""


class NullHooks:
    """Profiling off: every report is dropped."""

    enabled = False

    def hash_id(self, name: str) -> int:
        return 0

    def register_type(self, level: int, type_id: int, name: str) -> None:
        return None

    def report_host(self, tag: str, aging: bool, records: np.ndarray) -> None:
        return None

    def report_device(self, device_id: int, tag: str, records: np.ndarray) -> None:
        return None

"""Metadata files at the root of ``host/`` and ``device_{id}/`` and their exact text formats.

| file                 | format                                       | units                         |
|----------------------|----------------------------------------------|-------------------------------|
| info.json[.N]        | one-line JSON (jobInfo, devices, pid, CPU, DeviceInfo[hwts_frequency MHz]) | |
| sample.json          | JSON of the collection switches               |                               |
| start_info[.N]       | JSON collectionTimeBegin (us, str), clockMonotonicRaw (ns, str), collectionDateBegin | |
| end_info[.N]         | JSON collectionTimeEnd (us), clockMonotonicRaw (ns), collectionDateEnd | |
| host_start.log[.N]   | ``[Host]`` (``[Device{N}]`` in device_N/) then optional ``clock_realtime: ns``, ``clock_monotonic_raw: ns``, ``cntvct: ticks``, ``cntvct_diff: ticks`` | |
| dev_start.log.N      | optional ``clock_realtime: ns``, ``clock_monotonic_raw: ns`` and ``cntvct: device syscnt`` lines | |

The section name does not matter to the current readers (they take the first section); msprof's
older time-sync parser (``ms_time_parser.py``) looks for ``[Device{N}]`` and ``clock_realtime``.

Readers return plain dicts / dataclasses and raise nothing themselves; callers decide whether a
problem is an error (naming the file) or a warning.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson


def dump_json(obj: Any) -> bytes:
    return orjson.dumps(obj)


@dataclass(frozen=True)
class StartLog:
    """host_start.log / dev_start.log contents (the clock sync point)."""

    clock_monotonic_raw_ns: int
    cntvct: int
    cntvct_diff: int = 0
    clock_realtime_ns: int | None = None  # wall clock at the sync point (written when known)


def format_host_start(log: StartLog, section: str = "Host") -> bytes:
    """host_start.log text; ``section`` is "Host" in host/ and "Device{N}" in device_N/."""
    realtime = "" if log.clock_realtime_ns is None else f"clock_realtime: {log.clock_realtime_ns}\n"
    return (f"[{section}]\n{realtime}clock_monotonic_raw: {log.clock_monotonic_raw_ns}\n"
            f"cntvct: {log.cntvct}\ncntvct_diff: {log.cntvct_diff}\n").encode()


def format_dev_start(log: StartLog) -> bytes:
    realtime = "" if log.clock_realtime_ns is None else f"clock_realtime: {log.clock_realtime_ns}\n"
    return f"{realtime}clock_monotonic_raw: {log.clock_monotonic_raw_ns}\ncntvct: {log.cntvct}\n".encode()


def parse_start_log(text: str) -> StartLog | None:
    """Parse either start log; ``None`` if the two mandatory keys are not both present."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and value.strip().lstrip("-").isdigit():
            values[key.strip()] = int(value.strip())
    if "clock_monotonic_raw" not in values or "cntvct" not in values:
        return None
    return StartLog(values["clock_monotonic_raw"], values["cntvct"], values.get("cntvct_diff", 0),
                    values.get("clock_realtime"))

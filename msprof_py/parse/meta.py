"""Metadata of one result dir (``host/`` or ``device_{id}/``) and its clock conversion (§2.8).

All conversion is integer nanoseconds: a frequency in MHz is held as an exact fraction
``num/den`` (``"38.4"`` -> 192/5), so ``ticks * 1000 * den // num`` never goes through a float.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import orjson

from msprof_py.errors import DataError, WarningLog
from msprof_py.raw import files as raw_files
from msprof_py.raw.metadata import StartLog, parse_start_log

HOST_DEFAULT_FREQ_MHZ = Fraction(1000)  # msprof: no valid CPU Frequency => counters are ns


def _mhz(value: object) -> Fraction | None:
    try:
        f = Fraction(str(value).strip()).limit_denominator(1_000_000)
    except (ValueError, ZeroDivisionError):
        return None
    return f if f > 0 else None


@dataclass(frozen=True)
class Ticks:
    """A counter at ``mhz`` synced to monotonic ns at (``cnt0``, ``mono0_ns``), plus the
    monotonic -> local wall clock offset."""

    mhz: Fraction
    cnt0: int
    mono0_ns: int
    local_offset_ns: int

    def to_local_ns(self, cnt: np.ndarray) -> np.ndarray:
        """Counter values -> local wall-clock ns (int64), msprof's §2.8 steps 2-4."""
        delta = np.asarray(cnt, dtype=np.uint64).astype(np.int64) - np.int64(self.cnt0)
        return self.dur_ns(delta) + np.int64(self.mono0_ns + self.local_offset_ns)

    def dur_ns(self, ticks: np.ndarray) -> np.ndarray:
        """Tick differences -> ns (floor, exact integer arithmetic)."""
        t = np.asarray(ticks, dtype=np.int64)
        num, den = self.mhz.numerator, self.mhz.denominator
        if den == 1 and 1000 % num == 0:
            return t * (1000 // num)
        # split to avoid int64 overflow of t * 1000 * den for large tick counts
        q, r = np.divmod(t, np.int64(num))
        return q * np.int64(1000 * den) + (r * np.int64(1000 * den)) // np.int64(num)


@dataclass
class ResultDir:
    """One ``host`` or ``device_{id}`` dir: metadata and the clocks its data needs."""

    path: Path
    info: dict
    sample: dict
    start_info: dict
    end_info: dict
    host_start: StartLog | None
    dev_start: StartLog | None

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def is_host(self) -> bool:
        return self.path.name == raw_files.HOST_DIR

    @property
    def device_id(self) -> int:
        return raw_files.HOST_DEVICE_ID if self.is_host else int(self.path.name.split("_", 1)[1])

    @property
    def host_mhz(self) -> Fraction:
        cpu = self.info.get("CPU") or []
        f = _mhz(cpu[0].get("Frequency")) if cpu and isinstance(cpu[0], dict) else None
        return f or HOST_DEFAULT_FREQ_MHZ

    @property
    def hwts_mhz(self) -> Fraction | None:
        devs = self.info.get("DeviceInfo") or []
        return _mhz(devs[0].get("hwts_frequency")) if devs and isinstance(devs[0], dict) else None

    @property
    def host_monotonic_ns(self) -> int:
        """host_start.log clock_monotonic_raw + cntvct_diff converted at the host frequency."""
        hs = self.host_start
        if hs is None:
            return 0
        f = self.host_mhz
        return hs.clock_monotonic_raw_ns + int(hs.cntvct_diff * 1000 * f.denominator // f.numerator)

    @property
    def local_offset_ns(self) -> int:
        """collectionTimeBegin (us) * 1000 - clockMonotonicRaw (ns), from start_info."""
        return int(self.start_info["collectionTimeBegin"]) * 1000 - int(self.start_info["clockMonotonicRaw"])

    @property
    def collection_start_ns(self) -> int:
        return int(self.start_info["collectionTimeBegin"]) * 1000

    @property
    def collection_end_ns(self) -> int:
        try:
            return int(self.end_info["collectionTimeEnd"]) * 1000
        except (KeyError, ValueError, TypeError):
            return -1

    def host_ticks(self) -> Ticks:
        """Host counter clock; with the default frequency counters are already monotonic ns."""
        f = self.host_mhz
        if f == HOST_DEFAULT_FREQ_MHZ or self.host_start is None:
            return Ticks(Fraction(1000), 0, 0, self.local_offset_ns)
        return Ticks(f, self.host_start.cntvct, self.host_monotonic_ns, self.local_offset_ns)

    def device_ticks(self) -> Ticks:
        """Device syscnt clock: (syscnt - dev_start cntvct) / hwts MHz + host monotonic."""
        f = self.hwts_mhz
        if f is None:
            raise DataError(f"{self.path / self._info_name()}: no DeviceInfo[0].hwts_frequency; "
                            "device times cannot be converted")
        if self.dev_start is None or self.host_start is None:
            raise DataError(f"{self.path}: dev_start.log and host_start.log are both needed to convert device times")
        return Ticks(f, self.dev_start.cntvct, self.host_monotonic_ns, self.local_offset_ns)

    def _info_name(self) -> str:
        return _find(self.path, "info") or "info.json"


def _find(path: Path, kind: str) -> str | None:
    try:
        names = sorted(n for n in path.iterdir() if raw_files.META_RE[kind].match(n.name))
    except OSError:
        return None
    return names[0].name if names else None


def _json(path: Path, kind: str, required: bool) -> dict:
    name = _find(path, kind)
    if name is None:
        if required:
            raise DataError(f"{path}: missing {kind.replace('_', ' ')} file "
                            f"({'info.json' if kind == 'info' else kind}); not a complete msprof result dir")
        return {}
    try:
        data = orjson.loads((path / name).read_bytes())
    except (orjson.JSONDecodeError, OSError) as err:
        raise DataError(f"{path / name}: not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise DataError(f"{path / name}: expected a JSON object")
    return data


def _start_log(path: Path, kind: str, warnings: WarningLog) -> StartLog | None:
    name = _find(path, kind)
    if name is None:
        return None
    log = parse_start_log((path / name).read_text(errors="replace"))
    if log is None:
        warnings.warn(f"{path / name}: no clock_monotonic_raw/cntvct values; file ignored")
    return log


def load_result_dir(path: Path, warnings: WarningLog) -> ResultDir:
    """Read the metadata of ``host/`` or ``device_N/``; raise DataError for what msprof needs."""
    info = _json(path, "info", required=True)
    start = _json(path, "start_info", required=True)
    for key in ("collectionTimeBegin", "clockMonotonicRaw"):
        try:
            int(start.get(key, ""))
        except (TypeError, ValueError):
            raise DataError(f"{path / (_find(path, 'start_info') or 'start_info')}: "
                            f"missing or invalid {key}") from None
    rd = ResultDir(path, info, _json(path, "sample", required=False), start,
                   _json(path, "end_info", required=False),
                   _start_log(path, "host_start", warnings), _start_log(path, "dev_start", warnings))
    if not rd.end_info:
        warnings.warn(f"{path}: no end_info (collection was interrupted?); collection end unknown")
    if rd.host_start is None:
        warnings.warn(f"{path}: no usable host_start.log; host counters taken as monotonic ns")
    return rd

"""Metadata of one result dir (``host/`` or ``device_{id}/``) and its clock conversion (§2.8).

All conversion is integer nanoseconds: a frequency in MHz is held as an exact fraction
``num/den`` (``"38.4"`` -> 192/5), so ``ticks * 1000 * den // num`` never goes through a float.

Every metadata file is read once, here, and validated (:data:`INFO_KEYS`, :data:`START_KEYS`, ...):
a value of the wrong type or out of range is dropped with a warning naming the file and the key
(or, for what msprof cannot work without, a one-line DataError), so everything downstream may
trust the types and know that times, counters and ids fit int64 arithmetic.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Callable

import json
import re

import numpy as np
import orjson

from msprof_py.errors import DataError, WarningLog
from msprof_py.parse import cpp_time, plausible, py_clock
from msprof_py.parse.reader import read_bytes
from msprof_py.raw import files as raw_files
from msprof_py.raw.metadata import StartLog, parse_start_log

HOST_DEFAULT_FREQ_MHZ = Fraction(1000)  # msprof: no valid CPU Frequency => counters are ns
I64_MAX = 2**63 - 1
US_MAX = I64_MAX // 1000  # a time in us whose ns value still fits int64
MHZ_MAX = Fraction(100_000)  # 100 GHz: no counter or core is faster; 1e308 "MHz" is corruption


def _mhz(value: object) -> Fraction | None:
    """A frequency in MHz as an exact fraction; None unless it is a number in (0, 100000]."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        f = Fraction(str(value).strip()).limit_denominator(1_000_000)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return f if 0 < f <= MHZ_MAX else None


def _int_in(value: object, lo: int, hi: int) -> int | None:
    """``value`` (an int or a decimal string of one) if it lies in [lo, hi], else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        v = value.strip()
        if not v.lstrip("-").isdigit() or len(v) > 40:
            return None
        value = int(v)
    if not isinstance(value, int):
        return None
    return value if lo <= value <= hi else None


# key -> (check, what a valid value is); a check returns the typed value or None
_Check = tuple[Callable[[object], object], str]
INFO_KEYS: dict[str, _Check] = {
    "pid": (lambda v: _int_in(v, 0, 2**32 - 1), "a process id (0 .. 2^32-1)"),
    "rank_id": (lambda v: _int_in(v, -1, 2**31 - 1), "a rank id (-1 .. 2^31-1)"),
    "drvVersion": (lambda v: _int_in(v, 0, I64_MAX), "a driver version number"),
    "platform_version": (lambda v: _int_in(v, 0, 2**31 - 1), "a platform (chip) number"),
}
DEVICE_INFO_KEYS: dict[str, _Check] = {
    "hwts_frequency": (_mhz, "a frequency in MHz (0 .. 100000]"),
    "aic_frequency": (_mhz, "a frequency in MHz (0 .. 100000]"),
    "ai_core_num": (lambda v: _int_in(v, 0, 65535), "a core count (0 .. 65535)"),
    "aiv_num": (lambda v: _int_in(v, 0, 65535), "a core count (0 .. 65535)"),
}
CPU_KEYS: dict[str, _Check] = {"Frequency": (_mhz, "a frequency in MHz (0 .. 100000]")}
META_NAMES_RE = re.compile("|".join(p.pattern for p in raw_files.META_RE.values()))
START_KEYS: dict[str, _Check] = {  # both required: msprof cannot place anything in time without them
    "collectionTimeBegin": (lambda v: _int_in(v, 0, US_MAX), "a time in us (0 .. 2^63/1000)"),
    "clockMonotonicRaw": (lambda v: _int_in(v, 0, I64_MAX), "a time in ns (0 .. 2^63-1)"),
}
END_KEYS: dict[str, _Check] = {
    "collectionTimeEnd": (lambda v: _int_in(v, 0, US_MAX), "a time in us (0 .. 2^63/1000)"),
    "clockMonotonicRaw": (lambda v: _int_in(v, 0, I64_MAX), "a time in ns (0 .. 2^63-1)"),
}


@dataclass(frozen=True)
class Ticks:
    """A counter at ``mhz`` synced to monotonic ns at (``cnt0``, ``mono0_ns``), plus the
    monotonic -> local wall clock offset."""

    mhz: Fraction
    cnt0: int
    mono0_ns: int
    local_offset_ns: int
    cpp: bool = False  # task times as msprof's C++ analysis computes them (:meth:`task_ns`)
    py: bool = False  # ... or as its Python analysis does (parse.py_clock)

    def task_ns(self, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Device task counters -> (start_ns, dur_ns, span_ns): the shown start, op_summary's
        duration and task_time's / the timeline's (schema.TASK_COLUMNS).  Exact: start, the tick
        difference floored (both durations); ``cpp`` / ``py``: the values msprof's C++ / Python
        analysis prints (:mod:`msprof_py.parse.cpp_time`, :mod:`msprof_py.parse.py_clock`).
        Corrupt counters whose µs do not fit int64 millionths are converted exactly."""
        both = np.concatenate([np.asarray(start, np.uint64), np.asarray(end, np.uint64)])
        sane = cpp_time.fits(both, self.cnt0, float(self.mhz))
        if self.cpp and sane:
            s, e, span = cpp_time.task_ns(start, end, self.cnt0, self.mono0_ns, self.mhz, self.local_offset_ns)
            return s, e - s, span
        if self.py and sane:
            return py_clock.task_ns(start, end, self.cnt0, float(self.mhz), self.mono0_ns, self.local_offset_ns)
        s = self.to_local_ns(start)
        d = self.dur_ns(np.asarray(end, np.uint64).astype(np.int64) - np.asarray(start, np.uint64).astype(np.int64))
        return s, d, d

    def cut_start_ns(self, start: np.ndarray, start_ns: np.ndarray) -> np.ndarray:
        """task_time's start of device tasks (``start_ns`` their shown start): on the ``py`` clock
        the float start truncated, as msprof's Python task_time reads it
        (:func:`msprof_py.parse.py_clock.cut_start_ns`); elsewhere the shown start itself."""
        if self.py and cpp_time.fits(start, self.cnt0, float(self.mhz)):
            return py_clock.cut_start_ns(start, self.cnt0, float(self.mhz), self.mono0_ns, self.local_offset_ns)
        return np.asarray(start_ns, np.int64)

    def point_ns(self, cnt: np.ndarray) -> np.ndarray:
        """Local ns of counter values (samples, not tasks): exact floors, or (``cpp``) through
        msprof's C++ ``%f`` rounding of the µs (:func:`msprof_py.parse.cpp_time.point_ns`)."""
        if self.cpp and cpp_time.fits(cnt, self.cnt0, float(self.mhz)):
            return cpp_time.point_ns(cnt, self.cnt0, self.mono0_ns, self.mhz, self.local_offset_ns)
        return replace(self, cpp=False).to_local_ns(cnt)

    def to_local_ns(self, cnt: np.ndarray) -> np.ndarray:
        """Counter values -> local wall-clock ns (int64), msprof's §2.8 steps 2-4: exact, or
        (``cpp``, a real counter) msprof's C++ decimal conversion floored (``cpp_time.point_ns``:
        host API times, ``api_processor.cpp``)."""
        if self.cpp and self.mhz != HOST_DEFAULT_FREQ_MHZ and cpp_time.fits(cnt, self.cnt0, float(self.mhz)):
            return cpp_time.point_ns(cnt, self.cnt0, self.mono0_ns, self.mhz, self.local_offset_ns)
        return cpp_time.by_chunks(self._exact_ns, np.asarray(cnt, dtype=np.uint64))

    def _exact_ns(self, cnt: np.ndarray) -> np.ndarray:
        delta = cnt.astype(np.int64) - np.int64(self.cnt0)
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

    def host_monotonic_ns(self, diff: bool = True, log: StartLog | None = None) -> int:
        """host_start.log clock_monotonic_raw, plus (``diff``) cntvct_diff converted at the host
        frequency and truncated to whole ns (msprof's C++ ``hostMonotonic += diff * 1000 / MHz``).
        ``log``: another dir's host_start.log (the legacy rule syncs host counters with a device's)."""
        hs = log if log is not None else self.host_start
        if hs is None:
            return 0
        if not diff:
            return hs.clock_monotonic_raw_ns
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
        end = self.end_info.get("collectionTimeEnd")
        return int(end) * 1000 if end is not None else -1

    def host_ticks(self, offset_ns: int | None = None, diff: bool = True, log: StartLog | None = None) -> Ticks:
        """Host counter clock; with the default frequency counters are already monotonic ns.
        ``offset_ns``: the monotonic -> local offset to use (default: this dir's start_info);
        ``log``: the host_start.log to sync with (default: this dir's); ``diff``: apply cntvct_diff
        (which of these msprof uses depends on its analysis path: :mod:`msprof_py.parse.clocks`)."""
        f = self.host_mhz
        offset = self.local_offset_ns if offset_ns is None else offset_ns
        sync = log if log is not None else self.host_start
        if f == HOST_DEFAULT_FREQ_MHZ or sync is None:
            return Ticks(Fraction(1000), 0, 0, offset)
        return Ticks(f, sync.cntvct, self.host_monotonic_ns(diff, sync), offset)

    def device_ticks(self, offset_ns: int | None = None, diff: bool = True) -> Ticks:
        """Device syscnt clock: (syscnt - dev_start cntvct) / hwts MHz + this dir's host_start.log
        monotonic (+ cntvct_diff if ``diff``) + ``offset_ns`` (default: this dir's start_info)."""
        f = self.hwts_mhz
        if f is None:
            raise DataError(f"{self.path / self._info_name()}: no DeviceInfo[0].hwts_frequency; "
                            "device times cannot be converted")
        if self.dev_start is None or self.host_start is None:
            raise DataError(f"{self.path}: dev_start.log and host_start.log are both needed to convert device times")
        offset = self.local_offset_ns if offset_ns is None else offset_ns
        return Ticks(f, self.dev_start.cntvct, self.host_monotonic_ns(diff), offset)

    def _info_name(self) -> str:
        return _find(self.path, "info") or "info.json"


def _find(path: Path, kind: str) -> str | None:
    try:
        names = sorted(n for n in path.iterdir() if raw_files.META_RE[kind].match(n.name))
    except OSError:
        return None
    return names[0].name if names else None


def _json(path: Path, kind: str, required: bool, warnings: WarningLog) -> dict:
    name = _find(path, kind)
    if name is None:
        if required:
            raise DataError(f"{path}: missing {kind.replace('_', ' ')} file "
                            f"({'info.json' if kind == 'info' else kind}); not a complete msprof result dir")
        return {}
    file = path / name
    text = read_meta(file)
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as err:
        raise DataError(f"{file}: not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise DataError(f"{file}: expected a JSON object")
    dups = _duplicated_keys(text)
    if dups:
        warnings.warn(f"{file}: duplicated key(s) {', '.join(map(repr, dups[:5]))}; the last value of each is used")
    return data


def read_meta(file: Path) -> bytes:
    """Bytes of a metadata file (through the raw-file opener: any OS error is a DataError)."""
    return read_bytes(file)


def _duplicated_keys(text: bytes) -> list[str]:
    """Keys that appear twice in one JSON object (orjson silently keeps the last)."""
    dups: list[str] = []

    def hook(pairs: list) -> dict:
        seen = set()
        for k, _ in pairs:
            if k in seen and k not in dups:
                dups.append(k)
            seen.add(k)
        return dict(pairs)

    try:
        json.loads(text, object_pairs_hook=hook)
    except (ValueError, RecursionError):
        pass
    return dups


def _checked(file: Path, data: dict, keys: dict[str, _Check], warnings: WarningLog, where: str = "") -> None:
    """Replace each known key's value by its typed value, or drop it with a warning."""
    for key, (check, what) in keys.items():
        if key not in data:
            continue
        if data[key] in ("", None):  # empty: msprof's "unknown"; the readers use their defaults
            del data[key]
            continue
        typed = check(data[key])
        if typed is None:
            warnings.warn(f"{file}: {where}{key} = {_show(data[key])} is not {what}; ignored")
            del data[key]
        elif not isinstance(typed, Fraction):
            data[key] = typed


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _list_of_dicts(file: Path, data: dict, key: str, keys: dict[str, _Check], warnings: WarningLog) -> None:
    if key not in data:
        return
    items = data[key]
    if not isinstance(items, list) or not all(isinstance(d, dict) for d in items):
        warnings.warn(f"{file}: {key} = {_show(items)} is not a list of objects; ignored")
        del data[key]
        return
    for i, d in enumerate(items):
        _checked(file, d, keys, warnings, f"{key}[{i}].")


def _validate_info(path: Path, info: dict, warnings: WarningLog) -> None:
    file = path / (_find(path, "info") or "info.json")
    _checked(file, info, INFO_KEYS, warnings)
    _list_of_dicts(file, info, "CPU", CPU_KEYS, warnings)
    _list_of_dicts(file, info, "DeviceInfo", DEVICE_INFO_KEYS, warnings)


def _start_log(path: Path, kind: str, warnings: WarningLog) -> StartLog | None:
    name = _find(path, kind)
    if name is None:
        return None
    file = path / name
    log = parse_start_log(read_meta(file).decode("utf-8", errors="replace"))
    if log is None:
        warnings.warn(f"{file}: no clock_monotonic_raw/cntvct values; file ignored")
        return None
    bad = [(k, v) for k, v, lo in (("clock_monotonic_raw", log.clock_monotonic_raw_ns, 0), ("cntvct", log.cntvct, 0),
                                   ("cntvct_diff", log.cntvct_diff, -I64_MAX))
           if not lo <= v <= I64_MAX]
    if bad:
        warnings.warn(f"{file}: {bad[0][0]} = {_show(bad[0][1])} does not fit a 64-bit counter; file ignored")
        return None
    return log


def _check_sync(rd: ResultDir, start_file: Path, warnings: WarningLog) -> None:
    """The clock sync points of ``rd`` (plausible.check_sync_point / check_same_moment)."""
    host_log = rd.path / (_find(rd.path, "host_start") or "host_start.log")
    if rd.host_start is not None:
        plausible.check_same_moment(warnings, str(start_file), int(rd.start_info["clockMonotonicRaw"]),
                                    host_log.name, rd.host_start.clock_monotonic_raw_ns)
        if rd.host_mhz != HOST_DEFAULT_FREQ_MHZ:  # default: host counters are ns, cntvct unused
            plausible.check_sync_point(warnings, str(host_log), rd.host_start.cntvct, rd.host_mhz,
                                       rd.host_start.clock_monotonic_raw_ns)
    if rd.dev_start is not None and rd.hwts_mhz is not None:
        plausible.check_sync_point(warnings, str(rd.path / (_find(rd.path, "dev_start") or "dev_start.log")),
                                   rd.dev_start.cntvct, rd.hwts_mhz, rd.dev_start.clock_monotonic_raw_ns)


def _fits_i64(value: int) -> bool:
    return -I64_MAX <= value <= I64_MAX


def load_result_dir(path: Path, warnings: WarningLog) -> ResultDir:
    """Read and validate the metadata of ``host/`` or ``device_N/``; raise DataError for what
    msprof needs (info.json, start_info with collectionTimeBegin and clockMonotonicRaw)."""
    info = _json(path, "info", required=True, warnings=warnings)
    start = _json(path, "start_info", required=True, warnings=warnings)
    start_file = path / (_find(path, "start_info") or "start_info")
    for key, (check, what) in START_KEYS.items():
        typed = check(start.get(key))
        if typed is None:
            raise DataError(f"{start_file}: missing or invalid {key} ({_show(start.get(key))} is not {what})")
        start[key] = typed
    _validate_info(path, info, warnings)
    end = _json(path, "end_info", required=False, warnings=warnings)
    _checked(path / (_find(path, "end_info") or "end_info"), end, END_KEYS, warnings)
    rd = ResultDir(path, info, _json(path, "sample", required=False, warnings=warnings), start, end,
                   _start_log(path, "host_start", warnings), _start_log(path, "dev_start", warnings))
    if rd.host_start is not None and not _fits_i64(rd.host_monotonic_ns() + rd.local_offset_ns):
        warnings.warn(f"{path / (_find(path, 'host_start') or 'host_start.log')}: the clock sync point "
                      "overflows 64-bit ns with this frequency; file ignored")
        rd.host_start = None
    _check_sync(rd, start_file, warnings)
    plausible.check_markers(path, warnings, META_NAMES_RE)
    if not rd.end_info:
        warnings.warn(f"{path}: no end_info (collection was interrupted?); collection end unknown")
    if rd.host_start is None:
        warnings.warn(f"{path}: no usable host_start.log; host counters taken as monotonic ns")
    return rd

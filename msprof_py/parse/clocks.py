"""Which metadata files turn counters into local wall-clock time: msprof's rule (§2.8), which
depends on the analysis that exports the capture.

The msprof that ships with CANN exports a capture with its C++ analysis when the chip is one of
``CPP_EXPORT_CHIPS`` (info.json ``platform_version`` 5 = Ascend 910B/A2, 15, 16) and the driver
supports "all export" (``drvVersion`` >= 0x072211; ``common_func/cpp_enable_scene.py``
ExportSummaryScene / ExportTimelineScene), and with its Python analysis otherwise.  The two
convert differently, and the difference is visible on real captures (tens of µs on the 310B,
whose start_info / host_start.log clocks are read a few µs apart):

- ``cpp`` (``csrc/domain/services/environment/context.cpp``, ``utils/time_utils.cpp``): each dir
  converts its own data with its own files.  Device: ``(syscnt - dev_start cntvct) / hwts MHz +
  device_N/host_start.log clock_monotonic_raw + cntvct_diff * 1000 / host MHz``, then
  ``+ device_N/start_info (collectionTimeBegin - clockMonotonicRaw)``.  Host: the same with
  ``host/host_start.log`` and ``host/start_info``.  Checked to the printed ns on the 14 CANN 9.0
  910B captures of shared/realdata (ts of every hardware event and API).  The times are computed
  with its own arithmetic (``Ticks.cpp``, :mod:`msprof_py.parse.cpp_time`: double
  division, ``std::to_string`` to 6 decimals, ``HPFloat::Double``, truncation), so every printed
  start, end and duration equals msprof's to the ns.
- ``python`` (what msprof's Python analysis of 2024 wrote on the 310B, platform_version 7):
  one set of clocks for the whole PROF dir -- the local offset of ``host/start_info``, host
  counters synced at the first device's ``host_start.log.N`` (its clock_monotonic_raw and
  cntvct), device counters at each device's own host_start.log / dev_start.log, and
  ``cntvct_diff`` not applied.  Checked on the 24 310B captures of shared/realdata (±0.25 µs of
  float print rounding); the Python analysis holds that offset as a float of µs
  (``collectionTimeBegin - clockMonotonicRaw / 1000``, 0.25 µs steps at today's epoch) and adds
  its shortest ``str`` as a Decimal, so :func:`python_offset_ns` does the same.  The current Python analysis of msprof/analysis
  would apply cntvct_diff and each device's own start_info (it shifts those same captures by
  -6 ... +34 µs against the files msprof wrote then), so this rule follows the exported files.
  Device task times use its float arithmetic (``Ticks.py``,
  :mod:`msprof_py.parse.py_clock`), to the printed digit.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal

from msprof_py.parse.meta import ResultDir, Ticks

CPP_EXPORT_CHIPS = frozenset({5, 15, 16})  # ChipModel CHIP_V4_1_0, CHIP_V6_1_0, CHIP_V6_2_0
ALL_EXPORT_DRV_VERSION = 0x072211  # 467473


@dataclass(frozen=True)
class Clocks:
    """The conversion of every dir of one PROF dir."""

    rule: str  # "cpp" or "python"
    host: ResultDir | None
    devices: tuple[ResultDir, ...]

    def host_ticks(self) -> Ticks:
        rd = self.host
        assert rd is not None
        if self.rule == "cpp":
            return replace(rd.host_ticks(), cpp=True)
        offset = python_offset_ns(rd)
        first = next((d for d in self.devices if d.host_start is not None), None)
        return rd.host_ticks(offset_ns=offset, diff=False, log=first.host_start if first is not None else None)

    def device_ticks(self, rd: ResultDir) -> Ticks:
        if self.rule == "cpp":  # task times through msprof's C++ doubles (parse.cpp_time)
            return replace(rd.device_ticks(), cpp=True)
        return replace(rd.device_ticks(offset_ns=python_offset_ns(self.host if self.host is not None else rd), diff=False),
                       py=True)


def python_offset_ns(rd: ResultDir) -> int:
    """The monotonic -> local offset of ``rd``'s start_info as msprof's Python analysis applies
    it: ``float(collectionTimeBegin) - float(clockMonotonicRaw) / 1000`` µs, added through
    ``Decimal(str(offset))`` (info_conf_reader.py), here in whole ns."""
    offset_us = float(int(rd.start_info["collectionTimeBegin"])) - float(int(rd.start_info["clockMonotonicRaw"])) / 1000
    return int(Decimal(repr(offset_us)) * 1000)


def rule_for(dirs: list[ResultDir]) -> str:
    """"cpp" when msprof would export these dirs with its C++ analysis, else "python"."""
    for rd in dirs:
        try:
            chip = int(rd.info.get("platform_version", -1))
            drv = int(rd.info.get("drvVersion", 0) or 0)
        except (TypeError, ValueError):
            continue
        return "cpp" if chip in CPP_EXPORT_CHIPS and drv >= ALL_EXPORT_DRV_VERSION else "python"
    return "cpp"


def clocks_for(host: ResultDir | None, devices: list[ResultDir]) -> Clocks:
    dirs = ([host] if host is not None else []) + list(devices)
    return Clocks(rule_for(dirs), host, tuple(devices))

"""The metadata files of a PROF directory (msprof-format.md §1.2), derived from the SimClock.

``host/``: info.json, sample.json, start_info, end_info, host_start.log.
``device_{id}/``: info.json.{id}, sample.json, start_info.{id}, end_info.{id}, host_start.log.{id},
dev_start.log.{id}.

The sync points are chosen so msprof's §2.8 conversion is the exact inverse of the clock:
host_start.log holds (monotonic_start_ns, host_cntvct_start) with cntvct_diff 0, dev_start.log
holds (monotonic_start_ns, device_syscnt_start), start_info holds (wall_start_us,
monotonic_start_ns).  So a host counter ``c`` maps to ``(c - cntvct) / host_MHz * 1000 +
monotonic`` = sim_ns + monotonic_start_ns, and local time = sim_ns + wall_start_us * 1000.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from msprof_py.collect.options import ProfilingOptions
from msprof_py.raw import files
from msprof_py.raw.metadata import StartLog, dump_json, format_dev_start, format_host_start
from msprof_py.runtime.clock import SimClock
from msprof_py.runtime.device import DeviceSpec

DRV_VERSION = 467732  # >= 0x072211 (467473): msprof's "all-export" / unique-id mode
CANN_VERSION = "8.0.0"
COLLECTION_VERSION = "1.0"  # msprof's ANALYSIS_VERSION; a mismatch only warns


@dataclass(frozen=True)
class RunInfo:
    """What the metadata needs to know about the profiled run."""

    spec: DeviceSpec
    clock: SimClock
    device_ids: list[int]
    pid: int
    pid_name: str
    end_sim_ns: int  # simulator time when collection stopped
    fixed: bool  # fixed clock: dates in UTC and a fixed hostname, for byte-identical output
    rank_id: int | None = None  # cluster runs: the process's global rank (info.json rank_id of its device)
    hostname: str | None = None  # cluster runs: the node's name (info.json hostname, hostUid from it)


def freq_text(mhz: float) -> str:
    """Frequencies as msprof writes them in info.json: MHz with six decimals ("100.000000")."""
    return f"{mhz:.6f}"


def date_text(us: int, utc: bool) -> str:
    """``2023-11-25 09:03:04.544664`` (local time, or UTC for a fixed clock)."""
    when = datetime.fromtimestamp(us / 1e6, tz=timezone.utc) if utc else datetime.fromtimestamp(us / 1e6)
    return when.strftime("%Y-%m-%d %H:%M:%S.%f")


def info_json(run: RunInfo, device_id: int | None) -> dict[str, Any]:
    """info.json for the host dir (``device_id`` None: no DeviceInfo) or one device dir."""
    spec = run.spec
    ranks = {d: (i if len(run.device_ids) > 1 else -1) for i, d in enumerate(run.device_ids)}
    if run.rank_id is not None:
        ranks = {d: run.rank_id for d in run.device_ids}
    device_info = [] if device_id is None else [{
        "id": device_id,
        "env_type": 3,
        "ctrl_cpu_id": "ARMv8_Cortex_A55",
        "ctrl_cpu_core_num": 1,
        "ctrl_cpu_endian_little": 1,
        "ts_cpu_core_num": 1,
        "ai_cpu_core_num": spec.ai_cpu_core_num,
        "ai_core_num": spec.ai_core_num,
        "ai_cpu_core_id": 1,
        "ai_core_id": 0,
        "aicpu_occupy_bitmap": (1 << (spec.ai_cpu_core_num + 1)) - 2,
        "ctrl_cpu": "0",
        "ai_cpu": ",".join(str(i) for i in range(1, spec.ai_cpu_core_num + 1)),
        "aiv_num": spec.aiv_num,
        "hwts_frequency": freq_text(spec.hwts_frequency_mhz),
        "aic_frequency": f"{spec.aic_frequency_mhz:g}",
        "aiv_frequency": f"{spec.aic_frequency_mhz:g}",
    }]
    return {
        "jobInfo": "NA",
        "devices": "" if device_id is None else str(device_id),
        "pid": str(run.pid),
        "pid_name": run.pid_name,
        "rank_id": -1 if device_id is None else ranks.get(device_id, -1),
        "platform_version": spec.platform_version,
        "drvVersion": DRV_VERSION,
        "cannVersion": CANN_VERSION,
        "version": COLLECTION_VERSION,
        "hostname": run.hostname or "localhost",
        "hostUid": _host_uid(run),
        "memoryTotal": 32 * 1024 * 1024,  # kB of the simulated host
        "cpuNums": 1,
        "sysClockFreq": 100,
        "netCard": [],
        "CPU": [{
            "Id": 0,
            "Name": "GenuineIntel",
            "Frequency": freq_text(spec.host_cpu_frequency_mhz),
            "Logical_CPU_Count": 1,
            "Type": "simulated host CPU",
        }],
        "DeviceInfo": device_info,
    }


def _host_uid(run: RunInfo) -> str:
    if run.hostname is not None:  # one id per node, the same in every rank's PROF dir of that node
        return str(int.from_bytes(run.hostname.encode()[-8:], "big"))
    return "0" if run.fixed else str(run.pid)


def start_info(run: RunInfo) -> dict[str, str]:
    clock = run.clock
    return {
        "collectionTimeEnd": "",
        "clockMonotonicRaw": str(clock.monotonic_start_ns),
        "collectionTimeBegin": str(clock.wall_start_us),
        "collectionDateBegin": date_text(clock.wall_start_us, run.fixed),
        "collectionDateEnd": "",
    }


def end_info(run: RunInfo) -> dict[str, str]:
    clock = run.clock
    end_us = clock.wall_start_us + run.end_sim_ns // 1000
    return {
        "collectionTimeEnd": str(end_us),
        "clockMonotonicRaw": str(clock.monotonic_start_ns + run.end_sim_ns),
        "collectionTimeBegin": "",
        "collectionDateBegin": "",
        "collectionDateEnd": date_text(end_us, run.fixed),
    }


def write_metadata(root: Path, run: RunInfo, options: ProfilingOptions) -> None:
    """Write the metadata files of ``host/`` and every ``device_{id}/`` under ``root``."""
    clock = run.clock
    sync = StartLog(clock.monotonic_start_ns, clock.host_cntvct_start, 0, clock.wall_start_us * 1000)
    start, end = dump_json(start_info(run)), dump_json(end_info(run))

    host = root / files.HOST_DIR
    host.mkdir(parents=True, exist_ok=True)
    (host / "data").mkdir(exist_ok=True)
    _write(host / "info.json", dump_json(info_json(run, None)))
    # sample.json "devices" tells msprof which side a dir is: 64 = host (its HOST_ID)
    _write(host / "sample.json", dump_json(options.sample_json([files.HOST_DEVICE_ID])))
    _write(host / "start_info", start)
    _write(host / "end_info", end)
    _write(host / "host_start.log", format_host_start(sync))

    for dev in run.device_ids:
        d = root / files.device_dir_name(dev)
        (d / "data").mkdir(parents=True, exist_ok=True)
        _write(d / f"info.json.{dev}", dump_json(info_json(run, dev)))
        _write(d / "sample.json", dump_json(options.sample_json([dev])))
        _write(d / f"start_info.{dev}", start)
        _write(d / f"end_info.{dev}", end)
        _write(d / f"host_start.log.{dev}", format_host_start(sync, f"Device{dev}"))
        _write(d / f"dev_start.log.{dev}", format_dev_start(
            StartLog(clock.monotonic_start_ns, clock.device_syscnt_start, 0, clock.wall_start_us * 1000)))


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)

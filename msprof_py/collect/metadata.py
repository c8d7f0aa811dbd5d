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

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from msprof_py.collect.options import ProfilingOptions
from msprof_py.collect.sample_json import sample_json
from msprof_py.collect.slices import DONE_SUFFIX
from msprof_py.raw import files
from msprof_py.raw.metadata import StartLog, dump_json, format_dev_start, format_host_start
from msprof_py.runtime.clock import SimClock
from msprof_py.runtime.device import DeviceSpec

DRV_VERSION = 467732  # >= 0x072211 (467473): msprof's "all-export" / unique-id mode
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
    """info.json for the host dir (``device_id`` None: no DeviceInfo) or one device dir.

    The keys, their JSON types and their order are those of a real Ascend 910B / CANN 9.0
    capture (msprof reads frequencies and ``pid`` as strings, ``DeviceInfo`` as a one-element list
    in device dirs).
    """
    spec = run.spec
    ranks = {d: (i if len(run.device_ids) > 1 else -1) for i, d in enumerate(run.device_ids)}
    if run.rank_id is not None:
        ranks = {d: run.rank_id for d in run.device_ids}
    device_info = [] if device_id is None else [{
        "aic_frequency": f"{spec.aic_frequency_mhz:g}",
        "ai_cpu": ",".join(str(i) for i in range(1, spec.ai_cpu_core_num + 1)),
        "env_type": 3,
        "ctrl_cpu_id": "ARMv8_Cortex_A55",
        "ctrl_cpu_core_num": 1,
        "ai_core_id": 0,
        "ctrl_cpu": "0",
        "aiv_frequency": f"{spec.aic_frequency_mhz:g}",
        "ctrl_cpu_endian_little": 1,
        "hwts_frequency": freq_text(spec.hwts_frequency_mhz),
        "id": device_id,
        "ts_cpu_core_num": 1,
        "ai_cpu_core_num": spec.ai_cpu_core_num,
        "ai_core_num": spec.ai_core_num,
        "aiv_num": spec.aiv_num,
        "ai_cpu_core_id": 1,
        "aicpu_occupy_bitmap": (1 << (spec.ai_cpu_core_num + 1)) - 2,
    }]
    up_s = run.clock.monotonic_start_ns / 1e9
    return {
        "cpuCores": 1,
        "cpuNums": 1,
        "memoryTotal": 32 * 1024 * 1024,  # kB of the simulated host
        "DeviceInfo": device_info,
        "netCard": [],
        "drvVersion": DRV_VERSION,
        "CPU": [{"Type": "", "Frequency": freq_text(spec.host_cpu_frequency_mhz), "Name": "GenuineIntel",
                 "Logical_CPU_Count": "1", "Id": 0}],
        "netCardNums": 0,
        "jobInfo": "NA",
        "rank_id": -1 if device_id is None else ranks.get(device_id, -1),
        "OS": "Linux-msprof_py-simulated",
        "version": COLLECTION_VERSION,
        "pid_name": run.pid_name,
        "platform_version": spec.platform_version,
        "hostname": run.hostname or "localhost",
        **({} if run.hostname is None else {"hostUid": _host_uid(run)}),  # cluster runs: one id per node
        "upTime": f"{up_s:.2f} {up_s:.2f}",  # /proc/uptime: seconds up, seconds idle
        "hwtype": "x86_64",
        "devices": "" if device_id is None else str(device_id),
        "sysClockFreq": 100,
        "platform": "",
        "pid": str(run.pid),
    }


def _host_uid(run: RunInfo) -> str:
    """One id per node, the same in every rank's PROF dir of that node (a real single-host
    capture has no hostUid; msprof then uses "0")."""
    assert run.hostname is not None
    return str(int.from_bytes(run.hostname.encode()[-8:], "big"))


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


def write_metadata(root: Path, run: RunInfo, options: ProfilingOptions, prof_dir: Path | None = None) -> None:
    """Write the metadata files of ``host/`` and every ``device_{id}/`` under ``root``.

    ``prof_dir``: the PROF directory's final path (``root`` is renamed to it), for sample.json's
    ``result_dir``; every file gets its ``.done`` marker (``filesize:<bytes>``) as in a real capture.
    """
    clock = run.clock
    # a real capture's start logs hold no clock_realtime line
    sync = StartLog(clock.monotonic_start_ns, clock.host_cntvct_start, 0)
    start, end = dump_json(start_info(run)), dump_json(end_info(run))
    final = prof_dir if prof_dir is not None else root
    base = Path(final.name) if run.fixed else final.absolute()  # fixed clock: no machine path in the bytes
    bin_pid = run.pid if run.fixed else os.getpid()

    def sample(side: int, folder: str) -> bytes:
        return dump_json(sample_json(options, side, platform_version=run.spec.platform_version, app=run.pid_name,
                                     pid=run.pid, bin_pid=bin_pid, result_dir=f"{base / folder}/"))

    host = root / files.HOST_DIR
    host.mkdir(parents=True, exist_ok=True)
    (host / "data").mkdir(exist_ok=True)
    _write(host / "info.json", dump_json(info_json(run, None)))
    # sample.json "devices" tells msprof which side a dir is: 64 = host (its HOST_ID)
    _write(host / "sample.json", sample(files.HOST_DEVICE_ID, files.HOST_DIR))
    _write(host / "start_info", start)
    _write(host / "end_info", end)
    _write(host / "host_start.log", format_host_start(sync))

    for dev in run.device_ids:
        name = files.device_dir_name(dev)
        d = root / name
        (d / "data").mkdir(parents=True, exist_ok=True)
        _write(d / f"info.json.{dev}", dump_json(info_json(run, dev)))
        _write(d / "sample.json", sample(dev, name))
        _write(d / f"start_info.{dev}", start)
        _write(d / f"end_info.{dev}", end)
        _write(d / f"host_start.log.{dev}", format_host_start(sync, f"Device{dev}"))
        _write(d / f"dev_start.log.{dev}", format_dev_start(StartLog(clock.monotonic_start_ns,
                                                                     clock.device_syscnt_start, 0)))


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.with_name(path.name + DONE_SUFFIX).write_bytes(f"filesize:{len(data)}\n".encode())

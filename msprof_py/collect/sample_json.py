"""``sample.json``: the collection switches, exactly as CANN's collector writes them (Ascend 910B).

A real capture (Ascend 910B, CANN 9.0, ``msprof --application``) has the same 131 keys with the
same JSON types in ``host/sample.json`` and every ``device_{id}/sample.json``; only ``devices``,
``job_id`` ("64" for host), ``hostProfiling`` (true for host) and ``result_dir`` (that side's folder)
differ between the sides.  msprof's C++ analysis refuses a PROF directory whose sample.json lacks
a key it reads (``ai_core_profiling_events``, ``aicore_sampling_interval``, ``aiv_metrics``,
``aiv_profiling_events``, ``aiv_sampling_interval``, ``llc_profiling``, ...: "JSON parameter
loading failed"), so the collector writes every key a real capture has.

Values: the real capture's, except the keys CANN's profiling-options path derives from the
options (``TEMPLATE`` holds ``None`` for those):

| key                                  | from                                                       |
|--------------------------------------|------------------------------------------------------------|
| taskTrace / taskTime / prof_level    | task_time ("on" -> level1; "l0" -> level0; "off")          |
| runtimeTrace, stars_acsq_task        | "on" unless task_time is "off"                             |
| acl / runtimeApi / hcclTrace / ts_fw_training | ascendcl / runtime_api / hccl / training_trace   |
| aicpuTrace, l2CacheTaskProfiling, msproftx | the aicpu / l2 / msproftx switches ("on" / "off") |
| l2CacheTaskProfilingEvents           | l2 on: the 910B events msprof's L2 calculation reads (request, hit, victim) |
| storageLimit, instrProfiling         | the inert msprof switches of that name                     |
| ai_core_metrics + ai_core_profiling_events | aic_metrics; on chip V4 "PipeUtilization" becomes "PipeUtilizationExct" with its own events, as CANN does |
| aiv_metrics + aiv_profiling_events   | aic_metrics as given                                       |

The event lists are CANN's Ascend 910B (``CloudV2``) PMU tables.  ``--fixed-clock`` makes
``result_dir`` relative to the output folder (``PROF_.../host/``) so two runs give identical bytes.
"""
from __future__ import annotations

from typing import Any

from msprof_py.collect.options import ProfilingOptions
from msprof_py.raw.files import HOST_DEVICE_ID
from msprof_py.raw.l2_cache import EVENTS_910B as L2_EVENTS

TEMPLATE: dict[str, Any] = {
    'hostAllPidMemProfiling': 'off', 'hostProfilingSamplingInterval': 20, 'hostSysUsage': '', 'qosEvents': '',
    'qosProfiling': '', 'runtimeApi': None, 'aicore_sampling_interval': 10, 'dvpp_sampling_interval': 20,
    'aicpuTrace': None, 'aiv_sampling_interval': 10, 'ccuInstr': 'off', 'host_mem_profiling': 'off',
    'host_osrt_profiling': 'off', 'hostProfiling': None, 'hostAllPidCpuProfiling': 'off', 'acl': None,
    'io_sampling_interval': 10, 'host_network_profiling': 'off', 'nicProfiling': 'off', 'ts_cpu_hot_function': '',
    'instrProfilingFreq': 1000, 'ai_core_profiling_metrics': '', 'dvpp_profiling': 'off', 'ubProfiling': 'off',
    'interconnection_sampling_interval': 20, 'l2CacheTaskProfilingEvents': '', 'sys_sampling_interval': 100,
    'cpu_sampling_interval': 20, 'ai_core_profiling_mode': None, 'devices': None, 'runtimeTrace': None,
    'app_parameters': '', 'host_cpu_profiling': 'off', 'interconnection_profiling': 'off', 'pcieProfiling': '',
    'npuEvents': '', 'ts_memcpy': 'on', 'memServiceflow': '', 'sys_profiling': 'off', 'ai_core_status': '',
    'profiling_options': '', 'pcSampling': 'off', 'hcclTrace': None, 'mstxDomainInclude': '',
    'roceProfiling': 'off', 'aiCtrlCpuProfiling': 'off', 'tsCpuProfiling': 'off', 'pureCpu': 'off',
    'hardware_mem_sampling_interval': 20000, 'io_profiling': 'off', 'cpu_profiling': 'off', 'instrProfiling': None,
    'host_sys': '', 'app_dir': '', 'memProfiling': 'off', 'ts_cpu_profiling_events': '', 'storageLimit': None,
    'hscb': 'off', 'taskBlockShink': '', 'result_dir': None, 'profiling_mode': '', 'llc_interval': 20,
    'jobInfo': '', 'hwts_log1': '', 'pid_sampling_interval': 100, 'aiv_profiling_metrics': '',
    'aiv_profiling_events': None, 'aiv_profiling_mode': None, 'hardware_mem': 'off', 'msprof': 'off',
    'mstxDomainExclude': '', 'ai_core_profiling_events': None, 'hccsProfiling': 'off', 'taskTrace': None,
    'msprof_llc_profiling': '', 'prof_level': None, 'ai_core_profiling': None, 'app_env': '', 'geApi': 'off',
    'taskMemory': 'off', 'memInterval': 20, 'ts_keypoint': 'on', 'job_id': None, 'app_location': '', 'app': None,
    'ai_core_lpm': 'on', 'ubInterval': 20, 'aiv_profiling': None, 'hbmProfiling': '', 'ts_task_track': '',
    'ai_core_metrics': None, 'ts_fw_training': None, 'ts_cpu_usage': '', 'taskTime': None, 'ts_timeline': '',
    'stars_acsq_task': None, 'ai_vector_status': '', 'sysLp': 'on', 'taskTsfw': 'off', 'ts_task_time': '',
    'hwts_log': '', 'l2CacheTaskProfiling': None, 'profiling_period': -1, 'hccsInterval': 20,
    'ai_ctrl_cpu_profiling_events': '', 'nicInterval': 10, 'taskBlock': '', 'aiv_metrics': None,
    'pcieInterval': 20, 'isCancel': False, 'roceInterval': 10, 'appMemProfiling': 'on', 'pid_profiling': 'off',
    'llc_profiling': 'read', 'llc_profiling_events': 'read', 'durationTime': '', 'ddr_profiling': '',
    'ddr_interval': 20, 'msprofBinPid': None, 'ddr_master_id': 0, 'hbm_profiling_events': '', 'hbmInterval': 20,
    'ddr_profiling_events': '', 'host_sys_pid': None, 'host_disk_profiling': 'off', 'msproftx': None,
    'host_disk_freq': 50, 'sysLpFreq': 10000, 'aicScale': 'all', 'profMode': '', 'delayTime': '',
}

AIC_EVENTS = {  # 910B AI Core PMU events per metric
    "ArithmeticUtilization": "0x49,0x4a,0x4b,0x4c,0x4d,0x4e,0x4f",
    "PipeUtilizationExct": "0x416,0x417,0x9,0x302,0xc,0x303,0x54,0x55",
    "Memory": "0x15,0x16,0x31,0x32,0xf,0x10,0x12,0x13",
    "MemoryL0": "0x1b,0x1c,0x21,0x22,0x27,0x28,0x29,0x2a",
    "ResourceConflictRatio": "0x64,0x65,0x66",
    "MemoryUB": "0x10,0x13,0x37,0x38,0x3d,0x3e,0x43,0x44",
    "L2Cache": "0x500,0x502,0x504,0x506,0x508,0x50a",
    "MemoryAccess": "0x32,0x206,0x20c,0x3e,0x3d,0x50c,0x50d,0x50e",  # the 8 registers msprof's calculator reads
}
AIV_EVENTS = {**AIC_EVENTS, "PipeUtilization": "0x8,0xa,0x9,0xb,0xc,0xd,0x54,0x55"}  # 910B AI Vector core
del AIV_EVENTS["PipeUtilizationExct"]
CHIP_V4 = "5"  # platform_version of Ascend 910B / Atlas A2
# inert msprof switches -> (sample.json key, value when not given), as CANN's options path sets them
_INERT_KEYS = {"storage_limit": ("storageLimit", ""), "instr_profiling": ("instrProfiling", "off")}
_PROF_LEVEL = {"on": "level1", "l0": "level0", "l1": "level1", "l2": "level2", "off": "off"}


def sample_json(options: ProfilingOptions, side: int, *, platform_version: str, app: str, pid: int,
                bin_pid: int, result_dir: str) -> dict[str, Any]:
    """The sample.json of one side (``side`` = device id, or 64 (``HOST_DEVICE_ID``) for ``host/``).

    ``app``: the profiled program's name; ``pid`` its process id; ``bin_pid`` the collector's;
    ``result_dir``: that side's folder, ending in "/".
    """
    aic = options.aic_metrics
    if platform_version == CHIP_V4 and aic == "PipeUtilization":
        aic = "PipeUtilizationExct"
    task_on = options.task_time != "off"
    inert = {key: str(options.extra.get(opt, default)) for opt, (key, default) in _INERT_KEYS.items()}
    values = {
        "devices": str(side), "job_id": str(side), "hostProfiling": side == HOST_DEVICE_ID, "result_dir": result_dir,
        "app": app, "msprofBinPid": bin_pid, "host_sys_pid": pid,
        "ai_core_profiling": "on", "ai_core_metrics": aic, "ai_core_profiling_events": AIC_EVENTS.get(aic, ""),
        "ai_core_profiling_mode": "task-based", "aiv_profiling": "on", "aiv_metrics": options.aic_metrics,
        "aiv_profiling_events": AIV_EVENTS.get(options.aic_metrics, ""), "aiv_profiling_mode": "task-based",
        "prof_level": _PROF_LEVEL[options.task_time],
        "taskTime": "l1" if options.task_time == "on" else options.task_time,
        "taskTrace": options.task_time, "runtimeTrace": "on" if task_on else "off",
        "stars_acsq_task": "on" if task_on else "off", "acl": options.ascendcl, "runtimeApi": options.runtime_api,
        "hcclTrace": options.hccl, "ts_fw_training": options.training_trace, **inert,
        "aicpuTrace": options.aicpu, "l2CacheTaskProfiling": options.l2, "msproftx": options.msproftx,
        "l2CacheTaskProfilingEvents": ",".join(L2_EVENTS) if options.l2 == "on" else "",
    }
    out = {**TEMPLATE, **values}
    assert len(out) == len(TEMPLATE) and None not in out.values(), "every computed key is set"
    return out

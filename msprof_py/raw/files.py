"""File naming inside a PROF directory, shared by the writer (collect) and the reader (parse).

Host data:   ``host/data/{aging|unaging}.{tag}.slice_{N}``  e.g. ``aging.compact.task_track.slice_0``
Device data: ``device_{id}/data/{tag}.{id}.slice_{N}``     e.g. ``stars_soc.data.0.slice_3``
A data stream is cut into slices at a size limit; records may straddle slice boundaries, so a
reader concatenates one stream's slices in numeric ``N`` order before decoding.
"""
from __future__ import annotations

import random
import re
from datetime import datetime

PROF_DIR_RE = re.compile(r"^PROF_\d{6}_\d{17}_\w+$")
# tags are two words of letters, digits and "_" (a word starts with a letter: "l2_cache.data")
HOST_DATA_RE = re.compile(r"^(?P<age>aging|unaging)\.(?P<tag>[A-Za-z_]\w*\.[A-Za-z_]\w*)\.slice_(?P<n>\d+)$", re.ASCII)
DEVICE_DATA_RE = re.compile(r"^(?P<tag>[A-Za-z_]\w*\.[A-Za-z_]\w*)\.(?P<dev>\d+)\.slice_(?P<n>\d+)$", re.ASCII)
# metadata files live at the root of host/ or device_{id}/, never in data/
META_RE = {
    "info": re.compile(r"^info\.json(\.\d+)?$"),
    "sample": re.compile(r"^sample\.json$"),
    "start_info": re.compile(r"^start_info(\.\d+)?$"),
    "end_info": re.compile(r"^end_info(\.\d+)?$"),
    "host_start": re.compile(r"^host_start\.log(\.\d+)?$"),
    "dev_start": re.compile(r"^dev_start\.log\.\d+$"),
}
SKIP_SUFFIXES = (".done", ".complete", ".zip")
# never PROF or device dirs (msprof's FILTER_DIRS)
FILTER_DIRS = frozenset({".profiler", "HCCL_PROF", "timeline", "query", "sqlite", "log", "analyze",
                         "mindstudio_profiler_log", "mindstudio_profiler_output", "msprof_py_cache"})
DEFAULT_SLICE_BYTES = 2 * 1024 * 1024  # the collector rolls a data stream over at this size
HOST_DIR = "host"
HOST_DEVICE_ID = 64  # msprof's internal device id for host data


def host_data_name(aging: bool, tag: str, n: int) -> str:
    return f"{'aging' if aging else 'unaging'}.{tag}.slice_{n}"


def device_data_name(tag: str, device_id: int, n: int) -> str:
    return f"{tag}.{device_id}.slice_{n}"


def device_dir_name(device_id: int) -> str:
    return f"device_{device_id}"


def prof_dir_name(seq: int, when: datetime, rng: random.Random) -> str:
    """``PROF_{6-digit seq}_{YYYYMMDDhhmmssSSS}_{16 upper-case alphanumerics}``."""
    stamp = when.strftime("%Y%m%d%H%M%S") + f"{when.microsecond // 1000:03d}"
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    suffix = "".join(rng.choice(alphabet) for _ in range(16))
    return f"PROF_{seq:06d}_{stamp}_{suffix}"

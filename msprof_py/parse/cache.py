"""Parsed tables cached beside the raw data: ``PROF_X/mindstudio_profiler_log/msprof_py_cache/session.pkl``.

Where msprof does not look: its Python analysis takes every sub-dir of a PROF dir not in its
``Constant.FILTER_DIRS`` for a result dir (an unknown one stops it: "does not have PROF dir"),
its C++ analysis reads only ``host`` and ``device_*``; ``mindstudio_profiler_log`` (msprof's own
log folder) is in that filter list and neither analysis reads or clears it.  A cache left
directly in the PROF dir by an older msprof_py (``PROF_X/msprof_py_cache``) is removed when the
new one is written, so msprof accepts the dir again.

One file per part (:func:`part_file`): the host tables with the index of the devices, then one
per device.  Pickle protocol 5 of the DataFrames (no extra dependency, loads 1M tasks well under a second).
Keyed by a fingerprint of every raw/metadata file's relative path, size and mtime plus the
parser version: any change to the raw tree invalidates it.  Written to a temporary name and
renamed; a PROF dir we cannot write to just means no cache (a warning, never an error).
"""
from __future__ import annotations

import hashlib
import os
import pickle
import shutil
from pathlib import Path
from typing import Any

from msprof_py.atomic import atomic_open
from msprof_py.errors import WarningLog
from msprof_py.memory import trim
from msprof_py.raw.files import FILTER_DIRS

PARSER_VERSION = "parse-5+pmu+counters"  # 3: C++-path task times, devices.host_uid; 4: api dur_ticks, before_profiling; 5: per-device parts
CACHE_DIR = "msprof_py_cache"
CACHE_PARENT = "mindstudio_profiler_log"  # in msprof's FILTER_DIRS
CACHE_FILE = "session.pkl"


def cache_dir(prof: Path) -> Path:
    """The cache folder of one PROF dir."""
    return prof / CACHE_PARENT / CACHE_DIR


def legacy_cache_dir(prof: Path) -> Path:
    """Where msprof_py up to this version cached (inside the PROF dir: it stops msprof)."""
    return prof / CACHE_DIR


def fingerprint(prof: Path) -> str:
    """Digest of (relative path, size, mtime_ns) of every file under host/ and device_*/."""
    h = hashlib.sha256(PARSER_VERSION.encode())
    tops = sorted(d for d in prof.iterdir() if d.is_dir() and (d.name == "host" or d.name.startswith("device_")))
    for root, dirs, files in (w for top in tops for w in os.walk(top)):
        dirs[:] = sorted(d for d in dirs if d not in FILTER_DIRS)
        for name in sorted(files):
            p = Path(root) / name
            try:
                st = p.stat()
            except OSError:
                continue
            h.update(f"{p.relative_to(prof)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def part_file(name: str) -> str:
    """File of one cached part: ``session.pkl`` holds the host tables and the index of the
    device parts, ``device_{id}.pkl`` each device's tables (so an export can read one device)."""
    return CACHE_FILE if name == "host" else f"{name}.pkl"


def load(prof: Path, key: str, part: str = "host") -> dict[str, Any] | None:
    path = cache_dir(prof) / part_file(part)
    try:
        with open(path, "rb") as f:
            blob = pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError, TypeError):
        return None
    if not isinstance(blob, dict) or blob.get("key") != key:
        return None
    return blob.get("data")


def store(prof: Path, key: str, data: dict[str, Any], warnings: WarningLog, part: str = "host") -> bool:
    """Write one part (False, and a warning, when it cannot be written)."""
    folder = cache_dir(prof)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_open(folder / part_file(part)) as f:
            pickle.dump({"key": key, "data": data}, f, protocol=5)
    except OSError as err:
        warnings.warn(f"{prof}: cannot write the parse cache ({err.strerror or err}); parsing again next time")
        return False
    finally:
        trim()  # pickling leaves freed heap behind (small objects below the mmap threshold)
    if part != "host":
        return True
    legacy = legacy_cache_dir(prof)
    if (legacy / CACHE_FILE).is_file():
        shutil.rmtree(legacy, ignore_errors=True)
    return True

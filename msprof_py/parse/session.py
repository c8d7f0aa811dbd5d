"""``load(path) -> Session``: every PROF dir under ``path`` parsed into the tables of
:mod:`msprof_py.parse.schema`, with model/iteration selection as msprof does it."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.errors import (DataError, InvalidParamError, InvalidPathError, NotEnoughMemoryError, StepTraceError,
                              WarningLog)
from msprof_py.memory import available_bytes, release_freed_memory
from msprof_py.parse import cache, schema
from msprof_py.parse.meta import ResultDir, load_result_dir
from msprof_py.raw.common import INVALID_U32
from msprof_py.raw.files import FILTER_DIRS, HOST_DIR

DEVICE_DIR_RE = re.compile(r"^device_(\d+)$")
MAX_DEVICE_ID = 65535  # real ids are < 64 (64 is msprof's host id); anything huge is a renamed dir
TABLES = ("api", "tasks", "steps", "all_reduce", "communication", "comm_tasks", "fusion_ops", "memcpy", "devices",
          "pmu", "aicore_freq", "aicpu", "dp", "l2_cache", "msproftx")


@dataclass
class Session:
    """Parsed profiling data of one or several PROF dirs.

    Tables (pandas DataFrames, columns exactly as in :mod:`msprof_py.parse.schema`, times are
    int64 local wall-clock ns):

    - ``api``: host API calls and paired events (``schema.API_COLUMNS``);
    - ``tasks``: device tasks joined with their host launch (``schema.TASK_COLUMNS``), plus
      host-only rows (``match`` == "host_only", start/dur -1);
    - ``steps`` / ``all_reduce``: iterations per (device, model) and all-reduce tag pairs;
    - ``communication`` / ``comm_tasks``: HCCL big ops and their sub-tasks;
    - ``fusion_ops``, ``memcpy``, ``devices``;
    - ``pmu``: msprof's metric_summary values per device task with PMU data (columns depend on
      the chip and ``aic_metrics``: :mod:`msprof_py.parse.pmu.table`); ``aicore_freq``: AI Core
      frequency changes (``device_id, timestamp_ns, freq_mhz``; :mod:`msprof_py.parse.pmu.freq`);
    - ``aicpu``, ``dp``, ``l2_cache``, ``msproftx``: AI CPU kernel runs, data-preprocess queue
      events, per-task L2 cache rates and msproftx marks / ranges (:mod:`msprof_py.parse.counters`).

    ``profs`` holds one Session per PROF dir (``path`` set) when several were loaded;
    ``warnings`` collects every recoverable problem met while parsing (print once at the end).
    """

    path: Path
    api: pd.DataFrame
    tasks: pd.DataFrame
    steps: pd.DataFrame
    all_reduce: pd.DataFrame
    communication: pd.DataFrame
    comm_tasks: pd.DataFrame
    fusion_ops: pd.DataFrame
    memcpy: pd.DataFrame
    devices: pd.DataFrame
    pmu: pd.DataFrame = field(default_factory=lambda: schema.empty("pmu"))
    aicore_freq: pd.DataFrame = field(default_factory=lambda: schema.empty("aicore_freq"))
    aicpu: pd.DataFrame = field(default_factory=lambda: schema.empty("aicpu"))
    dp: pd.DataFrame = field(default_factory=lambda: schema.empty("dp"))
    l2_cache: pd.DataFrame = field(default_factory=lambda: schema.empty("l2_cache"))
    msproftx: pd.DataFrame = field(default_factory=lambda: schema.empty("msproftx"))
    warnings: WarningLog = field(default_factory=WarningLog)
    profs: list["Session"] = field(default_factory=list)
    selection: tuple[int, int, int] | None = None  # (model_id, iteration_id, count) after select()
    # the PROF dir's device ids when this session holds the device tables of one device only
    # (an export reading one device at a time: :mod:`msprof_py.parse.source`)
    all_devices: tuple[int, ...] | None = None
    # per device id, small values exporters of one device need of the others (such a session
    # lacks their rows), e.g. ``last_summary_row``: msprof's C++ op_summary wait time runs on
    # across devices; None for a whole session
    device_facts: dict[int, dict[str, Any]] | None = None

    # ------------------------------------------------------------------ queries
    def model_ids(self, device_id: int | None = None) -> list[int]:
        """Models msprof lets you select: (models with GE op info or HCCL ops) & step-trace models
        (of one device when ``device_id`` is given: msprof checks each device dir on its own)."""
        t, c, st = self.tasks, self.communication, self.steps
        if device_id is not None:
            t, c, st = (df[df["device_id"] == device_id] for df in (t, c, st))
        ge = set(t.loc[t["op_type"] != "N/A", "model_id"].unique().tolist())
        ge |= set(c["model_id"].unique().tolist())
        return sorted(m for m in set(st["model_id"].unique().tolist()) & ge if m != INVALID_U32)

    def select(self, model_id: int, iteration_id: int, iteration_count: int = 1) -> "Session":
        """Tables restricted to iterations ``iteration_id .. iteration_id+count-1`` of ``model_id``.

        Window per device (msprof's rule): ``(max step_end of any iteration with step_end <
        first.step_start, last.step_end]``.  Device rows are selected by start time in the window
        (rows of other models are dropped, device-only rows kept); host-only rows of the model by
        index id.  Raises InvalidParamError / StepTraceError with msprof's messages."""
        if not 1 <= iteration_count <= 5:
            raise InvalidParamError(f"The iteration count {iteration_count} is invalid. Must be greater than 0 "
                                    "and less than or equal to 5.")
        valid = self.model_ids()
        if model_id not in valid:
            raise InvalidParamError(f"The model id {model_id} is invalid. Must select from "
                                    f"{{{', '.join(map(str, valid))}}}. Please enter a valid model id.")
        # GE numbers models per process, one id per load (ModelManager::GenModelId), so a process
        # that loads its graph on two devices has model 1 on device 0 and model 2 on device 1;
        # msprof then refuses model 1 for device_1 rather than export an empty iteration there.
        for dev in sorted(set(self.steps["device_id"].unique().tolist())):
            mine = self.model_ids(dev)
            if model_id not in mine:
                raise InvalidParamError(f"device_{dev}: The model id {model_id} is invalid. Must select from "
                                        f"{{{', '.join(map(str, mine))}}}. Please enter a valid model id.")
        ms = self.steps[self.steps["model_id"] == model_id]
        lo, hi = int(ms["index_id"].min()), int(ms["index_id"].max())
        last = iteration_id + iteration_count - 1
        if iteration_id < lo or last > hi:
            rng = f"{iteration_id}-{last}" if iteration_count > 1 else f"{iteration_id}"
            raise StepTraceError(f"The exported iteration {rng} is invalid for model id {model_id}. "
                                 f"Please enter a valid iteration within {lo}-{hi}.")
        from msprof_py.parse.steps import window_starts

        ws_all = window_starts(self.steps.reset_index(drop=True))
        st = self.steps.reset_index(drop=True).assign(_ws=ws_all)
        chosen = st[(st["model_id"] == model_id) & st["index_id"].between(iteration_id, last)]
        windows = chosen.groupby("device_id").agg(lo=("_ws", "min"), hi=("step_end_ns", "max"))

        def in_window(df: pd.DataFrame, col: str, per_device: bool = True) -> np.ndarray:
            if df.empty:
                return np.zeros(0, bool)
            if per_device and "device_id" in df.columns:
                w = windows.reindex(df["device_id"].to_numpy())
                lo_, hi_ = w["lo"].to_numpy(), w["hi"].to_numpy()
            else:
                lo_, hi_ = windows["lo"].min(), windows["hi"].max()
            t = df[col].to_numpy()
            return (t > lo_) & (t <= hi_)

        t = self.tasks
        dev_rows = in_window(t, "start_ns") & ((t["model_id"] == model_id) | (t["match"] == "device_only")).to_numpy()
        host_rows = ((t["match"] == "host_only") & (t["model_id"] == model_id)
                     & t["index_id"].isin([0, *range(iteration_id, last + 1)])).to_numpy()
        new = replace(
            self,
            api=self.api[in_window(self.api, "start_ns", per_device=False)].reset_index(drop=True),
            tasks=t[dev_rows | host_rows].reset_index(drop=True),
            steps=self.steps[(self.steps["model_id"] == model_id)
                             & self.steps["index_id"].between(iteration_id, last)].reset_index(drop=True),
            all_reduce=self.all_reduce[(self.all_reduce["model_id"] == model_id)
                                       & self.all_reduce["index_id"].between(iteration_id, last)].reset_index(drop=True),
            communication=self.communication[in_window(self.communication, "start_ns")].reset_index(drop=True),
            comm_tasks=self.comm_tasks[in_window(self.comm_tasks, "start_ns")].reset_index(drop=True),
            fusion_ops=self.fusion_ops[self.fusion_ops["model_id"].to_numpy() == model_id].reset_index(drop=True),
            profs=[],
            selection=(model_id, iteration_id, iteration_count),
        )
        return new

    def table(self, name: str) -> pd.DataFrame:
        return getattr(self, name)

    def __post_init__(self) -> None:
        for name in TABLES:
            schema.check(name, getattr(self, name))

    @classmethod
    def from_tables(cls, path: Path | None = None, warnings: WarningLog | None = None,
                    **tables: pd.DataFrame | None) -> "Session":
        """A session made directly from tables (tests, benchmarks, other tools): a table not given
        is :func:`schema.empty`; a given one must have every documented column (ValueError)."""
        unknown = sorted(set(tables) - set(TABLES))
        if unknown:
            raise ValueError(f"unknown session tables {unknown}")
        full = {name: schema.empty(name) if tables.get(name) is None else tables[name] for name in TABLES}
        return cls(path=path if path is not None else Path("."), warnings=warnings or WarningLog(), **full)


# ---------------------------------------------------------------------- discovery
def find_prof_dirs(path: str | os.PathLike[str]) -> list[Path]:
    """``path`` itself if it is a PROF dir, else its PROF sub-dirs (one level, msprof's rule)."""
    p = Path(os.path.expanduser(os.fspath(path)))
    if not p.exists():
        raise InvalidPathError(f'The path "{p}" does not exist. Please check the path.')
    if not p.is_dir():
        raise InvalidPathError(f'The path "{p}" is not a directory. Please check the path.')
    if _is_prof(p):
        return [p]
    subs = sorted(c for c in _children(p) if c.name not in FILTER_DIRS and _is_prof(c))
    if not subs:
        raise InvalidPathError(f'The path "{p}" does not have PROF dir. Please check the path.')
    return subs


def _children(p: Path) -> list[Path]:
    try:
        return [c for c in p.iterdir() if c.is_dir()]
    except OSError as err:
        raise InvalidPathError(f'The path "{p}" cannot be read ({err.strerror}).') from None


def _is_prof(p: Path) -> bool:
    return any(c.name == HOST_DIR or DEVICE_DIR_RE.match(c.name) for c in _children(p))


# ---------------------------------------------------------------------- loading
# Memory of a load, measured on the 1,000,968-task collection (131 MB of raw data files, Python
# 3.11, numpy 2.4, pandas 3.1): 70 MB of imports; the parse of one PROF dir peaks at 2.8-3.0 x its
# raw bytes above that (decoded records, joins); the finished tables keep ~1.0 x; several PROF
# dirs are concatenated (their tables twice at once).  Benchmarks: benchmarks/RESULTS.md.
IMPORT_BYTES = 70_000_000
PARSE_PEAK_PER_RAW_BYTE = 3.0
TABLE_BYTES_PER_RAW_BYTE = 1.0


def data_bytes(folder: Path) -> int:
    """Bytes of the files in ``folder/data`` (a host or device result dir's raw data); 0 when
    there is no readable ``data`` dir (nothing to decode), files that vanish or cannot be
    stat'ed while it is read not counted."""
    total = 0
    try:
        with os.scandir(folder / "data") as entries:
            for e in entries:
                try:
                    if e.is_file():
                        total += e.stat().st_size
                except OSError:
                    pass
    except OSError:
        pass
    return total


def raw_bytes(prof: Path) -> int:
    """Bytes of the raw data files of one PROF dir (``host/data``, ``device_*/data``)."""
    return sum(data_bytes(d) for d in _children(prof) if d.name == HOST_DIR or DEVICE_DIR_RE.match(d.name))


def memory_needed(path: str | os.PathLike[str]) -> int:
    """Bytes :func:`load` will need at its peak for ``path``, estimated from the raw file sizes
    before anything is read (see the constants above; within ~10 % on the collections measured)."""
    raws = [raw_bytes(p) for p in find_prof_dirs(path)]
    peak = max(raws, default=0) * PARSE_PEAK_PER_RAW_BYTE
    if len(raws) > 1:
        peak = max(peak, 2 * TABLE_BYTES_PER_RAW_BYTE * sum(raws))
    return int(IMPORT_BYTES + peak)


def load(path: str | os.PathLike[str], use_cache: bool = True, check_memory: bool = True) -> Session:
    """Parse every PROF dir at ``path`` (a PROF dir or its parent) into one Session.

    Before reading anything, :func:`memory_needed` is compared with the memory the system has
    available: a load that would not fit stops with :class:`NotEnoughMemoryError` saying how much
    it needs (``check_memory=False`` loads anyway)."""
    if check_memory:
        need, have = memory_needed(path), available_bytes()
        if have is not None and need > have:
            raise NotEnoughMemoryError(
                f"{path}: loading needs about {need / 1e6:,.0f} MB of memory, {have / 1e6:,.0f} MB are available "
                "(msprof-py export writes the files with less; load(..., check_memory=False) tries anyway)")
    release_freed_memory()
    sessions = [load_prof(p, use_cache) for p in find_prof_dirs(path)]
    if len(sessions) == 1:
        return sessions[0]
    warnings = WarningLog()
    for s in sessions:
        warnings.extend(s.warnings)
    tables = {name: pd.concat([_with_origin(getattr(s, name), s) for s in sessions], ignore_index=True)
              for name in TABLES}
    for name in ("api", "tasks", "communication", "comm_tasks"):
        tables[name] = _recategorize(tables[name])
    for df in tables.values():
        for c in ("host", "prof"):
            if c in df:
                df[c] = df[c].astype("category")
    return Session(path=Path(path), warnings=warnings, profs=sessions, **tables)


def _with_origin(df: pd.DataFrame, s: Session) -> pd.DataFrame:
    """``df`` with where its rows come from, for a session of several PROF dirs: ``rank_id`` (the
    first device's info.json rank_id, -1 if none), ``host`` (its hostname) and ``prof`` (the dir's
    name), as categoricals or small ints, so ranks of a cluster job stay apart."""
    dev = s.devices[s.devices["device_id"] != 64] if "device_id" in s.devices else s.devices
    rank = int(dev["rank_id"].iloc[0]) if len(dev) and "rank_id" in dev and pd.notna(dev["rank_id"].iloc[0]) else -1
    hosts = s.devices["hostname"] if "hostname" in s.devices else pd.Series(dtype=object)
    host = str(hosts.iloc[0]) if len(hosts) and pd.notna(hosts.iloc[0]) else "N/A"
    name = s.path.name if s.path is not None else "N/A"
    extra = {"host": host, "prof": name}
    if "rank_id" not in df:  # the devices table has its own, per result dir
        extra["rank_id"] = np.full(len(df), rank, np.int64)
    return df.assign(**extra)


def load_prof(prof: Path, use_cache: bool = True) -> Session:
    """One PROF dir, from the cache when the raw files are unchanged (the cache holds the host
    tables and each device's apart: :mod:`msprof_py.parse.source` reads one device at a time)."""
    from msprof_py.parse import build, source

    key = cache.fingerprint(prof)
    if use_cache:
        data = source.cached_tables(prof, key)
        if data is not None:
            return Session(path=prof, warnings=WarningLog(list(data.pop("warnings"))), **data)
    warnings = WarningLog()
    writer = source.PartWriter(prof, key) if use_cache else None
    tables = build.build_prof(prof, warnings, writer.device if writer is not None else None)
    session = Session(path=prof, warnings=warnings, **tables)
    if writer is not None:
        writer.finish({name: tables[name] for name in source.HOST_TABLES}, warnings)
    return session


def _recategorize(df: pd.DataFrame) -> pd.DataFrame:
    for c in df.columns:
        if df[c].dtype == object and c in ("level", "struct_type", "name", "item_id", "op_name", "op_type",
                                           "task_type", "host_task_type", "device_task_type", "op_state",
                                           "match", "kernel_name"):
            df[c] = df[c].astype("category")
    return df


def result_dirs(prof: Path, warnings: WarningLog) -> tuple[ResultDir | None, list[ResultDir]]:
    """(host dir or None, device dirs sorted by id); a dir whose metadata is unusable raises."""
    host = None
    devices = []
    for c in sorted(_children(prof), key=lambda c: (len(c.name), c.name)):
        if c.name == HOST_DIR:
            host = load_result_dir(c, warnings)
        elif DEVICE_DIR_RE.match(c.name):
            if len(c.name) > 12 or int(c.name[7:]) > MAX_DEVICE_ID:  # the id must fit the tables' int64
                warnings.warn(f"{c}: device id {c.name[7:]} is out of range (0 .. {MAX_DEVICE_ID}); dir ignored")
                continue
            devices.append(load_result_dir(c, warnings))
    if host is None:
        warnings.warn(f"{prof}: no host/ dir: device tasks cannot be joined to their launches "
                      "(all rows device-only, no op names)")
    return host, devices


__all__ = ["Session", "load", "load_prof", "memory_needed", "find_prof_dirs", "schema", "DataError"]

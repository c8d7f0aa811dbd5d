"""Assemble one PROF dir's tables: host side, each device, join, iterations, communication."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.errors import DataError, WarningLog
from msprof_py.memory import trim
from msprof_py.parse import cats, counters, registry, schema
from msprof_py.parse.ahead import Ahead
from msprof_py.parse.clocks import clocks_for
from msprof_py.parse.comm_tables import communication_tables
from msprof_py.parse.device import load_device
from msprof_py.parse.empty_tables import (concat_any, concat_or_empty, empty_device_tasks, empty_host_tasks,
                                         empty_table, object_frame)
from msprof_py.parse.host import HostData, load_host
from msprof_py.parse.host_tables import devices_table, fusion_table, memcpy_table
from msprof_py.parse.join import join_device
from msprof_py.parse.session import data_bytes, result_dirs
from msprof_py.parse.steps import assign, build_steps
from msprof_py.parse.pmu import table as pmu_table

CATEGORY_COLS = ("op_name", "op_type", "task_type", "host_task_type", "device_task_type", "op_state",
                 "hf32_eligible", "kernel_name", "input_shapes", "input_data_types", "input_formats",
                 "output_shapes", "output_data_types", "output_formats")


@dataclass
class HostStage:
    """What the host side of one PROF dir gives every device: its tables (``tables``: api,
    memcpy, fusion_ops, devices, msproftx), the host tasks to join, and the device units to
    build (``units``: device id -> its result dirs; an id with no dir is an *orphan*: host
    tasks for a device without a device dir, kept as host-only rows)."""

    prof: Path
    host_rd: Any
    clk: Any
    host: HostData | None
    host_tasks: pd.DataFrame
    units: dict[int, list[Any]]
    tables: dict[str, pd.DataFrame]
    readers: list[Any] = field(default_factory=list)
    late: list[str] = field(default_factory=list)  # host warnings msprof_py gives after the devices'
    ahead: Ahead | None = None  # device dirs' raw decodes started ahead of their turn (one process)
    dicts: Any = None  # the host's dictionaries and expand_stream_spec status, for the device decodes
    expand_status: int = 0


def build_host(prof: Path, warnings: WarningLog, ahead: bool = False) -> HostStage:
    """The host side of ``prof`` (decoded once; device units are built from it one at a time).
    ``ahead``: each device dir's raw decode starts on a thread ahead of its turn, the first one's
    while the host side is decoded (:mod:`msprof_py.parse.ahead`; for one process)."""
    host_rd, dev_rds = result_dirs(prof, warnings)
    if host_rd is None and not dev_rds:
        raise DataError(f"{prof}: no host/ or device_N/ result dir")
    for rd in [host_rd, *dev_rds]:
        if rd is not None and not (rd.path / "data").is_dir():
            warnings.warn(f'There is no "data" directory in "{rd.path}". Collect data failed.')
    clk = clocks_for(host_rd, dev_rds)
    units: dict[int, list[Any]] = {}
    for rd in dev_rds:
        units.setdefault(int(rd.device_id), []).append(rd)
    stage = HostStage(prof, host_rd, clk, None, empty_host_tasks(), dict(sorted(units.items())), {},
                      ahead=Ahead() if ahead else None)

    def ready(dicts: Any, expand_status: int) -> None:  # the host's dictionaries are read
        stage.dicts, stage.expand_status = dicts, expand_status
        _decode_first(stage)

    host = load_host(host_rd, warnings, clk.host_ticks(), clk.rule == "python", ready) if host_rd is not None \
        else None
    host_tasks = host.host_tasks if host is not None else empty_host_tasks()
    if host is not None:
        host.kinds.release()
    api = host.api if host is not None else object_frame(schema.API_COLUMNS)
    late = []
    if host_rd is not None and len(api):
        early = np.array(api["start_ns"] < host_rd.collection_start_ns, dtype=bool)
        early &= ~api["before_profiling"].to_numpy(bool)  # msprof keeps these (api_statistic; its timeline skips them)
        if early.any():
            late.append(f"{host_rd.path}: {int(early.sum())} API record(s) before collectionTimeBegin filtered")
            api = api[~early].reset_index(drop=True)
    orphan = host_tasks[~host_tasks["device_id"].isin(list(units))]
    if len(orphan):
        devs = sorted(set(orphan["device_id"].tolist()))
        late.insert(0, f"{prof}: {len(orphan)} host task(s) for device(s) {devs} without a device dir kept as host-only")
        units.update({int(d): [] for d in devs})
    tables = {"api": api[schema.API_COLUMNS].reset_index(drop=True), "memcpy": memcpy_table(host),
              "fusion_ops": fusion_table(host), "devices": devices_table(host_rd, dev_rds),
              "msproftx": counters.tx_table(host.tables, clk.host_ticks()) if host is not None
              else counters.empty("msproftx")}
    stage.host, stage.host_tasks, stage.units = host, host_tasks, dict(sorted(units.items()))
    stage.tables = {name: cats.normalize(df) for name, df in tables.items()}
    stage.readers, stage.late = [host.kinds] if host is not None else [], late
    return stage


def _decode_first(stage: HostStage) -> None:
    """Start the raw decode of the first device dir on a thread (:class:`Ahead`), if the stage
    decodes ahead and the host's raw data is at least as large as that dir's: then the host's
    decode (its API calls: the single-op million 529 MB of host data against 232 MB of device_0,
    so300k 159 / 70 MB) hides the device's, whose output (~0.7x the dir's raw bytes: so300k
    52 MB) then lives beside the host's decode, below the export's later peak (so300k: the host
    phase's peak 512 -> 530 MB, the export's 569 MB; the million 1,482 against 1,521 MB).  With a
    small host side (A: 3 MB against 62 MB a device) there is nothing to hide it behind, and two
    threads taking turns at the GIL made the build slower on a busy machine (rn300k: first file
    +0.07 s at load 4).
    Only the first device: the next one's decode beside this one's join was measured on A (two
    devices, 500 k tasks each): the decode holds ~220 MB above the host tables at its peak (the
    STARS logs' pairing), device 0's join ~100 MB more: the build's peak went 313 -> 467 MB,
    past the export's own (327-340 MB)."""
    if stage.ahead is None or stage.host_rd is None:
        return
    first = next((d for d in stage.units if stage.units[d]), None)
    if first is not None and data_bytes(stage.host_rd.path) >= data_bytes(stage.units[first][0].path):
        rd = stage.units[first][0]
        stage.ahead.start(rd.path, lambda log: _load(stage, rd, log))


def _load(stage: HostStage, rd: Any, warnings: WarningLog) -> Any:
    """One device dir's raw records decoded (:func:`load_device`); on a thread, the heap its
    temporaries used handed back at once (glibc keeps a thread's freed memory in the thread's own
    arena: so300k's host load peaked 126 MB higher without this, the decode's output is ~50 MB)."""
    dd = load_device(rd, warnings, stage.dicts, stage.expand_status, stage.clk.device_ticks(rd))
    trim()
    return dd


DEVICE_TABLES = ("tasks", "steps", "all_reduce", "communication", "comm_tasks", "pmu", "aicore_freq", "aicpu", "dp",
                 "l2_cache")


def build_device(stage: HostStage, device_id: int, warnings: WarningLog) -> tuple[dict[str, pd.DataFrame], list[Any]]:
    """One device's tables (``DEVICE_TABLES``, its rows only) and the kind readers it used."""
    host = stage.host
    tasks_parts, steps_parts, ar_parts, pmu_parts, freq_parts = [], [], [], [], []
    counter_parts: dict[str, list[pd.DataFrame]] = {name: [] for name in counters.TABLE_COLUMNS}
    readers = []
    mine_all = stage.host_tasks[stage.host_tasks["device_id"] == device_id]
    for i, rd in enumerate(stage.units[device_id]):
        dd = stage.ahead.take(rd.path, warnings) if stage.ahead is not None else None
        if dd is None:
            dd = load_device(rd, warnings, host.dicts if host is not None else None,
                             host.expand_status if host is not None else 0, stage.clk.device_ticks(rd))
        readers.append(dd.kinds)
        mine = stage.host_tasks[stage.host_tasks["device_id"] == dd.device_id]
        joined = join_device(dd.device_id, mine.reset_index(drop=True), dd.tasks, warnings, str(rd.path))
        dd.tasks = dd.tasks.iloc[:0]  # joined: the decoded rows are not needed while the PMU table is made
        pmu_parts.append(pmu_table.build(dd.device_id, rd, dd.pmu, joined, warnings))
        freq_parts.append(dd.aicore_freq)
        for name, df in counters.device_tables(dd.device_id, rd, dd.tables, stage.clk.device_ticks(rd), joined,
                                               warnings).items():
            counter_parts[name].append(df)
        steps, ar = build_steps(dd.device_id, dd.step_records)
        _iterations(joined, steps)
        before = (joined["start_ns"] >= 0) & (joined["start_ns"] < rd.collection_start_ns)
        if before.any():
            warnings.warn(f"{rd.path}: {int(before.sum())} task(s) starting before collectionTimeBegin filtered "
                          "(as msprof)")
            joined = joined[~before]
        tasks_parts.append(joined)
        steps_parts.append(steps)
        ar_parts.append(ar)
        dd.kinds.release()
        del dd, joined
        trim()  # a device's temporaries are columns below glibc's mmap threshold: hand the heap back
    if not stage.units[device_id]:  # an orphan: its host tasks as host-only rows
        j = join_device(device_id, mine_all.reset_index(drop=True), empty_device_tasks(), WarningLog(),
                        str(stage.prof))
        _iterations(j, pd.DataFrame(columns=schema.STEP_COLUMNS))
        tasks_parts.append(j)
    tasks = cats.concat_rows(tasks_parts, ["device_id", "start_ns", "stream_id", "task_id", "context_id"]) \
        if tasks_parts else object_frame(schema.TASK_COLUMNS)
    del tasks_parts
    communication, comm_tasks = communication_tables(host, tasks)
    for c in CATEGORY_COLS:
        if not isinstance(tasks[c].dtype, pd.CategoricalDtype):
            tasks[c] = tasks[c].astype(str).astype("category")
    out = {"tasks": tasks[schema.TASK_COLUMNS].reset_index(drop=True),
           "steps": concat_or_empty(steps_parts, schema.STEP_COLUMNS),
           "all_reduce": concat_or_empty(ar_parts, schema.ALL_REDUCE_COLUMNS), "communication": communication,
           "comm_tasks": comm_tasks, "pmu": concat_any(pmu_parts, pmu_table.KEY_COLS),
           "aicore_freq": concat_any(freq_parts, ["device_id", "timestamp_ns", "freq_mhz"]),
           **{name: _counter_table(name, parts) for name, parts in counter_parts.items() if name != "msproftx"}}
    return {name: cats.normalize(df) for name, df in out.items()}, readers


def finish(stage: HostStage, readers: list[Any], found_data: bool, warnings: WarningLog) -> None:
    """The warnings given once every device is built (unused / unknown raw kinds of the host and
    all devices, orphans, early API records); DataError when the dir held no data at all."""
    registry.report(stage.prof, [r for r in stage.readers + readers if r is not None], warnings)
    for m in stage.late:
        warnings.warn(m)
    if not found_data and not len(stage.tables["api"]):
        raise DataError(f"{stage.prof}: no profiling data found (data/ dirs are empty or hold no known raw files)")


def has_data(part: dict[str, pd.DataFrame]) -> bool:
    return bool(len(part["tasks"]) or len(part["steps"]))


def assemble(stage_tables: dict[str, pd.DataFrame], parts: list[dict[str, pd.DataFrame]]) -> dict[str, pd.DataFrame]:
    """The whole PROF dir's tables from the host tables and the device parts (in device order):
    what one build of every device at once gives, categoricals in canonical form.  Takes the
    tables out of ``parts`` as it goes (each device's frames freed once joined)."""
    out = dict(stage_tables)
    for name in DEVICE_TABLES:
        out[name] = join_parts(name, [p.pop(name) for p in parts])
    return {name: out[name] for name in ("api", "tasks", "steps", "all_reduce", "communication", "comm_tasks",
                                         "fusion_ops", "memcpy", "devices", "pmu", "aicore_freq", "aicpu", "dp",
                                         "l2_cache", "msproftx")}


def join_parts(name: str, frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Device table ``name`` of the whole PROF dir from the devices' frames (in device order)."""
    full = [f for f in frames if len(f)]
    if name == "tasks":
        df = cats.concat_rows(frames) if frames else object_frame(schema.TASK_COLUMNS)
        for c in CATEGORY_COLS if not frames else ():
            df[c] = df[c].astype(str).astype("category")
    elif not full:
        df = frames[0] if frames else empty_table(name)
    else:  # as one build concatenates them (pd.concat: a categorical differing between devices -> object)
        df = full[0] if len(full) == 1 else pd.concat(full, ignore_index=True)
    return cats.normalize(df.reset_index(drop=True))


def build_prof(prof: Path, warnings: WarningLog,
               sink: Callable[[int, dict[str, pd.DataFrame]], None] | None = None) -> dict[str, pd.DataFrame]:
    """Every table of ``prof``: the host once, then each device (``sink(device_id, part)`` is
    called with each device's part as it is built, e.g. to cache it)."""
    stage = build_host(prof, warnings)
    parts, readers = [], []
    for dev in stage.units:
        part, r = build_device(stage, dev, warnings)
        readers += r
        if sink is not None:
            sink(dev, part)
        parts.append(part)
    finish(stage, readers, any(has_data(p) for p in parts), warnings)
    out = assemble(stage.tables, parts)
    trim()
    return out


def _counter_table(name: str, parts: list[pd.DataFrame]) -> pd.DataFrame:
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else counters.empty(name)


def _iterations(joined: pd.DataFrame, steps: pd.DataFrame) -> None:
    """index_id / iter_id per row.  index_id: the host's request_id (the Model-level execute
    event's iteration, as msprof's AscendTask keeps it) when it has one; otherwise (static
    graphs: launched once at load and replayed) the iteration of the task's model whose window
    holds the device start.  iter_id: the global rank of that (model, iteration); tasks outside
    every iteration of their model fall back to the window of any model."""
    t = joined["start_ns"].to_numpy(np.int64)
    model = joined["model_id"].to_numpy(np.int64)
    idx, it = assign(steps, model, t)
    dev_row = t >= 0
    idx = np.where(dev_row, idx, 0)
    it = np.where(dev_row, it, 0)
    req = joined["request_id"].to_numpy(np.int64)
    from_host = req > 0
    idx = np.where(from_host, req, idx)
    if not steps.empty and from_host.any():
        lut = steps.set_index(["model_id", "index_id"])["iter_id"]
        mi = pd.MultiIndex.from_arrays([model[from_host], idx[from_host]])
        host_it = lut.reindex(mi).fillna(0).to_numpy(np.int64)
        it[from_host] = host_it
    joined["index_id"] = idx
    joined["iter_id"] = it

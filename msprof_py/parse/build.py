"""Assemble one PROF dir's tables: host side, each device, join, iterations, communication."""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.errors import DataError, WarningLog
from msprof_py.memory import trim
from msprof_py.parse import cats, counters, registry, schema
from msprof_py.parse.cats import frame
from msprof_py.parse.clocks import clocks_for
from msprof_py.parse.device import load_device
from msprof_py.parse.host import HostData, load_host
from msprof_py.parse.join import join_device
from msprof_py.parse.session import result_dirs
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


def build_host(prof: Path, warnings: WarningLog) -> HostStage:
    """The host side of ``prof`` (decoded once; device units are built from it one at a time)."""
    host_rd, dev_rds = result_dirs(prof, warnings)
    if host_rd is None and not dev_rds:
        raise DataError(f"{prof}: no host/ or device_N/ result dir")
    for rd in [host_rd, *dev_rds]:
        if rd is not None and not (rd.path / "data").is_dir():
            warnings.warn(f'There is no "data" directory in "{rd.path}". Collect data failed.')
    clk = clocks_for(host_rd, dev_rds)
    host = load_host(host_rd, warnings, clk.host_ticks(), clk.rule == "python") if host_rd is not None else None
    host_tasks = host.host_tasks if host is not None else _empty_host_tasks()
    if host is not None:
        host.kinds.release()
    units: dict[int, list[Any]] = {}
    for rd in dev_rds:
        units.setdefault(int(rd.device_id), []).append(rd)
    api = host.api if host is not None else _frame(schema.API_COLUMNS)
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
    tables = {"api": api[schema.API_COLUMNS].reset_index(drop=True), "memcpy": _memcpy(host),
              "fusion_ops": _fusion(host), "devices": _devices(host_rd, dev_rds),
              "msproftx": counters.tx_table(host.tables, clk.host_ticks()) if host is not None
              else counters.empty("msproftx")}
    return HostStage(prof, host_rd, clk, host, host_tasks, dict(sorted(units.items())),
                     {name: cats.normalize(df) for name, df in tables.items()},
                     [host.kinds] if host is not None else [], late)


DEVICE_TABLES = ("tasks", "steps", "all_reduce", "communication", "comm_tasks", "pmu", "aicore_freq", "aicpu", "dp",
                 "l2_cache")


def build_device(stage: HostStage, device_id: int, warnings: WarningLog) -> tuple[dict[str, pd.DataFrame], list[Any]]:
    """One device's tables (``DEVICE_TABLES``, its rows only) and the kind readers it used."""
    host = stage.host
    tasks_parts, steps_parts, ar_parts, pmu_parts, freq_parts = [], [], [], [], []
    counter_parts: dict[str, list[pd.DataFrame]] = {name: [] for name in counters.TABLE_COLUMNS}
    readers = []
    mine_all = stage.host_tasks[stage.host_tasks["device_id"] == device_id]
    for rd in stage.units[device_id]:
        dd = load_device(rd, warnings, host.dicts if host is not None else None,
                         host.expand_status if host is not None else 0, stage.clk.device_ticks(rd))
        readers.append(dd.kinds)
        mine = stage.host_tasks[stage.host_tasks["device_id"] == dd.device_id]
        joined = join_device(dd.device_id, mine.reset_index(drop=True), dd.tasks, warnings, str(rd.path))
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
        j = join_device(device_id, mine_all.reset_index(drop=True), _empty_device_tasks(), WarningLog(),
                        str(stage.prof))
        _iterations(j, pd.DataFrame(columns=schema.STEP_COLUMNS))
        tasks_parts.append(j)
    tasks = cats.concat_rows(tasks_parts, ["device_id", "start_ns", "stream_id", "task_id", "context_id"]) \
        if tasks_parts else _frame(schema.TASK_COLUMNS)
    del tasks_parts
    communication, comm_tasks = _communication(host, tasks)
    for c in CATEGORY_COLS:
        if not isinstance(tasks[c].dtype, pd.CategoricalDtype):
            tasks[c] = tasks[c].astype(str).astype("category")
    out = {"tasks": tasks[schema.TASK_COLUMNS].reset_index(drop=True), "steps": _cat(steps_parts, schema.STEP_COLUMNS),
           "all_reduce": _cat(ar_parts, schema.ALL_REDUCE_COLUMNS), "communication": communication,
           "comm_tasks": comm_tasks, "pmu": _concat_any(pmu_parts, pmu_table.KEY_COLS),
           "aicore_freq": _concat_any(freq_parts, ["device_id", "timestamp_ns", "freq_mhz"]),
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
        df = cats.concat_rows(frames) if frames else _frame(schema.TASK_COLUMNS)
        for c in CATEGORY_COLS if not frames else ():
            df[c] = df[c].astype(str).astype("category")
    elif not full:
        df = frames[0] if frames else _empty_table(name)
    else:  # as one build concatenates them (pd.concat: a categorical differing between devices -> object)
        df = full[0] if len(full) == 1 else pd.concat(full, ignore_index=True)
    return cats.normalize(df.reset_index(drop=True))


def _empty_table(name: str) -> pd.DataFrame:
    if name in ("steps", "all_reduce"):
        return _cat([], schema.STEP_COLUMNS if name == "steps" else schema.ALL_REDUCE_COLUMNS)
    if name == "communication":
        return _frame(schema.COMMUNICATION_COLUMNS)
    if name == "comm_tasks":
        return _frame(schema.COMM_TASK_COLUMNS)
    if name == "pmu":
        return _concat_any([], pmu_table.KEY_COLS)
    if name == "aicore_freq":
        return _concat_any([], ["device_id", "timestamp_ns", "freq_mhz"])
    return counters.empty(name)


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


def _communication(host: HostData | None, tasks: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    if host is None or host.comm_ops.empty:
        return _frame(schema.COMMUNICATION_COLUMNS), _frame(schema.COMM_TASK_COLUMNS)
    # one big op per Node launch: HCCL reports an HCCL-level API per sub-task (msprof keys an API's
    # hccl_info records by context id), so the APIs under one launch are one op, named by the first
    ops = host.comm_ops
    first = ops.groupby("node_api")["hccl_api"].transform("min")
    op_of = pd.Series(np.where(ops["node_api"] >= 0, first, ops["hccl_api"]), index=ops["hccl_api"].to_numpy())
    ops = ops[ops["hccl_api"].to_numpy() == op_of.to_numpy()]
    dev = tasks[(tasks["hccl_api"] >= 0) & (tasks["start_ns"] >= 0)]
    dev = dev.assign(hccl_op=dev["hccl_api"].map(op_of).fillna(-1).astype(np.int64))
    g = dev.assign(end=dev["start_ns"] + dev["dur_ns"]).groupby(["device_id", "hccl_op", "iter_id"], sort=False)
    spans = g.agg(start_ns=("start_ns", "min"), end=("end", "max"), index_id=("index_id", "max")).reset_index()
    infos = host.hccl_infos.assign(hccl_op=host.hccl_infos["hccl_api"].map(op_of).fillna(-1).astype(np.int64))
    ranks = infos.groupby("hccl_op")["rank_size"].max() if len(infos) else pd.Series(dtype=np.int64)
    comm = spans.rename(columns={"hccl_op": "hccl_api"}).merge(ops, on="hccl_api", how="left")
    comm["dur_ns"] = comm["end"] - comm["start_ns"]
    comm["rank_size"] = comm["hccl_api"].map(ranks).fillna(-1).astype(np.int64)
    for c, d in (("group_name", "N/A"), ("data_type", "N/A"), ("alg_type", "N/A"), ("group_hash", "N/A"),
                 ("node_type", "N/A")):
        comm[c] = comm[c].fillna(d).astype(object)
    # node_basic_info's type of the Node launch ("HcomAllReduce"), else the name without its numbers
    comm["op_type"] = comm["node_type"].where(comm["node_type"] != "N/A",
                                              comm["op_name"].astype(str).map(lambda s: re.sub(r"(_\d+)+$", "", s)))
    comm["op_name"] = _msprof_comm_names(comm)
    comm["count"] = comm["count"].fillna(-1).astype(np.int64)
    comm = comm.sort_values(["device_id", "start_ns"], kind="stable").reset_index(drop=True)
    communication = comm[schema.COMMUNICATION_COLUMNS]

    # sub-tasks: k-th hccl_info under an HCCL API <-> k-th task_track under it (time order)
    hi = host.hccl_infos[host.hccl_infos["hccl_api"] >= 0].sort_values(["hccl_api", "timestamp"], kind="stable")
    hi = hi.assign(k=hi.groupby("hccl_api").cumcount())
    ht = host.host_tasks[(host.host_tasks["hccl_api"] >= 0)].drop_duplicates("host_row")
    ht = ht.sort_values(["hccl_api", "timestamp"], kind="stable")
    ht = ht.assign(k=ht.groupby("hccl_api").cumcount())[["hccl_api", "k", "host_row"]]
    pairs = hi.merge(ht, on=["hccl_api", "k"], how="inner")
    rows = dev.merge(pairs, on=["host_row"], how="inner", suffixes=("", "_info"))
    if rows.empty:
        return communication, _frame(schema.COMM_TASK_COLUMNS)
    rows = rows.merge(comm[["device_id", "hccl_api", "iter_id", "op_name"]].rename(
        columns={"op_name": "big_op", "hccl_api": "hccl_op"}), on=["device_id", "hccl_op", "iter_id"], how="left")
    src = np.where(rows["role"] == 1, rows["local_rank"], rows["remote_rank"])
    dst = np.where(rows["role"] == 1, rows["remote_rank"], rows["local_rank"])
    dur = rows["dur_ns"].to_numpy(np.float64)
    ct = frame({
        "device_id": rows["device_id"], "op_name": rows["big_op"].astype(object),
        "group_name": rows["group_name_info"] if "group_name_info" in rows else rows["group_name"],
        "plane_id": rows["plane_id"], "task_type": rows["name"], "stream_id": rows["stream_id"],
        "task_id": rows["task_id"], "context_id": rows["context_id"], "start_ns": rows["start_ns"],
        "dur_ns": rows["dur_ns"], "src_rank": src, "dst_rank": dst, "transport_type": rows["transport_type"],
        "size_bytes": rows["data_size"], "data_type": rows["data_type_info"] if "data_type_info" in rows else rows["data_type"],
        "link_type": rows["link_type"],
        "bandwidth_gbps": np.where(dur > 0, rows["data_size"].to_numpy(np.float64) / np.maximum(dur, 1), 0.0),
        "notify_id": rows["notify_id"], "duration_estimated_us": rows["duration_estimated_us"],
    })
    return communication, ct.sort_values(["device_id", "start_ns"], kind="stable").reset_index(drop=True)


def _msprof_comm_names(comm: pd.DataFrame) -> pd.Series:
    """msprof's name of a communication op run: ``{op}_{group}_{index}_{iteration}``.

    ``group``: the last 3 characters of the op's group name as msprof keeps it (the hash
    number from hccl_op_info); ``index``: 0, 1, ... over the distinct HCCL calls (by host start)
    of that group on that device, counted apart for AI CPU ("AicpuKernel") ops; ``iteration``:
    the run's iter_id.  E.g. ``hcom_allReduce__673_0_1`` in group ...107, second call, iteration
    2 -> ``hcom_allReduce__673_0_1_107_1_2`` (msprof's hccl_calculator, Python and C++ alike).
    """
    raw = comm["op_name"].astype(str)
    group = comm["group_hash"].astype(str)
    aicpu = raw.str.contains("AicpuKernel", regex=False)
    index = comm["first_ns"].groupby([comm["device_id"], group, aicpu]).rank(method="dense").astype(np.int64) - 1
    return raw + "_" + group.str[-3:] + "_" + index.astype(str) + "_" + comm["iter_id"].astype(np.int64).astype(str)


def _memcpy(host: HostData | None) -> pd.DataFrame:
    if host is None or host.memcpy.empty:
        return _frame(schema.MEMCPY_COLUMNS)
    ht = host.host_tasks.drop_duplicates("host_row")
    ht = ht[ht["runtime_api"] >= 0][["runtime_api", "device_id", "stream_id", "task_id", "batch_id"]]
    m = host.memcpy[host.memcpy["runtime_api"] >= 0].merge(ht.drop_duplicates("runtime_api"), on="runtime_api")
    return m[schema.MEMCPY_COLUMNS].reset_index(drop=True)


def _fusion(host: HostData | None) -> pd.DataFrame:
    if host is None or host.fusion.empty:
        return _frame(schema.FUSION_OP_COLUMNS)
    names = host.graph_ids.drop_duplicates("model_id", keep="last").set_index("model_id")["model_name"]
    f = host.fusion.copy()
    f["model_name"] = f["model_id"].map(names).astype(object).fillna("N/A")  # object first: no float fillna
    return f[schema.FUSION_OP_COLUMNS]


def _devices(host_rd, dev_rds) -> pd.DataFrame:
    rows = []
    for rd in ([host_rd] if host_rd is not None else []) + list(dev_rds):
        dinfo = (rd.info.get("DeviceInfo") or [{}])[0] if isinstance(rd.info.get("DeviceInfo"), list) else {}
        hw = rd.hwts_mhz
        rows.append({
            "device_id": rd.device_id, "pid": _int(rd.info.get("pid")), "pid_name": str(rd.info.get("pid_name", "")),
            "hostname": str(rd.info.get("hostname", "")), "rank_id": _int(rd.info.get("rank_id"), -1),
            "platform_version": str(rd.info.get("platform_version", "")),
            "ai_core_num": _int(dinfo.get("ai_core_num") if dinfo else None, 0),
            "aiv_num": _int(dinfo.get("aiv_num") if dinfo else None, 0),
            "hwts_frequency_mhz": float(hw) if hw is not None else float("nan"),
            "host_cpu_frequency_mhz": float(rd.host_mhz),
            "collection_date_begin": str(rd.start_info.get("collectionDateBegin", "")),
            "collection_start_ns": rd.collection_start_ns, "collection_end_ns": rd.collection_end_ns,
            "job_info": str(rd.info.get("jobInfo", "N/A")) if rd.info.get("jobInfo") not in (None, "") else "N/A",
            "drv_version": _int(rd.info.get("drvVersion"), -1),
            "prof_level": _prof_level(rd.sample),
            "dir_name": rd.name,
            "host_uid": str(rd.info.get("hostUid", "")),
        })
    return pd.DataFrame(rows, columns=schema.DEVICE_INFO_FIELDS)


def _prof_level(sample: dict | None) -> str:
    """sample.json's profiling level (msprof's Context::IsLevel0 reads profLevel, else prof_level)."""
    sample = sample if isinstance(sample, dict) else {}
    v = sample.get("profLevel", sample.get("prof_level", ""))
    return str(v) if v is not None else ""


def _concat_any(parts: list, cols: list[str]) -> pd.DataFrame:
    parts = [p for p in parts if p is not None and len(p)]
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=np.int64) for c in cols})
    return pd.concat(parts, ignore_index=True)


def _int(v, default: int = -1) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def _frame(cols) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in cols})


def _cat(parts, cols) -> pd.DataFrame:
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(
        {c: pd.Series(dtype=np.int64) for c in cols})


HOST_TASK_COLS = {"device_id": np.int64, "stream_id": np.int64, "task_id": np.int64, "batch_id": np.int64,
                  "context_id": np.int64, "timestamp": np.int64, "host_task_type": object, "kernel_name": object,
                  "model_id": np.int64, "request_id": np.int64, "connection_id": np.int64, "node_api": np.int64,
                  "hccl_api": np.int64, "runtime_api": np.int64, "thread_id": np.int64, "op_name": object,
                  "op_type": object, "task_type": object, "op_state": object, "block_num": np.int64,
                  "mix_block_num": np.int64, "hf32_eligible": object, "input_shapes": object,
                  "input_data_types": object, "input_formats": object, "output_shapes": object,
                  "output_data_types": object, "output_formats": object, "has_op_info": bool, "host_row": np.int64}


def _empty_host_tasks() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in HOST_TASK_COLS.items()})


def _empty_device_tasks() -> pd.DataFrame:
    return pd.DataFrame({"stream_id": pd.Series(dtype=np.int64), "task_id": pd.Series(dtype=np.int64),
                         "context_id": pd.Series(dtype=np.int64), "batch_id": pd.Series(dtype=np.int64),
                         "start_ns": pd.Series(dtype=np.int64), "dur_ns": pd.Series(dtype=np.int64),
                         "span_ns": pd.Series(dtype=np.int64), "device_task_type": pd.Series(dtype=object)})

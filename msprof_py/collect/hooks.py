"""The collector's :class:`~msprof_py.runtime.hooks.ProfilerHooks`: records -> slice files.

Every ``report_*`` call carries a numpy record array of one raw layout; it is filtered by the
profiling switches (vectorised, on the ``level`` / ``func_type`` fields) and appended to its
stream's slice files under ``host/data`` or ``device_{id}/data``.  Names seen through
:meth:`CollectorHooks.hash_id` and types from :meth:`register_type` are kept (small: one entry
per distinct name) and written as the text dictionaries by :meth:`close`.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from msprof_py.collect.options import ProfilingOptions
from msprof_py.collect.slices import SliceStream, write_whole
from msprof_py.errors import WarningLog
from msprof_py.raw import aicpu, ffts_profile, l2_cache, lpm_info, msproftx
from msprof_py.raw import (api_event, common, context_id_info, files, fusion_op_info, graph_id_map, hash_dic,
                           hccl_info, hccl_op_info, memcpy_info, node_basic_info, stars_soc, task_track,
                           tensor_info, ts_track)

# the record layout of every known tag; a record array with another itemsize is re-laid out
_LAYOUTS: dict[str, tuple[np.dtype, ...]] = {
    m.FILE_TAG: (m.DTYPE,) for m in (api_event, context_id_info, fusion_op_info, graph_id_map, hccl_info,
                                     hccl_op_info, memcpy_info, node_basic_info, stars_soc, task_track,
                                     tensor_info)
}
_LAYOUTS[ffts_profile.FILE_TAG] = (ffts_profile.DTYPE,)
_LAYOUTS[aicpu.FILE_TAG] = (aicpu.NODE_DTYPE, aicpu.DP_DTYPE)
_LAYOUTS[l2_cache.FILE_TAG] = (l2_cache.DTYPE,)
_LAYOUTS[msproftx.FILE_TAG] = (msproftx.DTYPE,)
_LAYOUTS[lpm_info.FILE_TAG] = _LAYOUTS[lpm_info.FREQ_FILE_TAG] = (lpm_info.DTYPE,)
_LAYOUTS[ts_track.FILE_TAG] = (ts_track.STEP_TRACE_DTYPE, ts_track.TASK_TYPE_DTYPE, ts_track.TASK_FLIP_DTYPE,
                               ts_track.PREFIX_DTYPE)

# host file tags that belong to each switch (api_event is split by level instead)
_TASK_TIME_HOST_TAGS = frozenset({
    "compact.task_track", "compact.node_basic_info", "compact.node_attr_info", "compact.memcpy_info",
    "additional.tensor_info", "additional.context_id_info", "additional.fusion_op_info",
    "additional.graph_id_map",
})
_HCCL_HOST_TAGS = frozenset({"compact.hccl_op_info", "additional.hccl_info"})
_API_LEVEL_SWITCH = {
    common.LEVEL_ACL: "ascendcl",
    common.LEVEL_MODEL: "model_execution",
    common.LEVEL_RUNTIME: "runtime_api",
    common.LEVEL_NODE: "task_time",
    common.LEVEL_HCCL: "hccl",
}


class CollectorHooks:
    """Writes everything the simulated stack reports into one (temporary) PROF directory.

    Args:
        root: the PROF directory being built (``host/`` and ``device_{id}/`` are made here).
        options: the profiling switches.
        slice_bytes: size limit of one slice file (msprof rolls its files at a fixed size).
        warnings: collects problems worth telling the user (hash collisions, unknown tags).
    """

    enabled = True

    def __init__(self, root: Path, options: ProfilingOptions, slice_bytes: int = files.DEFAULT_SLICE_BYTES,
                 warnings: WarningLog | None = None) -> None:
        self.root = root
        self.options = options
        self.slice_bytes = slice_bytes
        self.warnings = warnings if warnings is not None else WarningLog()
        self.names: dict[int, str] = {}
        self.types: dict[tuple[int, int], str] = {}
        self.device_ids: set[int] = set()
        self.record_counts: dict[str, int] = {}  # "host:aging.compact.task_track" -> records written
        self._streams: dict[tuple, SliceStream] = {}
        self.pmu_events = _pmu_events(options)  # what the simulated PMU counts (sample.json's lists)
        # the device records the runtime writes only when asked (msprof_py.runtime.counters_model)
        self.device_counters = frozenset(k for k in ("aicpu", "l2") if getattr(options, k) == "on")
        self._off_levels = np.array([lv for lv, sw in _API_LEVEL_SWITCH.items() if not options.on(sw)],
                                    dtype=np.uint16)
        (root / files.HOST_DIR / "data").mkdir(parents=True, exist_ok=True)

    # -- the ProfilerHooks protocol -------------------------------------------------------
    def hash_id(self, name: str) -> int:
        h = hash_dic.stable_hash(name)
        known = self.names.setdefault(h, name)
        if known != name:
            self.warnings.warn(f"hash collision: {name!r} and {known!r} share id {h}")
        return h

    def register_type(self, level: int, type_id: int, name: str) -> None:
        self.types.setdefault((int(level), int(type_id)), name)

    def report_host(self, tag: str, aging: bool, records: np.ndarray) -> None:
        records = self._filter_host(tag, as_layout(tag, records))
        if records is None or records.size == 0:
            return
        key = ("host", bool(aging), tag)
        stream = self._streams.get(key)
        if stream is None:
            directory = self.root / files.HOST_DIR / "data"
            stream = SliceStream(directory, lambda n, a=bool(aging), t=tag: files.host_data_name(a, t, n),
                                 self.slice_bytes)
            self._streams[key] = stream
        stream.write(records)
        label = f"host:{files.host_data_name(bool(aging), tag, 0)[:-len('.slice_0')]}"
        self.record_counts[label] = self.record_counts.get(label, 0) + int(records.size)

    def report_device(self, device_id: int, tag: str, records: np.ndarray) -> None:
        device_id = int(device_id)
        self.device_ids.add(device_id)
        records = self._filter_device(tag, as_layout(tag, records))
        if records is not None and tag == stars_soc.FILE_TAG and (records["resv0"] != stars_soc.MAGIC).any():
            records = records.copy()  # never change the caller's array
            records["resv0"] = stars_soc.MAGIC  # the device stamps every log with it
        if records is None or records.size == 0:
            return
        key = (device_id, tag)
        stream = self._streams.get(key)
        if stream is None:
            directory = self.root / files.device_dir_name(device_id) / "data"
            directory.mkdir(parents=True, exist_ok=True)
            stream = SliceStream(directory, lambda n, d=device_id, t=tag: files.device_data_name(t, d, n),
                                 self.slice_bytes)
            self._streams[key] = stream
        stream.write(records)
        label = f"device_{device_id}:{tag}"
        self.record_counts[label] = self.record_counts.get(label, 0) + int(records.size)

    # -- switches ---------------------------------------------------------------------------
    def _filter_host(self, tag: str, records: np.ndarray) -> np.ndarray | None:
        opts = self.options
        if tag == api_event.FILE_TAG:
            if self._off_levels.size:
                records = _select(records, ~np.isin(records["level"], self._off_levels))
            return records
        if tag in _TASK_TIME_HOST_TAGS:
            return records if opts.on("task_time") else None
        if tag in _HCCL_HOST_TAGS:
            return records if opts.on("hccl") else None
        if tag == msproftx.FILE_TAG:
            return records if opts.msproftx == "on" else None
        return records

    def _filter_device(self, tag: str, records: np.ndarray) -> np.ndarray | None:
        opts = self.options
        if tag in (stars_soc.FILE_TAG, ffts_profile.FILE_TAG, lpm_info.FILE_TAG, lpm_info.FREQ_FILE_TAG):
            return records if opts.on("task_time") else None
        if tag == ts_track.FILE_TAG:
            if opts.on("task_time") and opts.on("training_trace"):
                return records
            func = records.view(ts_track.PREFIX_DTYPE)["func_type"]
            is_step = func == ts_track.FUNC_STEP_TRACE
            keep = is_step if opts.on("training_trace") else (~is_step if opts.on("task_time") else None)
            return None if keep is None else _select(records, keep)
        if tag == aicpu.FILE_TAG:
            return records if opts.aicpu == "on" else None
        if tag == l2_cache.FILE_TAG:
            return records if opts.l2 == "on" else None
        return records

    # -- end of collection ------------------------------------------------------------------
    def close(self) -> None:
        """Close every slice and write the hash / type dictionaries (host, unaging)."""
        self.close_streams()
        data = self.root / files.HOST_DIR / "data"
        write_whole(data / files.host_data_name(False, hash_dic.HASH_FILE_TAG, 0),
                    hash_dic.encode_hash_dic(self.names))
        types = sorted(self.types.items())
        write_whole(data / files.host_data_name(False, hash_dic.TYPE_FILE_TAG, 0),
                    hash_dic.encode_type_dic((lv, ty, name) for (lv, ty), name in types))

    def close_streams(self) -> None:
        for stream in self._streams.values():
            stream.close()

    def total_bytes(self) -> int:
        return sum(s.total_bytes for s in self._streams.values())

    def device_task_count(self) -> int:
        """Device tasks written = ACSQ start logs in stars_soc (one per task)."""
        return sum(n for label, n in self.record_counts.items() if label.endswith(stars_soc.FILE_TAG)) // 2



def _select(records: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``records[mask]`` keeping every byte: fancy indexing a dtype with gaps (the ts_track prefix
    view, for one) does not copy the gap bytes, so select on an opaque void view instead."""
    raw = np.ascontiguousarray(records).view(np.dtype((np.void, records.dtype.itemsize)))
    return raw[mask].view(records.dtype)


def _pmu_events(options: ProfilingOptions) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(AI Core events, AI Vector events) the device counts, as sample.json lists them for the
    910B; None when task-time collection is off (no task-based PMU then)."""
    from msprof_py.collect.sample_json import AIC_EVENTS, AIV_EVENTS, CHIP_V4

    if not options.on("task_time"):
        return None
    aic = "PipeUtilizationExct" if options.aic_metrics == "PipeUtilization" else options.aic_metrics

    def codes(text: str) -> tuple[int, ...]:
        return tuple(int(x, 16) for x in text.split(",") if x.strip())

    del CHIP_V4
    return codes(AIC_EVENTS.get(aic, "")), codes(AIV_EVENTS.get(options.aic_metrics, ""))


def as_layout(tag: str, records: np.ndarray) -> np.ndarray:
    """``records`` with the exact byte layout of ``tag``'s raw record.

    numpy drops the gaps of an offset-based structured dtype in some operations (np.concatenate
    of such arrays yields a packed dtype), which would silently write short records; this puts
    the fields back at msprof's offsets.  Unknown tags pass through unchanged.
    """
    layouts = _LAYOUTS.get(tag)
    if layouts is None or records.dtype.itemsize == layouts[0].itemsize:
        return records
    names = set(records.dtype.names or ())
    for layout in layouts:
        if names and names <= set(layout.names):
            out = np.zeros(records.shape, dtype=layout)
            for name in names:
                out[name] = records[name]
            return out
    raise ValueError(f"records reported for {tag!r} have itemsize {records.dtype.itemsize} and fields "
                     f"{sorted(names)}, which match no {tag} layout")

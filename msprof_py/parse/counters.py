"""Session tables of the AI CPU, data-preprocess, L2 cache and msproftx records.

Built from the decoded registry tables (:mod:`msprof_py.parse.records.aicpu`, ``l2_cache``,
``msproftx``) the way msprof's Python analysis builds aicpu / dp / l2_cache / msprof_tx
(``viewer/aicpu_viewer.py``, ``msparser/aicpu``, ``mscalculate/l2_cache``,
``viewer/msproftx_viewer.py``).  Shapes (one row per record, times int64 local ns):

- ``aicpu``: ``device_id, stream_id, task_id, start_ns, end_ns, task_ns, op_name, compute_us,
  memcpy_us, dispatch_us, total_ns`` -- runs starting before collectionTimeBegin are dropped;
  ``op_name`` is the op of the device task on the same (stream, task) whose window holds the
  run's end ("N/A" when none does); sorted by start.
- ``dp``: ``device_id, timestamp_ns, action, source, size`` in file order.
- ``l2_cache``: ``device_id, stream_id, task_id, hit_rate, victim_rate, op_name`` in file order;
  rates = hit / request and victim / request events (rounded to 6 decimals, 0 without
  requests) with the chip's events of msprof's L2CacheConfig; ``hit_rate`` NaN on STARS chips,
  where msprof prints N/A; ``op_name`` the last op launched on (stream, task).
- ``msproftx``: ``info_type, pid, tid, category, event_type, payload_type, payload_value,
  start_ns, end_ns, message_type, message, domain, mark_id`` -- plain marks / ranges
  (``info_type`` 0; msprof shows domain and mark id as N/A) and MarkEx marks (1: their segments
  joined in ``seg_idx`` order; msprof shows category, payload and message type as N/A), sorted
  by start.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from msprof_py.errors import WarningLog
from msprof_py.parse.cats import frame
from msprof_py.parse.meta import ResultDir, Ticks

AICPU_COLUMNS = ["device_id", "stream_id", "task_id", "start_ns", "end_ns", "task_ns", "op_name", "compute_us",
                 "memcpy_us", "dispatch_us", "total_ns"]
DP_COLUMNS = ["device_id", "timestamp_ns", "action", "source", "size"]
L2_COLUMNS = ["device_id", "stream_id", "task_id", "hit_rate", "victim_rate", "op_name"]
TX_COLUMNS = ["info_type", "pid", "tid", "category", "event_type", "payload_type", "payload_value", "start_ns", "end_ns",
              "message_type", "message", "domain", "mark_id"]
TABLE_COLUMNS = {"aicpu": AICPU_COLUMNS, "dp": DP_COLUMNS, "l2_cache": L2_COLUMNS, "msproftx": TX_COLUMNS}

# msprof's L2CacheConfig: platform -> (request, hit, victim) events; "-" subtracts
L2_EVENTS: dict[int, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    1: (("0x59",), ("0x5b",), ("0x5c",)),
    **{p: (("0x78", "0x79"), ("0x6a",), ("0x71",)) for p in (2, 3, 4)},
    **{p: (("0xfb", "0xfc"), ("0x90", "0x91"), ("0x9c",)) for p in (5, 7, 8, 11)},
    **{p: (("0x00",), ("0x00", "-0x81", "-0x82", "-0x83", "-0x74", "-0x75"), ("0x74", "0x75")) for p in (15, 16)},
}
STARS_CHIPS = frozenset({5, 7, 8, 11, 15, 16})  # msprof prints the L2 hit rate as N/A on these
RATE_DECIMALS = 6


def empty(name: str) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object if c in ("op_name", "action", "source", "event_type", "message",
                                                            "domain") else np.float64 if c.endswith(("_us", "rate"))
                                      else np.int64) for c in TABLE_COLUMNS[name]})


def device_tables(device_id: int, rd: ResultDir, tables: dict[str, Any], ticks: Ticks, tasks: pd.DataFrame,
                  warnings: WarningLog) -> dict[str, pd.DataFrame]:
    """``aicpu``, ``dp`` and ``l2_cache`` rows of one device; ``tasks``: its joined device tasks."""
    out = {}
    cpu = tables.get("aicpu")
    out["aicpu"] = _aicpu(device_id, rd, cpu["node"], ticks, tasks) if cpu is not None else empty("aicpu")
    out["dp"] = _dp(device_id, cpu["dp"], ticks) if cpu is not None else empty("dp")
    l2 = tables.get("l2_cache")
    out["l2_cache"] = _l2(device_id, rd, l2, tasks, warnings) if l2 is not None else empty("l2_cache")
    return out


def _aicpu(device_id: int, rd: ResultDir, n: dict[str, np.ndarray], ticks: Ticks, tasks: pd.DataFrame) -> pd.DataFrame:
    start = ticks.to_local_ns(n["start_tick"])
    end = ticks.to_local_ns(n["end_tick"])
    rows = frame({"device_id": np.full(len(start), device_id, np.int64), "stream_id": n["stream_id"],
                  "task_id": n["task_id"], "start_ns": start, "end_ns": end, "task_ns": end - start,
                  "op_name": _op_in_window(n["stream_id"], n["task_id"], end, tasks),
                  "compute_us": n["compute_us"], "memcpy_us": n["memcpy_us"], "dispatch_us": n["dispatch_us"],
                  "total_ns": ticks.dur_ns(n["total_ticks"])})
    rows = rows[(n["start_tick"] != 0) & (n["end_tick"] != 0) & (start >= rd.collection_start_ns)]
    return rows.sort_values("start_ns", kind="stable").reset_index(drop=True)


def _op_in_window(stream: np.ndarray, task: np.ndarray, t: np.ndarray, tasks: pd.DataFrame) -> np.ndarray:
    """Op name of the device task on (stream, task) whose [start, end] holds ``t``, else N/A."""
    out = np.full(len(t), "N/A", dtype=object)
    if not len(t) or not len(tasks):
        return out
    dev = tasks[tasks["start_ns"].to_numpy(np.int64) >= 0]
    right = pd.DataFrame({"stream_id": dev["stream_id"].to_numpy(np.int64), "task_id": dev["task_id"].to_numpy(np.int64),
                          "t": dev["start_ns"].to_numpy(np.int64),
                          "end": (dev["start_ns"] + dev["dur_ns"]).to_numpy(np.int64),
                          "op_name": dev["op_name"].astype(str).to_numpy(object)}).sort_values("t", kind="stable")
    left = pd.DataFrame({"stream_id": np.asarray(stream, np.int64), "task_id": np.asarray(task, np.int64),
                         "t": np.asarray(t, np.int64), "_i": np.arange(len(t))}).sort_values("t", kind="stable")
    m = pd.merge_asof(left, right, on="t", by=["stream_id", "task_id"], direction="backward")
    ok = m["end"].notna().to_numpy() & (m["t"].to_numpy(np.int64) <= m["end"].fillna(-1).to_numpy(np.int64))
    out[m["_i"].to_numpy()[ok]] = m["op_name"].to_numpy(object)[ok]
    return out


def _dp(device_id: int, d: dict[str, np.ndarray], ticks: Ticks) -> pd.DataFrame:
    ts = np.asarray(d["timestamp"], np.int64) + np.int64(ticks.local_offset_ns)
    return frame({"device_id": np.full(len(ts), device_id, np.int64), "timestamp_ns": ts, "action": d["action"],
                  "source": d["source"], "size": d["size"]})


def _l2(device_id: int, rd: ResultDir, l2: dict[str, np.ndarray], tasks: pd.DataFrame,
        warnings: WarningLog) -> pd.DataFrame:
    if not len(l2["task_id"]):
        return empty("l2_cache")
    chip = int(rd.info.get("platform_version", -1)) if str(rd.info.get("platform_version", "")).isdigit() else -1
    listed = [e.strip().lower() for e in str(rd.sample.get("l2CacheTaskProfilingEvents", "")).split(",") if e.strip()]
    spec = L2_EVENTS.get(chip)
    where = rd.path / "sample.json"
    if spec is None:
        warnings.warn(f"{where}: no L2 cache events known for platform {chip}; l2_cache not computed")
        return empty("l2_cache")
    need = {e.lstrip("-") for group in spec for e in group}
    if len(listed) > 8 or not need <= set(listed):
        warnings.warn(f"{where}: l2CacheTaskProfilingEvents {','.join(listed) or '(empty)'} lacks the events "
                      f"platform {chip} needs ({', '.join(sorted(need))}); l2_cache not computed")
        return empty("l2_cache")
    ev = l2["events"].astype(np.float64)

    def total(group: tuple[str, ...]) -> np.ndarray:
        v = np.zeros(len(ev))
        for e in group:
            v += (-1.0 if e.startswith("-") else 1.0) * ev[:, listed.index(e.lstrip("-"))]
        return v

    req, hit, victim = (total(g) for g in spec)
    with np.errstate(divide="ignore", invalid="ignore"):
        hit_rate = np.round(np.where(req != 0, hit / np.where(req != 0, req, 1), 0.0), RATE_DECIMALS)
        victim_rate = np.round(np.where(req != 0, victim / np.where(req != 0, req, 1), 0.0), RATE_DECIMALS)
    if chip in STARS_CHIPS:
        hit_rate = np.full(len(ev), np.nan)
    return frame({"device_id": np.full(len(ev), device_id, np.int64), "stream_id": l2["stream_id"],
                  "task_id": l2["task_id"], "hit_rate": hit_rate, "victim_rate": victim_rate,
                  "op_name": _last_op(l2["stream_id"], l2["task_id"], tasks)})


def _last_op(stream: np.ndarray, task: np.ndarray, tasks: pd.DataFrame) -> np.ndarray:
    """The op name last launched on each (stream, task) (msprof's ge task dict), else N/A."""
    if not len(tasks):
        return np.full(len(stream), "N/A", dtype=object)
    named = tasks[tasks["op_name"].astype(str) != "N/A"]
    last = pd.DataFrame({"stream_id": named["stream_id"].to_numpy(np.int64),
                         "task_id": named["task_id"].to_numpy(np.int64),
                         "op_name": named["op_name"].astype(str).to_numpy(object)}).drop_duplicates(
        ["stream_id", "task_id"], keep="last")
    key = pd.DataFrame({"stream_id": np.asarray(stream, np.int64), "task_id": np.asarray(task, np.int64)})
    return key.merge(last, on=["stream_id", "task_id"], how="left")["op_name"].fillna("N/A").to_numpy(object)


def tx_table(tables: dict[str, Any], ticks: Ticks | None) -> pd.DataFrame:
    """The host's msproftx rows (plain records and merged MarkEx marks), sorted by start."""
    t = tables.get("msproftx")
    if t is None or ticks is None or not len(t["start"]):
        return empty("msproftx")
    start, end = ticks.to_local_ns(t["start"]), ticks.to_local_ns(t["end"])
    plain = np.flatnonzero(t["info_type"] == 0)
    n = len(plain)
    rows = frame({"info_type": np.zeros(n, np.int64), "pid": t["pid"][plain], "tid": t["tid"][plain],
                  "category": t["category"][plain], "event_type": t["event_type"][plain],
                  "payload_type": t["payload_type"][plain], "payload_value": t["payload_value"][plain],
                  "start_ns": start[plain], "end_ns": end[plain], "message_type": t["message_type"][plain],
                  "message": t["message"][plain], "domain": np.full(n, "N/A", object),
                  "mark_id": np.zeros(n, np.uint64)})
    ex = np.flatnonzero(t["info_type"] == 1)
    if len(ex):
        e = pd.DataFrame({"mark_id": t["mark_id"][ex], "seg": t["seg_idx"][ex], "message": t["message"][ex],
                          "i": ex}).sort_values(["mark_id", "seg"], kind="stable")
        g = e.groupby("mark_id", sort=True)
        i = g["i"].min().to_numpy(np.int64)
        k = len(i)
        rows = pd.concat([rows, frame({
            "info_type": np.ones(k, np.int64), "pid": t["pid"][i], "tid": t["tid"][i], "category": np.zeros(k, np.int64),
            "event_type": t["event_type"][i], "payload_type": np.zeros(k, np.int64),
            "payload_value": np.zeros(k, np.uint64), "start_ns": start[i], "end_ns": end[i],
            "message_type": np.zeros(k, np.int64), "message": g["message"].agg("".join).to_numpy(object),
            "domain": t["domain"][i], "mark_id": t["mark_id"][i]})], ignore_index=True)
    return rows.sort_values("start_ns", kind="stable").reset_index(drop=True)

"""The ``pmu`` session table: msprof's metric_summary values per device task (vectorised).

One row per device task that has a context PMU record: ``device_id, stream_id, task_id,
context_id, start_ns`` (the task's start, local ns, to join with ``tasks``) and then float64 /
int64 metric columns named as msprof's ``metric_summary`` columns:

* Ascend 910B (platform_version 5, msprof's C++ path): ``aic_total_time`` (µs),
  ``aic_total_cycles``, the ``aic_`` metrics of ``ai_core_metrics``, ``aiv_total_time``,
  ``aiv_total_cycles``, the ``aiv_`` metrics of ``aiv_metrics``.  A task's main core gives its
  block from the context record; the other core of a MIX task sums its first ``mix_block_num``
  block records (0 when the host reports no mix block num, as in msprof).
* other chips (msprof's Python path): ``total_time`` (µs, rounded to 2 decimals as msprof
  does), ``total_cycles`` and ``<pipe>_time`` / ``<pipe>_ratio`` pairs of the set.

Times use ``cycles / freq / block_num * ceil(block_num / core_num)`` with freq the AI Core
clock in force at the record's end (C++: ``lpmFreqConv``; Python path: ``lpmInfoConv``; else
info.json ``aic_frequency``).  ``block_num`` comes from the host's task info (0 -> time 0).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from msprof_py.errors import WarningLog
from msprof_py.parse.cats import frame
from msprof_py.parse.keys import first_match
from msprof_py.parse.meta import ResultDir
from msprof_py.parse.pmu import metrics as M
from msprof_py.parse.pmu.assoc import COUNTER_COLS
from msprof_py.parse.records.ffts_profile import AIC, AIV, MIX_AIC, MIX_AIV

KEY_COLS = ["device_id", "stream_id", "task_id", "context_id", "start_ns"]
CUBE_BASE = "cube_usage_base"  # aic_total_cycles / (aic MHz * AI Cores) * 100 (%.µs), NaN if unknown
CHIP_V4 = "5"  # info.json platform_version of the 910B (msprof CHIP_V4_1_0)


@dataclass
class DevicePmu:
    """What the device pass hands over: matched records and the frequency changes."""

    context: pd.DataFrame  # assoc.associate() context frame + stream_id/task_id/context_id/start_ns
    block: pd.DataFrame  # assoc.associate() block frame + the same key columns
    freq_conv: tuple[np.ndarray, np.ndarray] = field(default_factory=lambda: (np.zeros(0, np.uint64),
                                                                             np.zeros(0, np.int64)))
    freq_info: tuple[np.ndarray, np.ndarray] = field(default_factory=lambda: (np.zeros(0, np.uint64),
                                                                             np.zeros(0, np.int64)))


def _dinfo(rd: ResultDir) -> dict:
    d = rd.info.get("DeviceInfo") or [{}]
    return d[0] if isinstance(d, list) and d and isinstance(d[0], dict) else {}


def _num(v: object, default: float = 0.0) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return default


def freq_at(ts: np.ndarray, change_syscnt: np.ndarray, change_mhz: np.ndarray, default_hz: float) -> np.ndarray:
    """msprof's GetFreq / _get_current_freq: the last change at or before ``ts`` (Hz), else the
    default; any 0 MHz sample makes msprof ignore the samples."""
    ts = np.asarray(ts, np.uint64)
    if not len(change_syscnt) or (np.asarray(change_mhz) == 0).any():
        return np.full(len(ts), default_hz)
    order = np.argsort(change_syscnt, kind="stable")
    sc, mhz = np.asarray(change_syscnt, np.uint64)[order], np.asarray(change_mhz, np.float64)[order]
    pos = np.searchsorted(sc, ts, side="right") - 1
    return np.where(pos >= 0, mhz[np.maximum(pos, 0)] * M.FREQ_TO_HZ, default_hz)


def _blocks(tasks: pd.DataFrame, keys: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(block_num, mix_block_num) of each key row from the joined task table (0 if unknown)."""
    cols = ["stream_id", "task_id", "context_id", "start_ns"]
    if tasks is None or not len(tasks) or not len(keys):
        return np.zeros(len(keys), np.int64), np.zeros(len(keys), np.int64)
    got = first_match([keys[c].to_numpy() for c in cols], [tasks[c].to_numpy() for c in cols])
    if got is not None and all(tasks[c].dtype.kind in "iuf" for c in ("block_num", "mix_block_num")):
        # (the merge below without its hash tables: one sort of the task keys, a search per key row)
        hit = got >= 0

        def take(name: str) -> np.ndarray:
            out = np.zeros(len(keys), np.float64)
            out[hit] = tasks[name].to_numpy()[got[hit]]
            return np.nan_to_num(out, nan=0.0).astype(np.int64).clip(min=0)
        return take("block_num"), take("mix_block_num")
    t = tasks[cols + ["block_num", "mix_block_num"]].drop_duplicates(cols)
    m = keys[cols].merge(t, on=cols, how="left")
    return (m["block_num"].fillna(0).to_numpy(np.int64).clip(min=0),
            m["mix_block_num"].fillna(0).to_numpy(np.int64).clip(min=0))


def build(device_id: int, rd: ResultDir, dp: DevicePmu | None, tasks: pd.DataFrame,
          warnings: WarningLog) -> pd.DataFrame:
    """The ``pmu`` rows of one device (empty frame when there is no PMU data)."""
    if dp is None or not len(dp.context):
        return pd.DataFrame(columns=KEY_COLS)
    sample, info = rd.sample, _dinfo(rd)
    aic_set = str(sample.get("ai_core_metrics") or "")
    aic_mhz = _num(info.get("aic_frequency"))
    c = dp.context.reset_index(drop=True)
    block_num, mix_block_num = _blocks(tasks, c)
    out = {"device_id": np.full(len(c), device_id, np.int64)}
    for k in KEY_COLS[1:]:
        out[k] = c[k].to_numpy(np.int64)
    if str(rd.info.get("platform_version", "")) == CHIP_V4:
        aiv_set = str(sample.get("aiv_metrics") or M.AIV_METRICS.get(aic_set, aic_set))
        if aic_set not in M.CALCULATORS or aiv_set not in M.CALCULATORS:
            warnings.warn(f"{rd.path / 'sample.json'}: ai_core_metrics {aic_set!r} / aiv_metrics {aiv_set!r} "
                          "not computable; PMU columns left out")
            return pd.DataFrame(columns=KEY_COLS)
        out.update(_v4(rd, c, dp, block_num, mix_block_num, aic_set, aiv_set, aic_mhz))
    else:
        if aic_set not in M.LEGACY_SETS:
            warnings.warn(f"{rd.path / 'sample.json'}: ai_core_metrics {aic_set!r} is not computed for "
                          f"platform_version {rd.info.get('platform_version')!r}; PMU columns left out")
            return pd.DataFrame(columns=KEY_COLS)
        out.update(_legacy(rd, c, dp, block_num, aic_set, aic_mhz))
    huge = sum(int((v == CYCLES_MAX).sum()) for k, v in out.items() if k.endswith("total_cycles"))
    if huge:
        warnings.warn(f"{rd.path / 'data'}: {huge} PMU cycle count(s) of 2**63 or more (corrupt ffts_profile "
                      f"data?) shown as {CYCLES_MAX}")
    return frame(out)  # the columns as computed: no consolidating copy of ~30 float columns


CYCLES_MAX = int(np.iinfo(np.int64).max)


def _int_cycles(cyc: np.ndarray) -> np.ndarray:
    """Cycle counts (float64 of the raw uint64) as int64; a count of 2**63 or more, which only
    corrupt data holds (a flipped high bit), becomes :data:`CYCLES_MAX` (``build`` warns)."""
    with np.errstate(invalid="ignore"):
        out = cyc.astype(np.int64)
    out[~(cyc < 2.0**63)] = CYCLES_MAX
    return out


def _side(calc: str, counters: np.ndarray, events: tuple[int, ...], cyc: np.ndarray, block: np.ndarray,
          core_num: int, freq_hz: np.ndarray, bw_hz: float, prefix: str) -> dict[str, np.ndarray]:
    t = M.total_time_us(cyc, freq_hz, block, core_num)
    vals = M.compute(calc, counters, events, cyc, t, bw_hz)
    return {f"{prefix}total_time": t, f"{prefix}total_cycles": _int_cycles(cyc),
            **{prefix + k: v for k, v in vals.items()}}


def _v4(rd: ResultDir, c: pd.DataFrame, dp: DevicePmu, block_num: np.ndarray, mix_block_num: np.ndarray,
        aic_set: str, aiv_set: str, aic_mhz: float) -> dict[str, np.ndarray]:
    info = _dinfo(rd)
    aic_core, aiv_core = int(_num(info.get("ai_core_num"))), int(_num(info.get("aiv_num")))
    aic_ev = M.parse_events(rd.sample.get("ai_core_profiling_events")) or M.DEFAULT_EVENTS.get(aic_set, ())
    aiv_ev = M.parse_events(rd.sample.get("aiv_profiling_events")) or M.DEFAULT_EVENTS.get(aiv_set, ())
    bw_hz = aic_mhz * M.FREQ_TO_HZ
    freq = freq_at(c["end"].to_numpy(np.uint64), *dp.freq_conv, bw_hz)
    accel = c["accel"].to_numpy()
    cyc = c["total_cycle"].to_numpy(np.uint64).astype(np.float64)
    cnt = _counters(c)
    n = len(c)
    # the other core of MIX tasks: sum of its first mix_block_num block records (np.zeros: pages
    # are only backed where a MIX task's sum lands)
    b = dp.block
    bcyc, bcnt = np.zeros(n), np.zeros((n, len(COUNTER_COLS)))
    if len(b):
        want_core = np.where(accel == MIX_AIC, 1, 0)
        row = pd.Series(np.arange(n), index=c["task"].to_numpy())
        r = row.reindex(b["task"].to_numpy()).to_numpy()
        ok = ~np.isnan(r)
        ri = np.where(ok, r, 0).astype(np.int64)
        ok &= (b["accel"].to_numpy() == accel[ri]) & (b["core_type"].to_numpy() == want_core[ri])
        ok &= b["rank"].to_numpy() < mix_block_num[ri]
        np.add.at(bcyc, ri[ok], b["total_cycle"].to_numpy(np.float64)[ok])
        np.add.at(bcnt, ri[ok], b[COUNTER_COLS].to_numpy(np.uint64).astype(np.float64)[ok])
    aic_main = np.isin(accel, [AIC, MIX_AIC])
    mix = np.isin(accel, [MIX_AIC, MIX_AIV])
    # block records are counted with the other core's events and core count (msprof's CalculatePmuMetric);
    # one side's inputs at a time (each an (n, 8) float64 matrix: B' has 500 k rows a device)
    # AIC side: context values on AIC/MIX_AIC tasks, block sums on MIX_AIV, zeros on AIV
    aic = _side(aic_set, _pick(cnt.copy(), aic_main, accel == MIX_AIV, bcnt), aic_ev,
                np.where(aic_main, cyc, np.where(accel == MIX_AIV, bcyc, 0.0)),
                np.where(accel == MIX_AIV, mix_block_num, block_num), aic_core, freq, bw_hz, "aic_")
    v_cyc = np.where(~aic_main & (accel != MIX_AIC), cyc, np.where(accel == MIX_AIC, bcyc, 0.0))
    v_cnt = _pick(cnt, (accel == AIV) | (accel == MIX_AIV), accel == MIX_AIC, bcnt)  # cnt itself: last use
    del cnt
    v_blk = np.where(accel == MIX_AIC, mix_block_num, block_num)
    aiv = _side(aiv_set, v_cnt, aiv_ev, v_cyc, v_blk, aiv_core, freq, bw_hz, "aiv_")
    del v_cnt, v_cyc, v_blk
    # sides that do not exist for the task type are zero (msprof ConstructData)
    for side, keep in ((aic, aic_main | mix), (aiv, ~aic_main | mix)):
        drop = ~keep
        for v in side.values():
            v[drop] = 0  # each column is a fresh array of its own (compute / _side): in place
    with np.errstate(divide="ignore", invalid="ignore"):
        base = aic["aic_total_cycles"] / (aic_mhz * aic_core) * 100 if aic_mhz and aic_core else \
            np.full(len(c), np.nan)
    return {**aic, **aiv, CUBE_BASE: base}


def _counters(c: pd.DataFrame) -> np.ndarray:
    """The (n, 8) counter matrix as float64 (one array: no uint64 copy first)."""
    out = np.empty((len(c), len(COUNTER_COLS)))
    for i, col in enumerate(COUNTER_COLS):
        out[:, i] = c[col].to_numpy(np.uint64)
    return out


def _pick(own: np.ndarray, keep: np.ndarray, other: np.ndarray, other_values: np.ndarray) -> np.ndarray:
    """``own`` rows where ``keep``, ``other_values`` rows where ``other`` (disjoint), else 0, in
    place of ``own`` (what ``np.where(keep, own, np.where(other, other_values, 0))`` gives
    without its two full-size temporaries)."""
    own[~keep] = 0.0
    own[other] = other_values[other]
    return own


def _legacy(rd: ResultDir, c: pd.DataFrame, dp: DevicePmu, block_num: np.ndarray, aic_set: str,
            aic_mhz: float) -> dict[str, np.ndarray]:
    info = _dinfo(rd)
    core = int(_num(info.get("ai_core_num")))
    events = M.parse_events(rd.sample.get("ai_core_profiling_events")) or M.LEGACY_EVENTS.get(aic_set, ())
    freq = freq_at(c["end"].to_numpy(np.uint64), *dp.freq_info, aic_mhz * M.FREQ_TO_HZ)
    cyc = c["total_cycle"].to_numpy(np.uint64).astype(np.float64)
    cnt = _counters(c)
    t = np.round(M.total_time_us(cyc, np.floor(freq), block_num, core), 2)
    out: dict[str, np.ndarray] = {"total_time": t, "total_cycles": _int_cycles(cyc)}
    safe = np.where(cyc != 0, cyc, 1.0)
    for name, regs in M.LEGACY_SETS[aic_set]:
        v = np.zeros(len(c))
        for r in regs:
            if r in events and events.index(r) < cnt.shape[1]:
                v = v + cnt[:, events.index(r)]
        ratio = np.where(cyc != 0, v / safe, 0.0)
        base = name.replace("_ratio_extra", "").replace("_ratio", "")
        out[f"{base}_time"] = t * ratio
        out[name] = ratio
    return out

"""Turns scheduled iterations into records (through the hooks) and truth rows.

:class:`Emitter` keeps the state that spans blocks of iterations: the runtime's per-stream task
counters (fresh task ids continue across calls and wrap with FLIP_TASK records), the STARS log
sequence counter per device, the per-model iteration index, the host-record buffer and the
truth.  A *block* is ``K`` iterations of one :class:`~msprof_py.runtime.program.Program` on one
device with their scheduled start/end times ``(K, T)``; records are built with numpy over whole
blocks, cut into chunks of about :data:`CHUNK_TASKS` device tasks to bound memory.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from msprof_py.raw import api_event, stars_soc, task_track, ts_track
from msprof_py.runtime.device import ATLAS_A2, DeviceSpec
from msprof_py.runtime.counters_model import CounterEmitter
from msprof_py.runtime.pmu_model import PmuEmitter
from msprof_py.raw.common import EVENT_FLAG, LEVEL_ACL, LEVEL_RUNTIME, tile_records
from msprof_py.runtime import records, rts
from msprof_py.runtime.apis import Names
from msprof_py.runtime.clock import SimClock
from msprof_py.runtime.hooks import ProfilerHooks
from msprof_py.runtime.program import PATCH_INDEX, PATCH_TASK, Program
from msprof_py.runtime.records import HostLog

CHUNK_TASKS = 1 << 17
TRUTH_COLUMNS = ["device_id", "model_id", "index_id", "stream_id", "task_id", "batch_id", "context_id",
                 "start_sim_ns", "dur_ns", "start_syscnt", "end_syscnt", "op_name", "op_type", "task_type",
                 "host_task_type", "sqe_type"]
STEP_COLUMNS = ["device_id", "model_id", "index_id", "start_sim_ns", "end_sim_ns", "fp_sim_ns", "bp_sim_ns"]
MODEL_END_AFTER_NS = 20  # MODEL_END is written one hwts tick after ITER_END / the last task


class Emitter:
    def __init__(self, hooks: ProfilerHooks, clock: SimClock, names: Names, threads: dict[int, int],
                 task_id_start: int = 0, spec: DeviceSpec | None = None) -> None:
        if not 0 <= task_id_start < rts.TASK_ID_SPACE:
            raise ValueError(f"task_id_start must be in [0, 65535], got {task_id_start}")
        self.hooks, self.clock, self.names = hooks, clock, names
        self.on = bool(hooks.enabled)
        self.threads = threads
        self.task_id_start = task_id_start
        self.log = HostLog()
        self.fresh_n: dict[tuple[int, int], int] = {}  # (device, stream) -> next real task number
        self.stars_cnt: dict[int, int] = {}
        self.next_index: dict[tuple[int, int], int] = {}  # (device, model) -> next index_id
        self.truth_parts: list[dict] = []
        self.step_parts: list[dict] = []
        self.cats = _Categories()
        events = getattr(hooks, "pmu_events", None) if self.on else None
        self.pmu = PmuEmitter(hooks, clock, spec or ATLAS_A2, events) if events else None
        switches = frozenset(getattr(hooks, "device_counters", ())) if self.on else frozenset()
        self.counters = CounterEmitter(hooks, clock, switches) if switches else None

    # ------------------------------------------------------------------ plain host records
    def add(self, tag: str, aging: bool, recs: np.ndarray) -> None:
        if self.on:
            self.log.add(tag, aging, recs)

    def acl(self, d: int, name: str, begin, end) -> None:
        if self.on:
            self.log.add(api_event.FILE_TAG, True, records.api(LEVEL_ACL, self.names.acl(name), self.threads[d],
                                                               begin, end, 0))

    def rt(self, d: int, name: str, begin, end) -> None:
        if self.on:
            self.log.add(api_event.FILE_TAG, True, records.api(LEVEL_RUNTIME, self.names.rt_api(name),
                                                               self.threads[d], begin, end, 0))

    def sync(self, d: int, begin, end) -> None:
        """``aclrtSynchronizeStream`` (+ the runtime's StreamSynchronize inside) per row."""
        self.acl(d, "aclrtSynchronizeStream", begin, end)
        self.rt(d, "StreamSynchronize", np.asarray(begin) + 500, np.asarray(end) - 500)

    # ------------------------------------------------------------------ iterations
    def block(self, d: int, prog: Program, start: np.ndarray, end: np.ndarray, h0: np.ndarray,
              host_speed: np.ndarray | None = None, fp_point: str | None = None, bp_point: str | None = None
              ) -> None:
        """Records and truth for ``K`` scheduled iterations of ``prog`` on device ``d``.

        ``host_speed`` (K,): the factor each iteration's host offsets were scaled by (default 1).
        ``fp_point`` / ``bp_point``: op names where the FP tag (its start) / BP tag (its end) go,
        as msprof's ``profiling_options`` set them; default: the first forward / last backward op.
        """
        K, T = start.shape
        speed = np.ones(K) if host_speed is None else np.asarray(host_speed, np.float64)
        tid, bat, flips = self._task_ids(d, prog, K)
        index0 = 0
        if prog.mode == "static":
            key = (d, prog.model_id)
            index0 = self.next_index.get(key, 1)
            self.next_index[key] = index0 + K
        codes = self.cats.codes(prog)
        ctx = np.array(prog.tasks.context_id, np.int64)
        stream = np.array(prog.tasks.stream, np.int64)
        sqe, ffts = _device_types(prog)
        task_ts = _task_track_offsets(prog)
        flip_by_k: dict[int, list] = {}
        for f in flips:
            flip_by_k.setdefault(f[0], []).append(f)
        per_chunk = max(1, CHUNK_TASKS // max(T, 1))
        for k0 in range(0, K, per_chunk):
            k1 = min(K, k0 + per_chunk)
            st, en = start[k0:k1], end[k0:k1]
            kf = [f for k in range(k0, k1) for f in flip_by_k.get(k, ())]
            idx = np.arange(index0 + k0, index0 + k1, dtype=np.int64) if prog.mode == "static" else None
            self.truth_parts.append(self._truth(d, prog, idx, st, en, tid[k0:k1], bat[k0:k1], ctx, stream, codes))
            steps = self._steps(d, prog, idx, st, en, tid[k0:k1], fp_point, bp_point) if idx is not None else None
            if steps is not None:
                self.step_parts.append(steps)
            if self.on:
                self._stars(d, st, en, stream, tid[k0:k1], sqe, ffts, ctx)
                if self.pmu is not None:
                    self.pmu.block(d, prog, st, en, tid[k0:k1], stream, ctx)
                if self.counters is not None:
                    self.counters.block(d, prog, st, en, tid[k0:k1], stream)
                self._ts_track(d, steps, kf, start)
                self._host_iterations(d, prog, k0, k1, idx, h0, speed, tid, bat, kf, task_ts)
                self.log.flush(self.hooks, self.clock)

    def finish(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Report what is left; the truth tables."""
        if self.on:
            self.log.flush(self.hooks, self.clock)
        if self.pmu is not None:
            self.pmu.finish()
        truth = _truth_frame(self.truth_parts, self.cats)
        steps = pd.DataFrame({c: np.concatenate([p[c] for p in self.step_parts]) if self.step_parts
                              else np.zeros(0, np.int64) for c in STEP_COLUMNS})
        return truth, steps

    # ------------------------------------------------------------------ pieces
    def _task_ids(self, d: int, prog: Program, K: int):
        """Task and batch ids ``(K, T)`` and the flips ``(k, template index, stream, flip number)``."""
        tm = prog.tasks
        T = len(tm)
        tid = np.broadcast_to(np.array(tm.task_id, np.int64), (K, T)).copy()
        bat = np.broadcast_to(np.array(tm.batch_id, np.int64), (K, T)).copy()
        fresh = np.array(tm.fresh, bool)
        stream = np.array(tm.stream, np.int64)
        flips = []
        for s in np.unique(stream[fresh]):
            idx = np.flatnonzero(fresh & (stream == s))
            F = len(idx)
            n0 = self.fresh_n.get((d, int(s)), self.task_id_start)
            self.fresh_n[(d, int(s))] = n0 + K * F
            n = n0 + np.arange(K, dtype=np.int64)[:, None] * F + np.arange(F)[None, :]
            t_, b_ = rts.split_counter(rts.task_counters(n))
            tid[:, idx] = t_
            bat[:, idx] = b_
            pos, m = rts.flip_positions(n0, K * F)
            for p, mm in zip(pos.tolist(), m.tolist()):
                flips.append((p // F, int(idx[p % F]), int(s), mm))
        return tid, bat, flips

    def _truth(self, d, prog, idx, st, en, tid, bat, ctx, stream, codes) -> dict:
        nk, T = st.shape
        index = np.repeat(idx, T) if idx is not None else np.zeros(nk * T, np.int64)
        return {
            "device_id": np.full(nk * T, d, np.int32),
            "model_id": np.full(nk * T, prog.model_id, np.int64),
            "index_id": index,
            "stream_id": np.tile(stream, nk).astype(np.int32),
            "task_id": tid.ravel().astype(np.int32),
            "batch_id": bat.ravel().astype(np.int32),
            "context_id": np.tile(ctx, nk),
            "start_sim_ns": st.ravel().copy(),
            "dur_ns": (en - st).ravel(),
            "start_syscnt": self.clock.syscnt(st.ravel()),
            "end_syscnt": self.clock.syscnt(en.ravel()),
            "codes": np.tile(codes, (nk, 1)),
        }

    def _steps(self, d, prog, idx, st, en, tid, fp_point, bp_point) -> dict | None:
        tm = prog.tasks
        model = np.array(tm.model_task, bool)
        if not model.any():
            return None
        phase = np.array(tm.phase)
        names = np.array([i.op_name for i in tm.info])
        fp = np.flatnonzero(model & (names == fp_point)) if fp_point else np.zeros(0, np.int64)
        bp = np.flatnonzero(model & (names == bp_point)) if bp_point else np.zeros(0, np.int64)
        fp = fp if len(fp) else np.flatnonzero(model & (phase == "fp"))
        bp = bp if len(bp) else np.flatnonzero(model & (phase == "bp"))
        segs = sorted({p for p in phase.tolist() if p.startswith("allreduce")}, key=lambda p: int(p[9:] or 0))
        ar = [np.flatnonzero(model & (phase == p)) for p in segs]
        mi = np.flatnonzero(model)
        nk = len(idx)
        training = bool((prog.training or fp_point or bp_point) and len(fp) and len(bp))
        return {
            "device_id": np.full(nk, d, np.int64), "model_id": np.full(nk, prog.model_id, np.int64),
            # the iteration ends with its last task (output copies included), so every task of an
            # execution falls inside its step window (msprof assigns device tasks by window)
            "index_id": idx, "start_sim_ns": st[:, mi].min(axis=1), "end_sim_ns": en.max(axis=1),
            "fp_sim_ns": st[:, fp[0]] if training else np.full(nk, -1, np.int64),
            "bp_sim_ns": en[:, bp[-1]] if training else np.full(nk, -1, np.int64),
            # for the ts_track records only
            "_training": training, "_first_tid": tid[:, mi[0]], "_last_tid": tid[:, mi[-1]],
            "_ar": [(st[:, a[0]], en[:, a[-1]]) for a in ar], "_stream": prog.main_stream,
        }

    def _stars(self, d, st, en, stream, tid, sqe_t, ffts_t, ctx_t) -> None:
        """STARS logs of a chunk of iterations in time order: an ACSQ start/end pair per task, and
        for MIX kernels also an FFTS+ sub-task start/end pair (context id, sub-task type) -- real
        STARS logs a MIX kernel both ways (the PyPTO captures: one AI_CORE ACSQ pair and one
        MIX_AIC sub-task pair per kernel), so both of msprof's host rows (context 4294967295 and 0)
        find their device log."""
        mix = np.flatnonzero(ffts_t)
        if len(mix):  # the ACSQ pair of each MIX kernel: a whole-task AI_CORE log, same times
            st, en = np.concatenate([st, st[:, mix]], axis=1), np.concatenate([en, en[:, mix]], axis=1)
            stream, tid = np.concatenate([stream, stream[mix]]), np.concatenate([tid, tid[:, mix]], axis=1)
            sqe_t = np.concatenate([sqe_t, np.full(len(mix), stars_soc.SQE_TYPE_IDS["AI_CORE"], sqe_t.dtype)])
            ffts_t = np.concatenate([ffts_t, np.zeros(len(mix), bool)])
            ctx_t = np.concatenate([ctx_t, ctx_t[mix]])
        nk, T = st.shape
        n = nk * T
        cnt0 = self.stars_cnt.get(d, 0)
        self.stars_cnt[d] = cnt0 + 2 * n
        ts = np.concatenate([self.clock.syscnt(st.ravel()), self.clock.syscnt(en.ravel())])
        is_end = np.repeat(np.array([0, 1], np.uint16), n)
        order = np.lexsort((1 - is_end, ts))  # by time; at equal ticks an end before a start
        recs = np.zeros(2 * n, stars_soc.DTYPE)
        seq = (cnt0 + np.arange(2 * n)) % 16
        sqe2 = np.tile(np.concatenate([sqe_t, sqe_t]).reshape(2, T), (1, nk)).ravel()[order]
        ffts2 = np.tile(np.concatenate([ffts_t, ffts_t]).reshape(2, T), (1, nk)).ravel()[order]
        func = np.where(ffts2, is_end[order] + stars_soc.FUNC_FFTS_START, is_end[order])
        recs["word0"] = stars_soc.pack_word0(func, seq, np.where(ffts2, 0, sqe2))
        recs["resv0"] = stars_soc.MAGIC
        s2 = np.tile(stream, nk)
        recs["stream_id"] = np.concatenate([s2, s2])[order]
        t2 = tid.ravel()
        recs["task_id"] = np.concatenate([t2, t2])[order]
        recs["timestamp"] = ts[order]
        recs["acc_id"] = (recs["stream_id"] & 0x3F) << 6  # acsq id = the stream's hardware queue
        if ffts_t.any():
            sub = recs.view(stars_soc.FFTS_DTYPE)
            ctx2 = np.tile(np.concatenate([ctx_t, ctx_t]).reshape(2, T), (1, nk)).ravel()[order]
            sub["sub_task_type"] = np.where(ffts2, sqe2, sub["sub_task_type"])
            sub["sub_task_id"] = np.where(ffts2, ctx2 & 0xFFFF, sub["sub_task_id"])
        self.hooks.report_device(d, stars_soc.FILE_TAG, recs)

    def _ts_track(self, d, steps, flips, start) -> None:
        parts = []
        if steps is not None:
            tags = [(ts_track.TAG_MODEL_START, steps["start_sim_ns"], steps["_first_tid"])]
            if steps["_training"]:
                tags.append((ts_track.TAG_FP, steps["fp_sim_ns"], steps["_first_tid"]))
                tags.append((ts_track.TAG_BP, steps["bp_sim_ns"], steps["_last_tid"]))
                for n, (ar_start, ar_end) in enumerate(steps["_ar"]):  # even tag = start, odd = end
                    tags.append((ts_track.TAG_ALL_REDUCE_BASE + 2 * n, ar_start, steps["_last_tid"]))
                    tags.append((ts_track.TAG_ALL_REDUCE_BASE + 2 * n + 1, ar_end, steps["_last_tid"]))
                tags.append((ts_track.TAG_ITER_END, steps["end_sim_ns"], steps["_last_tid"]))
            tags.append((ts_track.TAG_MODEL_END, steps["end_sim_ns"] + MODEL_END_AFTER_NS, steps["_last_tid"]))
            for tag, t, tk in tags:
                r = np.zeros(len(t), ts_track.STEP_TRACE_DTYPE)
                r["func_type"] = ts_track.FUNC_STEP_TRACE
                r["timestamp"] = self.clock.syscnt(t)
                r["index_id"] = steps["index_id"]
                r["model_id"] = steps["model_id"]
                r["stream_id"] = steps["_stream"] & ts_track.STREAM_ID_MASK
                r["task_id"] = tk
                r["tag_id"] = tag
                parts.append(r.view(np.uint8).reshape(-1, ts_track.RECORD_SIZE))
        if flips:
            r = np.zeros(len(flips), ts_track.TASK_FLIP_DTYPE)
            r["func_type"] = ts_track.FUNC_TASK_FLIP
            # the flip runs on the stream right before the first task of the new batch
            r["timestamp"] = self.clock.syscnt(np.array([start[k, j] for k, j, _, _ in flips]))
            r["stream_id"] = [s & ts_track.STREAM_ID_MASK for _, _, s, _ in flips]
            r["flip_num"] = [m for *_, m in flips]
            r["task_id"] = 0
            parts.append(r.view(np.uint8).reshape(-1, ts_track.RECORD_SIZE))
        if parts:
            # raw 40-byte rows of mixed kinds in time order, typed with the all-bytes layout
            raw = np.ascontiguousarray(np.concatenate(parts))
            stamps = raw[:, 8:16].copy().view("<u8").ravel()
            raw = np.ascontiguousarray(raw[np.argsort(stamps, kind="stable")])
            self.hooks.report_device(d, ts_track.FILE_TAG, raw.view(ts_track.RAW_DTYPE).ravel())

    def _host_iterations(self, d, prog, k0, k1, idx, h0, speed, tid, bat, flips, task_ts) -> None:
        nk = k1 - k0
        base = h0[k0:k1]
        f = speed[k0:k1]
        thread = self.threads[d]

        for rows in prog.host:
            m = len(rows.records)
            recs = tile_records(rows.records, nk)
            b, fm = np.repeat(base, m), np.repeat(f, m)
            # template offsets (ns) -> each iteration's times: h0 + offset * speed
            recs["timestamp"] = (b + np.rint(recs["timestamp"].astype(np.float64) * fm)).astype(np.uint64)
            if rows.tag == api_event.FILE_TAG:
                is_api = recs["end"] != np.uint64(EVENT_FLAG)
                ends = recs["end"][is_api].astype(np.float64)
                recs["end"][is_api] = (b[is_api] + np.rint(ends * fm[is_api])).astype(np.uint64)
            if rows.patch == PATCH_TASK:
                ref = np.tile(rows.task_ref, nk)
                kk = np.repeat(np.arange(k0, k1), m)
                recs["task_id"] = tid[kk, ref]
                recs["batch_id"] = bat[kk, ref]
            elif rows.patch == PATCH_INDEX:
                recs["data_len"] = np.repeat(idx, m)
            self.log.add(rows.tag, rows.aging, recs)
        if flips:
            ts = np.array([h0[k] + round(task_ts[j] * speed[k]) - 100 for k, j, _, _ in flips], np.int64)
            self.log.add(task_track.FILE_TAG, True, records.task_tracks(
                thread, ts, d, np.array([s for _, _, s, _ in flips]), 0, np.array([m for *_, m in flips]),
                self.names.rt_task("FLIP_TASK"), self.names.h("FLIP_TASK"), 0))


class _Categories:
    """String columns of the truth as categorical codes (op names etc. are few, tasks are many)."""

    FIELDS = ("op_name", "op_type", "task_type", "host_task_type", "sqe_type")

    def __init__(self) -> None:
        self.values: dict[str, dict[str, int]] = {f: {} for f in self.FIELDS}
        self._cache: dict[int, np.ndarray] = {}

    def codes(self, prog: Program) -> np.ndarray:
        key = id(prog.tasks)
        if key in self._cache:
            return self._cache[key]
        out = np.zeros((len(prog.tasks), len(self.FIELDS)), np.int32)
        for j, info in enumerate(prog.tasks.info):
            for f_i, f in enumerate(self.FIELDS):
                table = self.values[f]
                out[j, f_i] = table.setdefault(getattr(info, f), len(table))
        self._cache[key] = out
        return out


_FFTS_SUB_IDS = {v: k for k, v in stars_soc.FFTS_SUBTASK_TYPES.items()}


def _device_types(prog: Program) -> tuple[np.ndarray, np.ndarray]:
    """Per template task: the SQE type (ACSQ) or FFTS+ sub-task type code, and whether it is FFTS+."""
    ffts = np.array([i.sqe_type not in stars_soc.SQE_TYPE_IDS for i in prog.tasks.info], bool)
    codes = np.array([_FFTS_SUB_IDS[i.sqe_type] if f else stars_soc.SQE_TYPE_IDS[i.sqe_type]
                      for i, f in zip(prog.tasks.info, ffts)], np.uint16)
    return codes, ffts


def _task_track_offsets(prog: Program) -> np.ndarray:
    """Host task_track time offset of every fresh template task."""
    out = np.zeros(len(prog.tasks), np.int64)
    for rows in prog.host:
        if rows.patch == PATCH_TASK:
            out[rows.task_ref] = rows.records["timestamp"].astype(np.int64)
    return out


def _truth_frame(parts: list[dict], cats: _Categories) -> pd.DataFrame:
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype="int64") for c in TRUTH_COLUMNS})
    # column by column, each part's column dropped once copied, and no consolidating copy at the
    # end: the truth of a 10M-task run is ~1 GB, and parts + a consolidated frame held it twice
    cols = {}
    for c in TRUTH_COLUMNS:
        if c in _Categories.FIELDS:
            continue
        cols[c] = np.concatenate([p.pop(c) for p in parts])
    codes = np.concatenate([p.pop("codes") for p in parts])
    for i, f in enumerate(_Categories.FIELDS):
        cols[f] = pd.Categorical.from_codes(codes[:, i], categories=list(cats.values[f]))
    del codes
    cols["start_syscnt"] = cols["start_syscnt"].astype(np.uint64, copy=False)
    cols["end_syscnt"] = cols["end_syscnt"].astype(np.uint64, copy=False)
    return pd.DataFrame({c: cols.pop(c) for c in TRUTH_COLUMNS}, copy=False)

"""The simulator's entry point: ``run(target, devices=..., iterations=...) -> SimResult``.

One host thread per device sets the device up, loads the model (static workloads) and runs the
iterations; each iteration launches its work (``aclmdlExecute`` or the ``aclnn*`` calls) and
ends in ``aclrtSynchronizeStream``, which returns when the device is done.  The device runs the
tasks per stream in FIFO order (:mod:`msprof_py.runtime.scheduler`); with several devices the
HCCL notify waits couple their timelines.  Durations get seeded multiplicative jitter (lognormal,
sigma 0.02); everything random comes from ``numpy.random.default_rng(seed)``.

The simulator reports through ``hooks`` (host records in batches, device STARS logs and ts_track
records) and returns the truth: one row per executed device task and one per iteration.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from msprof_py.errors import WorkloadError
from msprof_py.raw import api_event, stars_soc, task_track, ts_track
from msprof_py.raw.common import LEVEL_ACL, LEVEL_RUNTIME, tile_records
from msprof_py.runtime import apis, ge, records, rts
from msprof_py.runtime.apis import Names
from msprof_py.runtime.clock import SimClock
from msprof_py.runtime.cost import TuneChoice
from msprof_py.runtime.device import ATLAS_A2, DeviceSpec
from msprof_py.runtime.graph import Graph
from msprof_py.runtime.hooks import NullHooks, ProfilerHooks
from msprof_py.runtime.program import PATCH_INDEX, PATCH_TASK, Program
from msprof_py.runtime.records import HostLog
from msprof_py.runtime.scheduler import plan_segments, schedule
from msprof_py.runtime.workloads import Workload, get_workload

JITTER_SIGMA = 0.02
STEP_GAP_SIGMA = 0.05
CHUNK_TASKS = 1 << 17  # records are built and reported this many device tasks at a time
SET_DEVICE_NS = 1_200_000  # aclrtSetDevice opens the device: ~1.2 ms
DEVICE_STAGGER_NS = 37_000  # device threads start slightly apart

TRUTH_COLUMNS = ["device_id", "model_id", "index_id", "stream_id", "task_id", "batch_id", "context_id",
                 "start_sim_ns", "dur_ns", "start_syscnt", "end_syscnt", "op_name", "op_type", "task_type",
                 "host_task_type", "sqe_type"]
STEP_COLUMNS = ["device_id", "model_id", "index_id", "start_sim_ns", "end_sim_ns", "fp_sim_ns", "bp_sim_ns"]


@dataclass
class SimResult:
    spec: DeviceSpec
    clock: SimClock
    device_ids: list[int]
    pid: int
    pid_name: str
    end_sim_ns: int
    truth: pd.DataFrame  # one row per executed device task (TRUTH_COLUMNS)
    truth_steps: pd.DataFrame  # one row per iteration per device (STEP_COLUMNS); -1 = no FP/BP


def resolve(target: str | Workload | Graph) -> Workload:
    """A workload name, a :class:`Workload`, or a :class:`Graph` (run as a static model)."""
    if isinstance(target, Workload):
        return target
    if isinstance(target, Graph):
        training = any(op.phase in ("fp", "bp") for op in target.ops)
        return Workload(target.name, target, "static", training, 100.0, "user graph")
    if isinstance(target, str):
        return get_workload(target)
    raise WorkloadError(f"cannot run {target!r}: expected a workload name, a Workload or a Graph")


def run(target: str | Workload | Graph, *, devices: int = 1, iterations: int = 1, seed: int = 0,
        hooks: ProfilerHooks | None = None, clock: SimClock | None = None, spec: DeviceSpec = ATLAS_A2,
        tuning: dict[str, TuneChoice] | None = None) -> SimResult:
    """Simulate ``iterations`` of ``target`` on ``devices`` devices, reporting through ``hooks``."""
    if devices < 1 or iterations < 1:
        raise WorkloadError(f"devices and iterations must be >= 1 (got {devices}, {iterations})")
    wl = resolve(target)
    if not wl.graph.ops:
        raise WorkloadError(f"workload {wl.name!r} has no ops")
    hooks = hooks or NullHooks()
    clock = clock or SimClock.create(spec.host_cpu_frequency_mhz, spec.hwts_frequency_mhz, fixed=False)
    return _Run(wl, devices, iterations, seed, hooks, clock, spec, tuning).go()


class _Run:
    def __init__(self, wl: Workload, devices: int, iterations: int, seed: int, hooks: ProfilerHooks,
                 clock: SimClock, spec: DeviceSpec, tuning: dict[str, TuneChoice] | None) -> None:
        self.wl, self.D, self.K, self.seed = wl, devices, iterations, seed
        self.hooks, self.clock, self.spec, self.tuning = hooks, clock, spec, tuning
        self.on = bool(hooks.enabled)
        self.names = Names(hooks)
        self.pid = 10000 + seed % 50000
        self.threads = [self.pid + 1 + d for d in range(devices)]
        self.log = HostLog()
        self.rng = np.random.default_rng(seed)

    # ------------------------------------------------------------------ setup
    def go(self) -> SimResult:
        if self.on:
            self.names.register_record_types()
        progs, ready = self._setup()
        start, end, h0, sync_end = self._timeline(progs, ready)
        truth, steps = self._emit(progs, start, end, h0, sync_end)
        end_ns = self._teardown(progs, sync_end)
        if self.on:
            self.log.flush(self.hooks, self.clock)
        return SimResult(self.spec, self.clock, list(range(self.D)), self.pid, "python3", int(end_ns), truth, steps)

    def _acl(self, d: int, name: str, begin: int, end: int) -> None:
        if self.on:
            self.log.add(api_event.FILE_TAG, True, records.api(LEVEL_ACL, self.names.acl(name), self.threads[d],
                                                               begin, end, 0))

    def _rt(self, d: int, name: str, begin: int, end: int) -> None:
        if self.on:
            self.log.add(api_event.FILE_TAG, True, records.api(LEVEL_RUNTIME, self.names.rt_api(name),
                                                               self.threads[d], begin, end, 0))

    def _setup(self) -> tuple[list[Program], np.ndarray]:
        """aclInit / aclrtSetDevice / aclrtCreateStream (/ aclmdlLoadFromFile) per device thread."""
        progs: list[Program] = []
        ready = np.zeros(self.D, np.int64)
        self._acl(0, "aclInit", 10_000, 60_000)
        for d in range(self.D):
            t = 80_000 + d * DEVICE_STAGGER_NS
            self._acl(d, "aclrtSetDevice", t, t + SET_DEVICE_NS)
            self._rt(d, "SetDevice", t + apis.US, t + SET_DEVICE_NS - apis.US)
            t += SET_DEVICE_NS + 5 * apis.US
            self._acl(d, "aclrtCreateStream", t, t + 20 * apis.US)
            self._rt(d, "StreamCreate", t + apis.US, t + 19 * apis.US)
            t += 30 * apis.US
            if self.wl.mode == "static":
                prog, load_recs, t = ge.build_static(self.wl, d, self.D, self.threads[d], t, self.spec, self.tuning,
                                                     self.names)
                if self.on:
                    self.log.extend(load_recs)
            else:
                prog = ge.build_single_op(self.wl, d, self.threads[d], self.spec, self.tuning, self.names)
            progs.append(prog)
            ready[d] = t + 50 * apis.US
        return progs, ready

    def _teardown(self, progs: list[Program], sync_end: np.ndarray) -> int:
        last = 0
        for d, prog in enumerate(progs):
            t = int(sync_end[d, -1]) + 100 * apis.US
            if prog.mode == "static":
                self._acl(d, "aclmdlUnload", t, t + 300 * apis.US)
                t += 310 * apis.US
            self._acl(d, "aclrtDestroyStream", t, t + 15 * apis.US)
            t += 20 * apis.US
            self._acl(d, "aclrtResetDevice", t, t + 800 * apis.US)
            last = max(last, t + 800 * apis.US)
        self._acl(0, "aclFinalize", last + 10 * apis.US, last + 200 * apis.US)
        return last + 250 * apis.US

    # ------------------------------------------------------------------ device timeline
    def _timeline(self, progs: list[Program], ready: np.ndarray):
        """Start/end of every task ``(D, K, T)``, host iteration starts ``h0 (D, K)`` and sync ends."""
        tm = progs[0].tasks
        T, K, D = len(tm), self.K, self.D
        for p in progs[1:]:
            if len(p.tasks) != T or p.tasks.stream != tm.stream:
                raise AssertionError("data-parallel programs differ in structure")
        segs = plan_segments(np.array(tm.stream), tm.deps, tm.barriers)
        gap = int(self.spec.task_schedule_gap_us * 1000)
        base = np.array([p.tasks.dur_ns for p in progs], dtype=np.float64)  # (D, T)
        jit = self.rng.lognormal(0.0, JITTER_SIGMA, size=(D, K, T))
        dur = np.maximum(1, np.rint(base[:, None, :] * jit)).astype(np.int64)
        del jit
        step_gap = (self.wl.step_gap_us * 1000 * self.rng.lognormal(0.0, STEP_GAP_SIGMA, size=(D, K))).astype(np.int64)
        submit = np.array(tm.submit_ns, dtype=np.int64)
        H = np.array([p.launch_end_ns for p in progs], dtype=np.int64)
        start = np.empty((D, K, T), np.int64)
        end = np.empty((D, K, T), np.int64)
        h0 = np.empty((D, K), np.int64)
        sync_end = np.empty((D, K), np.int64)
        if D == 1 or not tm.barriers:
            for d in range(D):  # rows = iterations, times relative to each iteration's h0
                st, en = schedule(np.broadcast_to(submit, (K, T)), dur[d], segs, gap)
                length = np.maximum(H[d], en.max(axis=1)) + apis.SYNC_RETURN_NS
                h0[d] = ready[d] + np.concatenate(([0], np.cumsum(length + step_gap[d])[:-1]))
                start[d] = st + h0[d][:, None]
                end[d] = en + h0[d][:, None]
                sync_end[d] = h0[d] + length
        else:
            h = ready.copy()
            for k in range(K):  # rows = devices, absolute times (the barriers couple them)
                st, en = schedule(h[:, None] + submit[None, :], dur[:, k, :], segs, gap)
                start[:, k], end[:, k] = st, en
                h0[:, k] = h
                sync_end[:, k] = np.maximum(h + H, en.max(axis=1)) + apis.SYNC_RETURN_NS
                h = sync_end[:, k] + step_gap[:, k]
        return start, end, h0, sync_end

    # ------------------------------------------------------------------ records
    def _task_ids(self, prog: Program) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int, int, int]]]:
        """Task and batch ids ``(K, T)`` and the flips ``(k, template index, stream, flip number)``."""
        tm = prog.tasks
        T, K = len(tm), self.K
        tid = np.broadcast_to(np.array(tm.task_id, np.int64), (K, T)).copy()
        bat = np.broadcast_to(np.array(tm.batch_id, np.int64), (K, T)).copy()
        fresh = np.array(tm.fresh)
        stream = np.array(tm.stream)
        flips = []
        for s in np.unique(stream[fresh]):
            idx = np.flatnonzero(fresh & (stream == s))
            F = len(idx)
            n = np.arange(K, dtype=np.int64)[:, None] * F + np.arange(F)[None, :]
            t_, b_ = rts.split_counter(rts.task_counters(n))
            tid[:, idx] = t_
            bat[:, idx] = b_
            pos, m = rts.flip_positions(0, K * F)
            for p, mm in zip(pos.tolist(), m.tolist()):
                flips.append((p // F, int(idx[p % F]), int(s), mm))
        return tid, bat, flips

    def _emit(self, progs, start, end, h0, sync_end):
        D, K = self.D, self.K
        T = len(progs[0].tasks)
        per_chunk = max(1, CHUNK_TASKS // max(T, 1))
        truth_parts: list[dict] = []
        step_parts: list[dict] = []
        cats = _Categories()
        cnt = np.zeros(D, np.int64)
        for d, prog in enumerate(progs):
            tid, bat, flips = self._task_ids(prog)
            codes = cats.codes(prog)
            ctx = np.array(prog.tasks.context_id, np.int64)
            stream = np.array(prog.tasks.stream, np.int64)
            sqe = np.array([stars_soc.SQE_TYPE_IDS[i.sqe_type] for i in prog.tasks.info], np.uint16)
            task_ts = _task_track_offsets(prog)
            flip_by_k: dict[int, list] = {}
            for f in flips:
                flip_by_k.setdefault(f[0], []).append(f)
            for k0 in range(0, K, per_chunk):
                k1 = min(K, k0 + per_chunk)
                st, en = start[d, k0:k1], end[d, k0:k1]
                kf = [f for k in range(k0, k1) for f in flip_by_k.get(k, ())]
                truth_parts.append(self._truth(d, prog, k0, k1, st, en, tid[k0:k1], bat[k0:k1], ctx, stream, codes))
                steps = self._steps(d, prog, k0, k1, st, en, tid[k0:k1])
                if steps is not None:
                    step_parts.append(steps)
                if self.on:
                    cnt[d] = self._device_records(d, st, en, stream, tid[k0:k1], sqe, cnt[d])
                    self._ts_track(d, prog, steps, kf, start[d], tid)
                    self._host_iterations(d, prog, k0, k1, h0[d], sync_end[d], tid, bat, kf, task_ts)
                    self.log.flush(self.hooks, self.clock)
        truth = _truth_frame(truth_parts, cats)
        steps = pd.DataFrame({c: np.concatenate([p[c] for p in step_parts]) if step_parts else np.zeros(0, np.int64)
                              for c in STEP_COLUMNS})
        return truth, steps

    def _truth(self, d, prog, k0, k1, st, en, tid, bat, ctx, stream, codes) -> dict:
        nk, T = st.shape
        index = np.repeat(np.arange(k0 + 1, k1 + 1, dtype=np.int64), T) if prog.mode == "static" \
            else np.zeros(nk * T, np.int64)
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

    def _steps(self, d, prog, k0, k1, st, en, tid) -> dict | None:
        if prog.mode != "static":
            return None
        tm = prog.tasks
        model = np.array(tm.model_task)
        phase = np.array(tm.phase)
        fp = np.flatnonzero(model & (phase == "fp"))
        bp = np.flatnonzero(model & (phase == "bp"))
        ar = np.flatnonzero(model & (phase == "allreduce"))
        mi = np.flatnonzero(model)
        nk = k1 - k0
        m_start = st[:, mi].min(axis=1)
        m_end = en[:, mi].max(axis=1)
        training = prog.training and len(fp) and len(bp)
        out = {
            "device_id": np.full(nk, d, np.int64), "model_id": np.full(nk, prog.model_id, np.int64),
            "index_id": np.arange(k0 + 1, k1 + 1, dtype=np.int64), "start_sim_ns": m_start, "end_sim_ns": m_end,
            "fp_sim_ns": st[:, fp[0]] if training else np.full(nk, -1, np.int64),
            "bp_sim_ns": en[:, bp[-1]] if training else np.full(nk, -1, np.int64),
            # for the ts_track records
            "_training": bool(training), "_first_tid": tid[:, mi[0]], "_last_tid": tid[:, mi[-1]],
            "_ar": (st[:, ar[0]], en[:, ar[-1]]) if len(ar) else None, "_stream": prog.main_stream,
        }
        return out

    def _device_records(self, d, st, en, stream, tid, sqe_t, cnt0: int) -> int:
        """STARS ACSQ start/end logs of a chunk of iterations, in time order."""
        nk, T = st.shape
        n = nk * T
        sqe = np.tile(sqe_t, nk)
        ts = np.concatenate([self.clock.syscnt(st.ravel()), self.clock.syscnt(en.ravel())])
        is_end = np.repeat(np.array([0, 1], np.uint16), n)
        order = np.lexsort((1 - is_end, ts))  # by time; at equal ticks an end before a start
        recs = np.zeros(2 * n, stars_soc.DTYPE)
        func = is_end[order]
        seq = (cnt0 + np.arange(2 * n)) % 16
        recs["word0"] = stars_soc.pack_word0(func, seq, np.concatenate([sqe, sqe])[order])
        s2 = np.tile(stream, nk)
        recs["stream_id"] = np.concatenate([s2, s2])[order]
        t2 = tid.ravel()
        recs["task_id"] = np.concatenate([t2, t2])[order]
        recs["timestamp"] = ts[order]
        recs["acc_id"] = (recs["stream_id"] & 0x3F) << 6
        self.hooks.report_device(d, stars_soc.FILE_TAG, recs)
        return cnt0 + 2 * n

    def _ts_track(self, d, prog, steps, flips, start_d, tid) -> None:
        parts = []
        if steps is not None:
            tags: list[tuple[int, np.ndarray, np.ndarray]] = [(ts_track.TAG_MODEL_START, steps["start_sim_ns"],
                                                               steps["_first_tid"])]
            if steps["_training"]:
                tags.append((ts_track.TAG_FP, steps["fp_sim_ns"], steps["_first_tid"]))
                tags.append((ts_track.TAG_BP, steps["bp_sim_ns"], steps["_last_tid"]))
                if steps["_ar"] is not None:
                    tags.append((ts_track.TAG_ALL_REDUCE_BASE, steps["_ar"][0], steps["_last_tid"]))
                    tags.append((ts_track.TAG_ALL_REDUCE_BASE + 1, steps["_ar"][1], steps["_last_tid"]))
                tags.append((ts_track.TAG_ITER_END, steps["end_sim_ns"], steps["_last_tid"]))
            tags.append((ts_track.TAG_MODEL_END, steps["end_sim_ns"] + 20, steps["_last_tid"]))
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
            r["timestamp"] = self.clock.syscnt(np.array([start_d[k, j] for k, j, _, _ in flips]))
            r["stream_id"] = [s & ts_track.STREAM_ID_MASK for _, _, s, _ in flips]
            r["flip_num"] = [m for *_, m in flips]
            r["task_id"] = 0
            parts.append(r.view(np.uint8).reshape(-1, ts_track.RECORD_SIZE))
        if parts:
            # raw 40-byte rows of mixed kinds, in time order, viewed through the common prefix
            raw = np.ascontiguousarray(np.concatenate(parts))
            stamps = raw[:, 8:16].copy().view("<u8").ravel()
            raw = np.ascontiguousarray(raw[np.argsort(stamps, kind="stable")])
            self.hooks.report_device(d, ts_track.FILE_TAG, raw.view(ts_track.RAW_DTYPE).ravel())

    def _host_iterations(self, d, prog, k0, k1, h0, sync_end, tid, bat, flips, task_ts) -> None:
        nk = k1 - k0
        base = h0[k0:k1]
        thread = self.threads[d]
        for rows in prog.host:
            m = len(rows.records)
            recs = tile_records(rows.records, nk)
            shift = np.repeat(base, m).astype(np.uint64)
            recs["timestamp"] += shift
            if rows.tag == api_event.FILE_TAG:
                is_api = recs["end"] != np.uint64(0xFFFFFFFFFFFFFFFF)
                recs["end"][is_api] += shift[is_api]
            if rows.patch == PATCH_TASK:
                ref = np.tile(rows.task_ref, nk)
                kk = np.repeat(np.arange(k0, k1), m)
                recs["task_id"] = tid[kk, ref]
                recs["batch_id"] = bat[kk, ref]
            elif rows.patch == PATCH_INDEX:
                recs["data_len"] = np.repeat(np.arange(k0 + 1, k1 + 1), m)
            self.log.add(rows.tag, rows.aging, recs)
        # the synchronize that ends every iteration
        b = base + prog.launch_end_ns
        e = sync_end[k0:k1]
        self.log.add(api_event.FILE_TAG, True, records.api(
            LEVEL_ACL, self.names.acl("aclrtSynchronizeStream"), thread, b, e, 0))
        self.log.add(api_event.FILE_TAG, True, records.api(
            LEVEL_RUNTIME, self.names.rt_api("StreamSynchronize"), thread, b + 500, e - 500, 0))
        if flips:
            ts = np.array([h0[k] + task_ts[j] - 100 for k, j, _, _ in flips], np.int64)
            self.log.add(task_track.FILE_TAG, True, records.task_tracks(
                thread, ts, d, np.array([s for _, _, s, _ in flips]), 0, np.array([m for *_, m in flips]),
                self.names.rt_task("FLIP_TASK"), self.names.h("FLIP_TASK"), 0))


class _Categories:
    """String columns of the truth as categorical codes (op names etc. are few, tasks are many)."""

    FIELDS = ("op_name", "op_type", "task_type", "host_task_type", "sqe_type")

    def __init__(self) -> None:
        self.values: dict[str, dict[str, int]] = {f: {} for f in self.FIELDS}

    def codes(self, prog: Program) -> np.ndarray:
        out = np.zeros((len(prog.tasks), len(self.FIELDS)), np.int32)
        for j, info in enumerate(prog.tasks.info):
            for f_i, f in enumerate(self.FIELDS):
                table = self.values[f]
                out[j, f_i] = table.setdefault(getattr(info, f), len(table))
        return out


def _task_track_offsets(prog: Program) -> np.ndarray:
    """Host task_track time offset of every fresh template task."""
    out = np.zeros(len(prog.tasks), np.int64)
    for rows in prog.host:
        if rows.patch == PATCH_TASK:
            out[rows.task_ref] = rows.records["timestamp"].astype(np.int64)
    return out


def _truth_frame(parts: list[dict], cats: _Categories) -> pd.DataFrame:
    if not parts:
        return pd.DataFrame(columns=TRUTH_COLUMNS)
    cols = {}
    for c in TRUTH_COLUMNS:
        if c in _Categories.FIELDS:
            continue
        cols[c] = np.concatenate([p[c] for p in parts])
    codes = np.concatenate([p["codes"] for p in parts])
    for i, f in enumerate(_Categories.FIELDS):
        cats_list = list(cats.values[f])
        cols[f] = pd.Categorical.from_codes(codes[:, i], categories=cats_list)
    cols["start_syscnt"] = cols["start_syscnt"].astype(np.uint64)
    cols["end_syscnt"] = cols["end_syscnt"].astype(np.uint64)
    return pd.DataFrame(cols, columns=TRUTH_COLUMNS)

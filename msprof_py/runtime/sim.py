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
from msprof_py.runtime import apis, ge, limits
from msprof_py.runtime.apis import Names
from msprof_py.runtime.clock import SimClock
from msprof_py.runtime.cost import TuneChoice
from msprof_py.runtime.device import ATLAS_A2, DeviceSpec
from msprof_py.runtime.emit import STEP_COLUMNS, TRUTH_COLUMNS, Emitter
from msprof_py.runtime.graph import Graph
from msprof_py.runtime.hooks import NullHooks, ProfilerHooks
from msprof_py.runtime.program import Program
from msprof_py.runtime.scheduler import plan_segments, schedule
from msprof_py.runtime.workloads import Workload, get_workload

JITTER_SIGMA = 0.02
STEP_GAP_SIGMA = 0.05
HOST_SPEED_SIGMA = 0.03  # per-iteration host speed: all of an iteration's host costs scale together
SET_DEVICE_NS = 1_200_000  # aclrtSetDevice opens the device: ~1.2 ms
DEVICE_STAGGER_NS = 37_000  # device threads start slightly apart

__all__ = ["SimResult", "run", "resolve", "pid_for_seed", "timeline", "TRUTH_COLUMNS", "STEP_COLUMNS"]


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
        tuning: dict[str, TuneChoice] | None = None, task_id_start: int = 0, fp_point: str | None = None,
        bp_point: str | None = None) -> SimResult:
    """Simulate ``iterations`` of ``target`` on ``devices`` devices, reporting through ``hooks``.

    Args:
        tuning: op name -> :class:`TuneChoice` (the AOE tuner's choices); others run untuned.
        task_id_start: the task counter the user stream starts from, as if the process had used it
            before profiling began (a value near 65535 makes even short runs wrap; default 0).
        fp_point, bp_point: op names for the FP / BP step-trace tags (msprof's profiling_options);
            unknown names fall back to the first forward / last backward op.
    """
    if devices < 1 or iterations < 1:
        raise WorkloadError(f"devices and iterations must be >= 1 (got {devices}, {iterations})")
    if not 0 <= seed < 2**64:  # numpy's default_rng takes a non-negative seed
        raise WorkloadError(f"seed must be an integer in 0 .. 2^64-1 (got {seed})")
    wl = resolve(target)
    if not wl.graph.ops:
        raise WorkloadError(f"workload {wl.name!r} has no ops")
    limits.check_graph(wl.graph)  # refuse what cannot fit before any work (the run's size: _timeline)
    hooks = hooks or NullHooks()
    clock = clock or SimClock.create(spec.host_cpu_frequency_mhz, spec.hwts_frequency_mhz, fixed=False)
    return _Run(wl, devices, iterations, seed, hooks, clock, spec, tuning, task_id_start).go(fp_point, bp_point)


def pid_for_seed(seed: int) -> int:
    """The simulated process id: deterministic from the seed."""
    return 10000 + seed % 50000


class _Run:
    def __init__(self, wl: Workload, devices: int, iterations: int, seed: int, hooks: ProfilerHooks,
                 clock: SimClock, spec: DeviceSpec, tuning: dict[str, TuneChoice] | None, task_id_start: int,
                 *, device_ids: list[int] | None = None, pid: int | None = None,
                 plan_comm=None, model_id: int | None = None) -> None:
        """``device_ids`` (default ``0..devices-1``), ``pid``, ``plan_comm`` and ``model_id``: one
        rank of a cluster job (:mod:`msprof_py.runtime.cluster`), which drives the pieces itself."""
        self.wl, self.D, self.K, self.seed = wl, devices, iterations, seed
        self.hooks, self.clock, self.spec, self.tuning = hooks, clock, spec, tuning
        self.on = bool(hooks.enabled)
        self.names = Names(hooks)
        self.pid = pid_for_seed(seed) if pid is None else pid
        self.dev = list(range(devices)) if device_ids is None else list(device_ids)
        self.threads = [self.pid + 1 + d for d in range(devices)]
        self.plan_comm, self.model_id = plan_comm, model_id
        self.em = Emitter(hooks, clock, self.names, dict(zip(self.dev, self.threads)), task_id_start, spec)
        self.rng = np.random.default_rng(seed)

    # ------------------------------------------------------------------ setup
    def go(self, fp_point: str | None = None, bp_point: str | None = None) -> SimResult:
        if self.on:
            self.names.register_record_types()
        progs, ready = self._setup()
        return self.emit(progs, self._timeline(progs, ready), fp_point, bp_point)

    def emit(self, progs: list[Program], tl: tuple, fp_point: str | None = None, bp_point: str | None = None
             ) -> SimResult:
        """Records and truth of scheduled iterations (``tl`` from :func:`timeline`, rows = this run's devices)."""
        start, end, h0, sync_end, speed, H = tl
        for d, prog in enumerate(progs):
            dev = self.dev[d]
            self.em.block(dev, prog, start[d], end[d], h0[d], speed[d], fp_point, bp_point)
            self.em.sync(dev, h0[d] + H[d], sync_end[d])
        end_ns = self._teardown(progs, sync_end)
        truth, steps = self.em.finish()
        return SimResult(self.spec, self.clock, list(self.dev), self.pid, "python3", int(end_ns), truth, steps)

    def _acl(self, d: int, name: str, begin: int, end: int) -> None:
        self.em.acl(self.dev[d], name, begin, end)

    def _rt(self, d: int, name: str, begin: int, end: int) -> None:
        self.em.rt(self.dev[d], name, begin, end)

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
                prog, load_recs, t = ge.build_static(self.wl, self.dev[d], self.D, self.threads[d], t, self.spec,
                                                     self.tuning, self.names, model_id=self.model_id,
                                                     plan_comm=self.plan_comm)
                for tag, aging, recs in load_recs:
                    self.em.add(tag, aging, recs)
            else:
                prog = ge.build_single_op(self.wl, self.dev[d], self.threads[d], self.spec, self.tuning, self.names)
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

    def _slow_iterations(self, tm, K: int) -> np.ndarray | None:
        """``(K, T)`` duration factors from op attr ``slow_iterations`` = ``{"3": 2.0}`` (1-based
        iteration -> factor): an op that is slower in some iterations (a documented fault for the
        unbalanced-iterations advice); None when no op has it."""
        slow = {op.name: op.attrs["slow_iterations"] for op in self.wl.graph.ops if op.attrs.get("slow_iterations")}
        if not slow:
            return None
        f = np.ones((K, len(tm)))
        for i, info in enumerate(tm.info):
            for k, x in slow.get(info.op_name, {}).items():
                try:
                    k, x = int(k), float(x)
                except (TypeError, ValueError):
                    raise WorkloadError(f"op {info.op_name}: slow_iterations wants {{iteration: factor}}, "
                                        f"got {k!r}: {x!r}") from None
                if 1 <= k <= K and x > 0:  # iterations beyond the run are ignored
                    f[k - 1, i] = x
        return f

    # ------------------------------------------------------------------ device timeline
    def _timeline(self, progs: list[Program], ready: np.ndarray):
        limits.check_run(self.wl.name, self.D, self.K, len(progs[0].tasks))  # before the (D, K, T) arrays
        return timeline(progs, ready, self.K, self.rng, self.spec, self.wl.step_gap_us,
                        iter_dur_scale=self._slow_iterations(progs[0].tasks, self.K))


def timeline(progs: list[Program], ready: np.ndarray, K: int, rng: np.random.Generator, spec: DeviceSpec,
             step_gap_us: float, barrier_groups: dict[int, np.ndarray] | None = None,
             dur_scale: np.ndarray | None = None, gap_scale: np.ndarray | None = None, barrier_jitter: bool = True,
             iter_dur_scale: np.ndarray | None = None):
    """Start/end of every task ``(D, K, T)``, host iteration starts ``h0 (D, K)``, sync ends, the
    host speed factors ``(D, K)`` and the launch ends ``(D, K)`` (offsets from ``h0``).

    Cluster runs (:mod:`msprof_py.runtime.cluster`) pass ``barrier_groups`` (template index ->
    ``(D,)`` communicator number per device), ``dur_scale`` ``(D, T)`` (injected slow ranks) and
    ``gap_scale`` ``(D,)`` (host work between iterations, injected straggler hosts) and
    ``barrier_jitter=False``: a notify wait ends when the peers' records arrive, the same instant on
    every member, so its post-barrier time is not jittered per device.
    ``iter_dur_scale`` ``(K, T)``: per-iteration duration factors (op attr ``slow_iterations``).
    """
    tm = progs[0].tasks
    T, D = len(tm), len(progs)
    for p in progs[1:]:
        if len(p.tasks) != T or p.tasks.stream != tm.stream:
            raise AssertionError("data-parallel programs differ in structure")
    segs, gap, dur, step_gap, speed, submit, H = prepare(progs, K, rng, spec, step_gap_us, dur_scale, gap_scale,
                                                         barrier_jitter, iter_dur_scale)
    start = np.empty((D, K, T), np.int64)
    end = np.empty((D, K, T), np.int64)
    h0 = np.empty((D, K), np.int64)
    sync_end = np.empty((D, K), np.int64)
    if D == 1 or not tm.barriers:
        for d in range(D):  # rows = iterations, times relative to each iteration's h0
            st, en = schedule(submit[d], dur[d], segs, gap)
            length = np.maximum(H[d], en.max(axis=1)) + apis.SYNC_RETURN_NS
            h0[d] = ready[d] + np.concatenate(([0], np.cumsum(length + step_gap[d])[:-1]))
            start[d] = st + h0[d][:, None]
            end[d] = en + h0[d][:, None]
            sync_end[d] = h0[d] + length
    else:
        h = ready.copy()
        for k in range(K):  # rows = devices, absolute times (the barriers couple them)
            st, en = schedule(h[:, None] + submit[:, k, :], dur[:, k, :], segs, gap, barrier_groups=barrier_groups)
            start[:, k], end[:, k] = st, en
            h0[:, k] = h
            sync_end[:, k] = np.maximum(h + H[:, k], en.max(axis=1)) + apis.SYNC_RETURN_NS
            h = sync_end[:, k] + step_gap[:, k]
    return start, end, h0, sync_end, speed, H


def prepare(progs: list[Program], K: int, rng: np.random.Generator, spec: DeviceSpec, step_gap_us: float,
            dur_scale: np.ndarray | None = None, gap_scale: np.ndarray | None = None, barrier_jitter: bool = True,
            iter_dur_scale: np.ndarray | None = None):
    """What :func:`timeline` schedules, for programs of one structure (``D`` rows): the template's
    segments, the task gap (ns), jittered durations ``(D, K, T)``, host work between iterations
    ``(D, K)``, host speed factors ``(D, K)``, submit offsets ``(D, K, T)`` and launch ends ``(D, K)``."""
    tm = progs[0].tasks
    T, D = len(tm), len(progs)
    segs = plan_segments(np.array(tm.stream), tm.deps, tm.barriers)
    gap = int(spec.task_schedule_gap_us * 1000)
    base = np.array([p.tasks.dur_ns for p in progs], dtype=np.float64)  # (D, T)
    if dur_scale is not None:
        base = base * dur_scale
    jit = rng.lognormal(0.0, JITTER_SIGMA, size=(D, K, T))
    if iter_dur_scale is not None:
        jit = jit * iter_dur_scale[None]
    dur = np.maximum(1, np.rint(base[:, None, :] * jit)).astype(np.int64)
    del jit
    if not barrier_jitter and tm.barriers:
        b = np.array(sorted(tm.barriers))
        dur[:, :, b] = np.rint(base[:, None, b]).astype(np.int64)
    step_gap = step_gap_us * 1000 * rng.lognormal(0.0, STEP_GAP_SIGMA, size=(D, K))
    if gap_scale is not None:
        step_gap = step_gap * np.asarray(gap_scale, np.float64)[:, None]
    step_gap = step_gap.astype(np.int64)
    speed = rng.lognormal(0.0, HOST_SPEED_SIGMA, size=(D, K))
    # host offsets of an iteration scale together (order and nesting are kept)
    submit = np.rint(np.array(tm.submit_ns, dtype=np.float64)[None, None, :] * speed[:, :, None]).astype(np.int64)
    H = np.rint(np.array([p.launch_end_ns for p in progs], dtype=np.float64)[:, None] * speed).astype(np.int64)
    return segs, gap, dur, step_gap, speed, submit, H

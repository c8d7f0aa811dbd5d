"""The simulated process behind :mod:`msprof_py.runtime.acl`: its state (host thread clock,
devices, streams' queues, loaded models), start and end (``aclInit`` / ``aclFinalize``) and the
profiling switch the collector flips (:func:`install_hooks`).

There is one process at a time, :func:`current`; installing hooks or a new ``init()`` after
``finalize()`` replaces it with a fresh one (new pid, clock and random stream).  Times are
simulator nanoseconds on the host thread's clock.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from msprof_py.errors import WorkloadError
from msprof_py.runtime.apis import Names
from msprof_py.runtime.clock import SimClock
from msprof_py.runtime.cost import TuneChoice
from msprof_py.runtime.device import ATLAS_A2, DeviceSpec
from msprof_py.runtime.emit import Emitter
from msprof_py.runtime.hooks import NullHooks, ProfilerHooks
from msprof_py.runtime.program import Program
from msprof_py.runtime.scheduler import plan_segments, schedule
from msprof_py.runtime.sim import JITTER_SIGMA, SimResult, pid_for_seed
from msprof_py.runtime.tx import TxRecorder

if TYPE_CHECKING:
    from msprof_py.runtime.acl.models import Model


@dataclass
class DeviceQueues:
    """One set device: when each of its streams is free again, and the streams the script created."""
    free: dict[int, int] = field(default_factory=dict)  # stream -> earliest next start (ns)
    streams: list[int] = field(default_factory=list)


class Process:
    """The simulated process: its pid and host thread, clock (``t``, sim ns), devices, models,
    single-operator programs already built, and the recorders its calls report through."""

    def __init__(self, hooks: ProfilerHooks, clock: SimClock | None, spec: DeviceSpec, seed: int,
                 tuning: dict[str, TuneChoice] | None = None) -> None:
        self.hooks, self.spec, self.seed, self.tuning = hooks, spec, seed, tuning
        self.clock = clock or SimClock.create(spec.host_cpu_frequency_mhz, spec.hwts_frequency_mhz, fixed=False)
        self.names = Names(hooks)
        if self.names.on:
            self.names.register_record_types()
        self.pid = pid_for_seed(seed)
        self.thread = self.pid  # the script's main thread
        self.em = Emitter(hooks, self.clock, self.names, _AllThreads(self.thread), spec=spec)
        self.rng = np.random.default_rng(seed)
        self.t = 0  # the host thread's clock (sim ns)
        self.inited = False
        self.device: int | None = None
        self.devices: dict[int, DeviceQueues] = {}
        self.models: dict[int, Model] = {}
        self.next_model = 1
        self.op_cache: dict[tuple, Program] = {}
        self.result: SimResult | None = None
        self.gap = int(spec.task_schedule_gap_us * 1000)
        self.tx = TxRecorder(self.pid, self.thread)

    # -- helpers
    def dev(self) -> tuple[int, DeviceQueues]:
        """The current device and its queues (``init()`` first if needed); misuse is a WorkloadError."""
        if self.result is not None:
            raise WorkloadError("acl: the runtime was finalized; call acl.init() to start again")
        if not self.inited:
            init()
        if self.device is None:
            raise WorkloadError("acl: no device set: call acl.rt.set_device(id) first")
        return self.device, self.devices[self.device]

    def run_block(self, d: int, devstate: DeviceQueues, prog: Program) -> None:
        """Launch one iteration of ``prog`` now: schedule after the queued work, report, advance the host."""
        tm = prog.tasks
        dur = np.maximum(1, np.rint(np.array(tm.dur_ns) * self.rng.lognormal(0.0, JITTER_SIGMA, len(tm))))
        submit = self.t + np.array(tm.submit_ns, np.int64)
        segs = plan_segments(np.array(tm.stream), tm.deps, set())  # no peers: barriers are plain waits
        free = {s: np.array([v], np.int64) for s, v in devstate.free.items()}
        st, en = schedule(submit[None, :], dur.astype(np.int64)[None, :], segs, self.gap, free)
        for s in set(tm.stream):
            on = np.array(tm.stream) == s
            devstate.free[s] = max(devstate.free.get(s, 0), int(en[0, on].max()) + self.gap)
        self.em.block(d, prog, st, en, np.array([self.t], np.int64))
        self.t += prog.launch_end_ns


class _AllThreads(dict):
    """Every device is driven from the script's one thread."""

    def __init__(self, thread: int) -> None:
        super().__init__()
        self.thread = thread

    def __missing__(self, key: int) -> int:
        return self.thread


_state = Process(NullHooks(), None, ATLAS_A2, 0)


def current() -> Process:
    """The simulated process the next call acts on."""
    return _state


# ---------------------------------------------------------------------- profiling switch
def install_hooks(hooks: ProfilerHooks, clock: SimClock | None = None, spec: DeviceSpec = ATLAS_A2, seed: int = 0,
                  tuning: dict[str, TuneChoice] | None = None) -> None:
    """Start a fresh simulated process whose calls report through ``hooks`` (the collector's)."""
    global _state
    _state = Process(hooks, clock, spec, seed, tuning)


def uninstall_hooks() -> None:
    """Back to profiling off (a fresh process with :class:`NullHooks`)."""
    global _state
    _state = Process(NullHooks(), None, ATLAS_A2, 0)


def result() -> SimResult | None:
    """The :class:`SimResult` of the last :func:`finalize` (None before)."""
    return _state.result


# ---------------------------------------------------------------------- process
def init() -> None:
    """``aclInit``."""
    s = current()
    if s.result is not None:  # a new process after finalize
        install_hooks(s.hooks, s.clock, s.spec, s.seed, s.tuning)
        s = current()
    if s.inited:
        return
    s.inited = True
    s.t = max(s.t, 10_000)
    s.em.acl(0, "aclInit", s.t, s.t + 50_000)
    s.t += 60_000


def finalize() -> SimResult:
    """``aclFinalize``: ends the simulated process; returns its :class:`SimResult` (idempotent)."""
    s = current()
    if s.result is not None:
        return s.result
    if not s.inited:
        init()
    for d in sorted(s.devices):
        busy = max(s.devices[d].free.values(), default=0)
        s.t = max(s.t, busy)
    s.em.acl(0, "aclFinalize", s.t, s.t + 190_000)
    s.t += 250_000
    truth, steps = s.em.finish()
    s.result = SimResult(s.spec, s.clock, sorted(s.devices), s.pid, "python3", int(s.t), truth, steps)
    return s.result

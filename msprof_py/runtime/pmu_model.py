"""The simulated device's PMU: task-based counters from the cost model's pipe breakdown.

For every AI Core / AI Vector / MIX task the device writes one context PMU record
(``ffts_profile.data``, msprof's 128-byte layout, :mod:`msprof_py.raw.ffts_profile`) with

* ``total_cycle`` = busy time x AI Core clock x block dim / waves, so msprof's
  ``cycles / freq / block_num * ceil(block_num / core_num)`` gives back the task's busy time
  (its duration minus the launch overhead) at the clock the task ran at;
* the 8 counters of the configured events (sample.json ``ai_core_profiling_events`` /
  ``aiv_profiling_events``), each a pipe's share of those cycles or a request count derived
  from the op's bytes (:func:`event_counts`).  Cube ops keep the cube (mac) pipe busy, element-
  wise ops the vector and MTE2 (load) pipes, as on the real chip.

The AI Core clock drops under sustained load (:func:`clock_plan`): an iteration that follows
one in which the AI Cores were busy more than ``THROTTLE_UTIL`` of the time runs at
``THROTTLE_RATIO`` of the nominal clock, which the device reports as lpmInfoConv /
lpmFreqConv frequency records (the counters use the clock in force).  Durations are not
stretched by the lower clock (the scheduler's durations stay the cost model's).
"""
from __future__ import annotations

import numpy as np

from msprof_py.raw import ffts_profile as raw, lpm_info as raw_lpm

THROTTLE_UTIL = 0.85
THROTTLE_RATIO = 11 / 12  # 1800 -> 1650 MHz, the step the real 910B captures show
ICACHE_REQ_PER_CYCLE = 0.02
ICACHE_MISS_RATE = 0.04
L2_BYTES = 192 * 1024 * 1024  # Ascend 910B L2 cache
L2_HIT_SMALL = 0.92  # hit rate of a working set well inside L2

# which pipe (a key of OpCost.pipes) each cycle-counting event follows
PIPE_EVENTS: dict[int, str] = {
    0x8: "vector", 0x12C: "vector", 0xA: "cube", 0x9: "scalar", 0xB: "mte1", 0x302: "mte1", 0xC: "mte2",
    0xD: "mte3", 0x303: "mte3",
}
# request / data counters: (bytes source, bytes per count)
BYTE_EVENTS: dict[int, tuple[str, float]] = {
    0x12: ("in", 8), 0x13: ("out", 8), 0xF: ("in", 256), 0x10: ("out", 256), 0x15: ("in", 128), 0x16: ("out", 128),
    0x31: ("in_cube", 512), 0x32: ("in_cube", 128), 0x1B: ("in_cube", 512), 0x1C: ("in_cube", 512),
    0x21: ("in_cube", 512), 0x22: ("in_cube", 256), 0x27: ("out_vec", 256), 0x29: ("out_vec", 256),
    0x28: ("out_cube", 1024), 0x2A: ("out_cube", 1024), 0x43: ("in_vec", 32), 0x44: ("out_vec", 32),
    0x37: ("in", 4096), 0x38: ("out", 4096), 0x3D: ("out_vec", 128), 0x3E: ("in_vec", 128),
    0x206: ("out_cube", 256), 0x20C: ("out_cube", 128), 0x50C: ("out", 128), 0x50D: ("in", 256),
    0x50E: ("in", 256),
}


def _bytes(cost, kind: str) -> float:
    mte2, mte3 = cost.pipes.get("mte2", 0.0), cost.pipes.get("mte3", 0.0)
    share_in = mte2 / (mte2 + mte3) if mte2 + mte3 > 0 else 0.5
    cube = cost.pipes.get("cube", 0.0) > 0
    b = {"in": cost.bytes * share_in, "out": cost.bytes * (1 - share_in)}
    b["in_cube"], b["out_cube"] = (b["in"], b["out"]) if cube else (0.0, 0.0)
    b["in_vec"], b["out_vec"] = (b["in"], b["out"]) if not cube else (b["in"] * 0.25, b["out"] * 0.25)
    return b[kind]


def event_counts(cost, events: tuple[int, ...], cycles: np.ndarray, busy_ns: float, dtype: str = "FLOAT16",
                 scale: np.ndarray | None = None) -> np.ndarray:
    """(n, 8) uint64 counters of ``events`` for ``n`` executions of one op with ``cycles`` each;
    ``busy_ns``: the op's busy time in the cost model (the pipes' shares are relative to it);
    ``scale``: each execution's duration over the cost model's (request counts follow it)."""
    cycles = np.asarray(cycles, np.float64)
    busy = max(busy_ns, 1e-9)
    out = np.zeros((len(cycles), raw.N_COUNTERS), np.float64)
    vec = min(cost.pipes.get("vector", 0.0) / busy, 1.0)
    mem = cost.pipes.get("mte2", 0.0) + cost.pipes.get("mte3", 0.0)
    cube = min(cost.pipes.get("cube", 0.0) / busy, 1.0)
    int8 = dtype in ("INT8", "INT32")
    scale = np.ones(len(cycles)) if scale is None else np.asarray(scale, np.float64)
    l2_in = _bytes(cost, "in")
    hit = L2_HIT_SMALL * min(1.0, L2_BYTES / max(cost.bytes, 1))
    for slot, ev in enumerate(events[:raw.N_COUNTERS]):
        if ev in PIPE_EVENTS:
            pipe = PIPE_EVENTS[ev]
            if pipe in ("mte2", "mte3"):  # loads and stores stream concurrently through the memory phase
                frac = min(mem / busy, 1.0) if cost.pipes.get(pipe, 0.0) > 0 else 0.0
            else:
                frac = min(cost.pipes.get(pipe, 0.0) / busy, 1.0)
            v = cycles * frac
        elif ev in (0x416, 0x49):  # cube fp instructions
            v = cycles * cube * (0.0 if int8 else 1.0)
        elif ev in (0x417, 0x4A):  # cube int instructions
            v = cycles * cube * (1.0 if int8 else 0.0)
        elif ev in (0x4B, 0x4C, 0x4D, 0x4E, 0x4F):  # vector instructions by data type
            share = {0x4B: 1.0 if dtype == "FLOAT" else 0.0, 0x4C: 0.0 if dtype == "FLOAT" or int8 else 0.7,
                     0x4D: 0.0 if dtype == "FLOAT" or int8 else 0.2, 0x4E: 1.0 if int8 else 0.0, 0x4F: 0.1}[ev]
            v = cycles * vec * share
        elif ev == 0x54:
            v = cycles * ICACHE_REQ_PER_CYCLE
        elif ev == 0x55:
            v = cycles * ICACHE_REQ_PER_CYCLE * ICACHE_MISS_RATE
        elif ev in (0x64, 0x65, 0x66):  # UB bank-group / bank / resource conflicts: part of vector time
            v = cycles * vec * {0x64: 0.03, 0x65: 0.05, 0x66: 0.08}[ev]
        elif ev in (0x500, 0x502):  # writes: hit / miss-allocate (128 B lines)
            lines = _bytes(cost, "out") / 128 * scale
            v = lines * (hit if ev == 0x500 else 1 - hit)
        elif ev in (0x504, 0x506, 0x508, 0x50A):  # reads on two ports (r0 60 %, r1 40 %)
            lines = l2_in / 128 * scale * (0.6 if ev in (0x504, 0x506) else 0.4)
            v = lines * (hit if ev in (0x504, 0x508) else 1 - hit)
        elif ev in BYTE_EVENTS:
            src, per = BYTE_EVENTS[ev]
            v = _bytes(cost, src) / per * scale
        else:
            v = np.zeros(len(cycles))
        out[:, slot] = v
    return np.minimum(np.rint(out), np.maximum(cycles, 0)[:, None] * 64).astype(np.uint64)


def clock_plan(iter_busy_ns: np.ndarray, iter_span_ns: np.ndarray, nominal_mhz: float) -> np.ndarray:
    """AI Core MHz per iteration: throttled after an iteration busier than ``THROTTLE_UTIL``."""
    util = np.asarray(iter_busy_ns, np.float64) / np.maximum(np.asarray(iter_span_ns, np.float64), 1.0)
    hot = np.concatenate([[False], util[:-1] > THROTTLE_UTIL])
    low = float(round(nominal_mhz * THROTTLE_RATIO))
    return np.where(hot, low, float(nominal_mhz))


def context_records(stream: np.ndarray, task: np.ndarray, ctx: np.ndarray, accel_mix: np.ndarray, aic: np.ndarray,
                    cycles: np.ndarray, counters: np.ndarray, start: np.ndarray, end: np.ndarray,
                    cnt0: int) -> np.ndarray:
    """128-byte context PMU records (ids as the STARS logs carry them; FFTS+ for MIX tasks)."""
    n = len(stream)
    r = np.zeros(n, raw.DTYPE)
    r["word0"] = raw.pack_word0(raw.FUNC_CONTEXT_PMU, (cnt0 + np.arange(n)) % 16)
    r["stream_id"] = stream
    r["task_id"] = task
    sub = np.where(accel_mix, np.where(aic, raw.SUBTASK_MIX_AIC, raw.SUBTASK_MIX_AIV), 0)
    r["word5"] = sub
    r["sub_task_id"] = np.where(accel_mix, ctx & 0xFFFF, 0)
    # traditional tasks: ffts type 0 = AI Core (cube), 1 = AI Vector; MIX: FFTS+ (4)
    r["word7"] = np.where(accel_mix, raw.FFTS_TYPE_PLUS, np.where(aic, raw.FFTS_TYPE_NORMAL, 1)).astype(np.uint16) << 13
    r["total_cycle"] = cycles
    r["pmu"] = counters
    r["start"], r["end"] = start, end
    return r


def freq_records(syscnt: np.ndarray, mhz: np.ndarray, typed: bool) -> np.ndarray:
    """lpmInfoConv (``typed``: type 0 = AI Core frequency) / lpmFreqConv records, 55 entries each."""
    n = len(syscnt)
    k = max(1, -(-n // raw_lpm.N_ENTRIES))
    r = np.zeros(k, raw_lpm.DTYPE)
    for i in range(k):  # one record per 55 samples: a handful per run
        part = slice(i * raw_lpm.N_ENTRIES, (i + 1) * raw_lpm.N_ENTRIES)
        m = len(syscnt[part])
        r[i]["count"] = m
        r[i]["type"] = raw_lpm.TYPE_AIC_FREQ if typed else 0
        r[i]["entries"]["syscnt"][:m] = syscnt[part]
        r[i]["entries"]["value"][:m] = mhz[part]
    return r


class PmuEmitter:
    """Writes the PMU and frequency records of the simulated devices (one per run).

    ``events``: ``(aic_events, aiv_events)`` of the chosen ``aic_metrics`` (the collector's
    sample.json lists); ``spec``: the device (core counts, nominal AI Core MHz)."""

    KERNEL_TYPES = ("AI_CORE", "AI_VECTOR_CORE", "MIX_AIV", "MIX_AIC")

    def __init__(self, hooks, clock, spec, events: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
        self.hooks, self.clock, self.spec = hooks, clock, spec
        self.aic_events, self.aiv_events = events
        self.cnt: dict[int, int] = {}
        self.hot: dict[int, bool] = {}  # device -> the last iteration was busy
        self.freq: dict[int, list[tuple[int, int]]] = {}  # device -> [(syscnt, MHz)] changes

    def block(self, d: int, prog, st: np.ndarray, en: np.ndarray, tid: np.ndarray, stream: np.ndarray,
              ctx: np.ndarray) -> None:
        """Context PMU records of a chunk of iterations (``st``/``en``: (K, T) sim ns)."""
        info = prog.tasks.info
        kernel = np.array([i.cost is not None and i.task_type in self.KERNEL_TYPES for i in info], bool)
        if not kernel.any():
            return
        nominal = float(self.spec.aic_frequency_mhz)
        dur = (en - st).astype(np.float64)
        span = np.maximum(en[:, kernel].max(axis=1) - st[:, kernel].min(axis=1), 1).astype(np.float64)
        busy_iter = dur[:, kernel].sum(axis=1)
        mhz = np.empty(len(st))
        for k in range(len(st)):  # per iteration: a few per chunk
            m = float(round(nominal * THROTTLE_RATIO)) if self.hot.get(d, False) else nominal
            mhz[k] = m
            changes = self.freq.setdefault(d, [])
            if not changes or changes[-1][1] != int(m):
                changes.append((int(self.clock.syscnt(int(st[k].min()))), int(m)))
            self.hot[d] = busy_iter[k] / span[k] > THROTTLE_UTIL
        s_cnt, e_cnt = self.clock.syscnt(st.ravel()).reshape(st.shape), self.clock.syscnt(en.ravel()).reshape(st.shape)
        parts = []
        for j in np.flatnonzero(kernel):
            c = info[j].cost
            aic = c.task_type in ("AI_CORE", "MIX_AIC")
            cores = self.spec.ai_core_num if aic else self.spec.aiv_num
            block = max(int(c.block_dim), 1)
            waves = -(-block // max(cores, 1))
            busy_ns = c.total_cycles * 1000.0 / (nominal * block) if c.total_cycles else float(c.duration_ns)
            busy_run = busy_ns * dur[:, j] / max(float(c.duration_ns), 1.0)
            cycles = np.rint(busy_run * mhz / 1000.0 * block / waves)
            counters = event_counts(c, self.aic_events if aic else self.aiv_events, cycles, busy_ns, info[j].dtype,
                                    dur[:, j] / max(float(c.duration_ns), 1.0))
            n = len(st)
            mix = c.task_type in ("MIX_AIV", "MIX_AIC")
            parts.append((np.full(n, stream[j]), tid[:, j], np.full(n, ctx[j]), np.full(n, mix), np.full(n, aic),
                          cycles.astype(np.uint64), counters, s_cnt[:, j], e_cnt[:, j]))
        cols = [np.concatenate(x) for x in zip(*parts)]
        order = np.argsort(cols[8], kind="stable")  # records in end-time order, as the device writes them
        cols = [c[order] for c in cols]
        cnt0 = self.cnt.get(d, 0)
        self.cnt[d] = cnt0 + len(order)
        self.hooks.report_device(d, raw.FILE_TAG, context_records(*cols, cnt0=cnt0))

    def finish(self) -> None:
        """The frequency records (both files: msprof's Python path reads lpmInfoConv, its C++
        path lpmFreqConv)."""
        for d, changes in sorted(self.freq.items()):
            sc = np.array([c[0] for c in changes], np.uint64)
            mhz = np.array([c[1] for c in changes], np.uint32)
            self.hooks.report_device(d, raw_lpm.FILE_TAG, freq_records(sc, mhz, typed=True))
            self.hooks.report_device(d, raw_lpm.FREQ_FILE_TAG, freq_records(sc, mhz, typed=False))

"""The simulated device's AI CPU, L2 cache and data-preprocess records (``aicpu`` / ``l2`` switches).

* **AI CPU** (``aicpu.data``, type node): every AI CPU kernel run reports its run start / end as
  device syscnt (inside the task's STARS window: ``RUN_MARGIN`` of its duration later / earlier,
  the scheduler's pick-up and write-back), its compute and memcpy phases in µs
  (``COMPUTE_SHARE`` / ``MEMCPY_SHARE`` of the run), the dispatch time (``DISPATCH_US``) and the
  submit / after-run ticks around the run (total time = dispatch + task window).
* **Data preprocess** (``aicpu.data``, type dp): a training model's input pipeline: before each
  iteration the dataset queue (``DP_SOURCE``) is dequeued once ("Last dequeue"), with the number
  of batches still cached in the queue (it starts full at ``DP_QUEUE_DEPTH`` and the producer
  refills one batch per iteration except every ``DP_STALL_EVERY``-th, so the queue drains
  slowly, as a host-bound input pipeline does).
* **L2 cache** (``l2_cache.data``): every AI Core / AI Vector / MIX task reports its L2 counters
  in the order of sample.json ``l2CacheTaskProfilingEvents`` (:data:`msprof_py.raw.l2_cache.EVENTS_910B`):
  read and write requests (128-byte lines of the op's bytes), hits at the PMU model's hit rate
  (``L2_HIT_SMALL`` while the op's bytes fit in the 192 MB L2, falling with the overflow) and
  victims (a missed line evicts one when its set is full: ``bytes / (bytes + L2)`` of the misses).

Pure numpy over whole blocks; nothing here runs when the switches are off.
"""
from __future__ import annotations

import numpy as np

from msprof_py.raw import aicpu as raw_aicpu, l2_cache as raw_l2
from msprof_py.raw.common import new_records
from msprof_py.runtime.pmu_model import L2_BYTES, L2_HIT_SMALL

RUN_MARGIN = 0.04  # share of the STARS task window before the kernel starts / after it ends on the AI CPU
COMPUTE_SHARE = 0.70  # of the kernel run
MEMCPY_SHARE = 0.20
DISPATCH_US = 3
DP_SOURCE = "iterator_default"
DP_ACTION = "Last dequeue"
DP_QUEUE_DEPTH = 64
DP_STALL_EVERY = 4
DP_LEAD_NS = 20_000  # the dequeue happens this long before the iteration's first task
LINE_BYTES = 128
KERNEL_TYPES = ("AI_CORE", "AI_VECTOR_CORE", "MIX_AIV", "MIX_AIC")


def l2_counts(nbytes: float, write_share: float, n: int) -> np.ndarray:
    """(n, 8) counters of one op (``nbytes`` moved, ``write_share`` of them written) in the
    order of :data:`raw_l2.EVENTS_910B` (read req, write req, read hit, write hit, victim)."""
    lines = max(float(nbytes), 0.0) / LINE_BYTES
    hit = L2_HIT_SMALL * min(1.0, L2_BYTES / max(float(nbytes), 1.0))
    writes, reads = lines * write_share, lines * (1.0 - write_share)
    full = float(nbytes) / (float(nbytes) + L2_BYTES)  # chance a missed line's set is full
    row = np.zeros(raw_l2.N_EVENTS)
    row[:5] = [reads, writes, reads * hit, writes * hit, lines * (1.0 - hit) * full]
    return np.tile(np.rint(row).astype(np.uint64), (n, 1))


class CounterEmitter:
    """Writes the AI CPU / DP / L2 records of one run.  ``switches``: the subset of
    {"aicpu", "l2"} the collector has on (``hooks.device_counters``)."""

    def __init__(self, hooks, clock, switches: frozenset[str]) -> None:
        self.hooks, self.clock = hooks, clock
        self.aicpu = "aicpu" in switches
        self.l2 = "l2" in switches
        self.dp_index: dict[int, int] = {}  # device -> dequeues so far

    def block(self, d: int, prog, st: np.ndarray, en: np.ndarray, tid: np.ndarray, stream: np.ndarray) -> None:
        """Records of a chunk of ``K`` iterations (``st``/``en``: (K, T) sim ns, ``tid`` task ids)."""
        info = prog.tasks.info
        if self.aicpu:
            cpu = np.array([i.task_type == "AI_CPU" for i in info], bool)
            if cpu.any():
                self._aicpu(d, st[:, cpu], en[:, cpu], tid[:, cpu], np.broadcast_to(stream[cpu], st[:, cpu].shape))
            if prog.training and prog.mode == "static":
                self._dp(d, st)
        if self.l2:
            self._l2(d, info, st, en, tid, stream)

    def _aicpu(self, d: int, st: np.ndarray, en: np.ndarray, tid: np.ndarray, stream: np.ndarray) -> None:
        st, en = st.ravel().astype(np.int64), en.ravel().astype(np.int64)
        order = np.argsort(en, kind="stable")
        st, en, tid, stream = st[order], en[order], tid.ravel()[order], stream.ravel()[order]
        dur = en - st
        run_s = st + np.rint(dur * RUN_MARGIN).astype(np.int64)
        run_e = en - np.rint(dur * RUN_MARGIN).astype(np.int64)
        run_us = self.clock.monotonic_ns(run_s) // 1000
        run_len_us = np.maximum((run_e - run_s) // 1000, 0)
        comp_s = run_us + np.rint(run_len_us * (1 - COMPUTE_SHARE - MEMCPY_SHARE) / 2).astype(np.int64)
        mem_s = comp_s + np.rint(run_len_us * COMPUTE_SHARE).astype(np.int64)
        mem_e = mem_s + np.rint(run_len_us * MEMCPY_SHARE).astype(np.int64)
        r = new_records(raw_aicpu.NODE_DTYPE, len(st))
        r["level"], r["type"] = raw_aicpu.LEVEL, raw_aicpu.TYPE_NODE
        r["timestamp"] = self.clock.monotonic_ns(run_e)
        r["stream_id"], r["task_id"] = stream, tid & 0xFFFF
        r["run_start_us"], r["run_start_tick"] = run_us, self.clock.syscnt(run_s)
        r["compute_start_us"], r["memcpy_start_us"], r["memcpy_end_us"] = comp_s, mem_s, mem_e
        r["run_end_us"], r["run_end_tick"] = self.clock.monotonic_ns(run_e) // 1000, self.clock.syscnt(run_e)
        r["device_id"] = d
        submit = st - DISPATCH_US * 1000
        r["submit_tick"], r["schedule_tick"] = self.clock.syscnt(submit), self.clock.syscnt(st)
        r["tick_before_run"], r["tick_after_run"] = self.clock.syscnt(run_s), self.clock.syscnt(en)
        r["dispatch_time_us"] = DISPATCH_US
        r["total_time_us"] = (en - submit) // 1000
        self.hooks.report_device(d, raw_aicpu.FILE_TAG, r)

    def _dp(self, d: int, st: np.ndarray) -> None:
        k = len(st)
        i0 = self.dp_index.get(d, 0)
        idx = np.arange(i0, i0 + k, dtype=np.int64)
        self.dp_index[d] = i0 + k
        stalls = idx // DP_STALL_EVERY  # batches not refilled so far
        size = np.maximum(DP_QUEUE_DEPTH - 1 - stalls, 0)
        t = st.min(axis=1).astype(np.int64) - DP_LEAD_NS
        r = new_records(raw_aicpu.DP_DTYPE, k)
        r["level"], r["type"] = raw_aicpu.LEVEL, raw_aicpu.TYPE_DP
        r["timestamp"] = self.clock.monotonic_ns(t)
        r["action"], r["source"] = DP_ACTION.encode(), DP_SOURCE.encode()
        r["index"], r["size"] = idx + 1, size
        self.hooks.report_device(d, raw_aicpu.FILE_TAG, r.view(raw_aicpu.NODE_DTYPE))

    def _l2(self, d: int, info, st: np.ndarray, en: np.ndarray, tid: np.ndarray, stream: np.ndarray) -> None:
        parts = []
        for j, i in enumerate(info):
            c = i.cost
            if c is None or i.task_type not in KERNEL_TYPES:
                continue
            mte2, mte3 = c.pipes.get("mte2", 0.0), c.pipes.get("mte3", 0.0)
            write = mte3 / (mte2 + mte3) if mte2 + mte3 > 0 else 0.5
            n = len(st)
            parts.append((en[:, j], np.full(n, stream[j]), tid[:, j], l2_counts(c.bytes, write, n)))
        if not parts:
            return
        end = np.concatenate([p[0] for p in parts])
        order = np.argsort(end, kind="stable")  # the device writes them as tasks end
        r = np.zeros(len(end), raw_l2.DTYPE)
        r["stream_id"] = np.concatenate([p[1] for p in parts])[order]
        r["task_id"] = (np.concatenate([p[2] for p in parts]) & 0xFFFF)[order]
        r["events"] = np.concatenate([p[3] for p in parts])[order]
        self.hooks.report_device(d, raw_l2.FILE_TAG, r)

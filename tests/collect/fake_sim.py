"""A tiny stand-in for ``msprof_py.runtime.sim.run`` with the same signature and SimResult shape.

It exists so the collector tests can drive the hooks before (and independently of) the real
runtime: N tasks per iteration on one stream per device, task ids starting just below the
16-bit wrap so flips happen, step-trace tags around each iteration, and a truth frame.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.raw import api_event, node_basic_info, stars_soc, task_track, ts_track
from msprof_py.raw.common import LEVEL_ACL, LEVEL_NODE, LEVEL_RUNTIME, new_records
from msprof_py.runtime.clock import SimClock
from msprof_py.runtime.device import ATLAS_A2, DeviceSpec

TICK_NS = 20  # 50 MHz hwts: every fake time is a whole tick, so round trips are exact
FIRST_TASK_ID = 65530


@dataclass
class FakeSimResult:
    spec: DeviceSpec
    clock: SimClock
    device_ids: list[int]
    pid: int
    pid_name: str
    end_sim_ns: int
    truth: pd.DataFrame
    truth_steps: pd.DataFrame


def fake_run(target: Any, *, devices: int = 1, iterations: int = 1, seed: int = 0, hooks: Any = None,
             clock: SimClock | None = None, spec: DeviceSpec = ATLAS_A2, tuning: Any = None,
             fp_point: str | None = None, bp_point: str | None = None) -> FakeSimResult:
    """fp_point / bp_point are accepted (same signature as the runtime) and ignored."""
    if target not in ("tiny", "medium"):
        from msprof_py.errors import WorkloadError
        raise WorkloadError(f"unknown workload {target!r}; choose one of: medium, tiny")
    per_iter = 4 if target == "tiny" else 3000
    rng = np.random.default_rng(seed)
    assert clock is not None
    tid = 4242
    stream = 5
    names = [f"op{i}" for i in range(per_iter)]
    op_hash = np.array([hooks.hash_id(n) for n in names], dtype=np.uint64)
    type_hash = hooks.hash_id("MatMul")
    for k, name in task_track.RUNTIME_TASK_TYPES.items():
        hooks.register_type(LEVEL_RUNTIME, k, name)
    hooks.register_type(LEVEL_NODE, 5, "launch")
    rows = []
    steps = []
    end = 0
    for dev in range(devices):
        n = per_iter * iterations
        seq = FIRST_TASK_ID + np.arange(n)
        task_id = (seq % 65536).astype(np.uint16)
        batch = (seq // 65536 - FIRST_TASK_ID // 65536).astype(np.uint16)
        dur = (rng.integers(5, 50, n) * TICK_NS).astype(np.int64)
        gap = 2 * TICK_NS
        start = np.concatenate([[1000 * TICK_NS], np.cumsum(dur + gap)[:-1] + 1000 * TICK_NS])
        launch = start - 500 * TICK_NS
        index = np.arange(n) // per_iter + 1
        # host: acl api per iteration, runtime launch api + task_track + node_basic_info per task
        tt = new_records(task_track.DTYPE, n)
        tt["level"], tt["type"], tt["thread_id"] = LEVEL_RUNTIME, 0, tid
        tt["timestamp"] = clock.host_cnt(launch)
        tt["device_id"], tt["stream_id"], tt["task_id"], tt["batch_id"] = dev, stream, task_id, batch
        tt["task_type"], tt["kernel_name"] = 0, op_hash[np.arange(n) % per_iter]
        nb = new_records(node_basic_info.DTYPE, n)
        nb["level"], nb["type"], nb["thread_id"] = LEVEL_NODE, 0, tid
        nb["timestamp"] = tt["timestamp"]
        nb["op_name"], nb["op_type"], nb["block_num"] = tt["kernel_name"], type_hash, 20
        api = new_records(api_event.DTYPE, n + iterations)
        api["level"][:n], api["type"][:n], api["thread_id"] = LEVEL_RUNTIME, 1, tid
        api["timestamp"][:n] = clock.host_cnt(launch - 2 * TICK_NS)
        api["end"][:n] = clock.host_cnt(launch + 2 * TICK_NS)
        api["item_id"][:n] = tt["kernel_name"]
        api["level"][n:], api["type"][n:] = LEVEL_ACL, (2 << 16) | 1
        api["timestamp"][n:] = clock.host_cnt(launch[::per_iter] - 10 * TICK_NS)
        api["end"][n:] = clock.host_cnt(launch[::per_iter] + 10 * TICK_NS)
        hooks.report_host(api_event.FILE_TAG, True, api)
        hooks.report_host(node_basic_info.FILE_TAG, True, nb)
        # flips: one FLIP_TASK on both sides at every wrap
        wraps = np.flatnonzero(np.diff(batch.astype(np.int64)) > 0) + 1
        flip_tt = new_records(task_track.DTYPE, wraps.size)
        flip_tt["level"], flip_tt["thread_id"], flip_tt["device_id"], flip_tt["stream_id"] = LEVEL_RUNTIME, tid, dev, stream
        flip_tt["task_type"] = task_track.FLIP_TASK
        flip_tt["batch_id"] = batch[wraps]
        flip_tt["timestamp"] = clock.host_cnt(launch[wraps] - TICK_NS)
        hooks.report_host(task_track.FILE_TAG, True, np.concatenate([tt, flip_tt]))
        # device: ACSQ start/end pairs, step trace, flips
        st = np.zeros(2 * n, dtype=stars_soc.DTYPE)
        st["word0"][:n] = stars_soc.pack_word0(stars_soc.FUNC_ACSQ_START, 0, 0)
        st["word0"][n:] = stars_soc.pack_word0(stars_soc.FUNC_ACSQ_END, 0, 0)
        st["stream_id"], st["task_id"] = stream, np.concatenate([task_id, task_id])
        st["timestamp"] = clock.syscnt(np.concatenate([start, start + dur]))
        # report in two batches to exercise appends
        half = n
        hooks.report_device(dev, stars_soc.FILE_TAG, st[:half])
        hooks.report_device(dev, stars_soc.FILE_TAG, st[half:])
        trace = np.zeros(iterations * 2, dtype=ts_track.STEP_TRACE_DTYPE)
        trace["func_type"] = ts_track.FUNC_STEP_TRACE
        first = start[::per_iter]
        last = (start + dur)[per_iter - 1::per_iter]
        trace["timestamp"][0::2] = clock.syscnt(first - TICK_NS)
        trace["timestamp"][1::2] = clock.syscnt(last + TICK_NS)
        trace["tag_id"][0::2], trace["tag_id"][1::2] = ts_track.TAG_FP, ts_track.TAG_ITER_END
        trace["index_id"] = np.repeat(np.arange(1, iterations + 1), 2)
        trace["model_id"], trace["stream_id"] = 1, stream
        flips = np.zeros(wraps.size, dtype=ts_track.TASK_FLIP_DTYPE)
        flips["func_type"] = ts_track.FUNC_TASK_FLIP
        flips["timestamp"] = clock.syscnt(start[wraps] - TICK_NS)
        flips["stream_id"], flips["flip_num"], flips["task_id"] = stream, batch[wraps], 0
        # (np.concatenate would repack the offset dtypes and drop their bodies: join the bytes)
        hooks.report_device(dev, ts_track.FILE_TAG,
                            np.frombuffer(trace.tobytes() + flips.tobytes(), dtype=ts_track.PREFIX_DTYPE))
        rows.append(pd.DataFrame({
            "device_id": dev, "model_id": 1, "index_id": index, "stream_id": stream, "task_id": task_id,
            "batch_id": batch, "context_id": 4294967295, "start_sim_ns": start, "dur_ns": dur,
            "start_syscnt": clock.syscnt(start), "end_syscnt": clock.syscnt(start + dur),
            "op_name": [names[i % per_iter] for i in range(n)], "op_type": "MatMul",
            "task_type": "AI_CORE", "host_task_type": "KERNEL_AICORE", "sqe_type": "AI_CORE"}))
        steps.append(pd.DataFrame({"device_id": dev, "model_id": 1, "index_id": np.arange(1, iterations + 1),
                                   "start_sim_ns": first, "end_sim_ns": last}))
        end = max(end, int((start + dur)[-1]) + 100 * TICK_NS)
    return FakeSimResult(spec, clock, list(range(devices)), 12345, "fake_train.py", end,
                         pd.concat(rows, ignore_index=True), pd.concat(steps, ignore_index=True))

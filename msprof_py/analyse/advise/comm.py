"""Communication rules: small all-reduces that could be fused, communication not overlapped
with computation."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from msprof_py.analyse.advise.base import (SCHEDULE, Finding, Plot, by_device, device_task_of, device_tasks,
                                           is_busy, merge_intervals, overlap_ns, rule, text_in, us, windows)

DTYPE_BYTES = {"FP16": 2, "BF16": 2, "FP32": 4, "INT8": 1, "INT16": 2, "INT32": 4, "INT64": 8, "FP64": 8,
               "UINT8": 1, "UINT16": 2, "UINT32": 4, "UINT64": 8}
SMALL_BYTES = 1 << 20  # all-reduces under 1 MiB are latency-bound
EXPOSED_SHARE = 0.10  # exposed communication above 10% of the iteration time


def _sizes(comm: pd.DataFrame) -> np.ndarray:
    width = comm["data_type"].astype(str).map(DTYPE_BYTES).fillna(-1).to_numpy()
    cnt = comm["count"].to_numpy(np.float64)
    return np.where((width > 0) & (cnt >= 0), cnt * width, -1)


@rule("small_allreduce")
def small_allreduce(session: Any) -> list[Finding]:
    """Two or more all-reduces under 1 MiB in an iteration.  Time at stake per iteration: when a
    large all-reduce runs in the iteration, the small ones' time minus what their bytes would add
    to it (at its bytes per ns); else their time minus the longest of them (one fused all-reduce
    of the same bytes is latency-bound too)."""
    comm = session.communication
    comm = comm[comm["op_type"].astype(str).str.contains("allreduce", case=False)]
    out = []
    for dev, cd in by_device(comm.assign(size=_sizes(comm))):
        is_small = (cd["size"] >= 0) & (cd["size"] < SMALL_BYTES)
        n = cd[is_small].groupby(["model_id", "index_id"]).size()
        fusable = n[n >= 2]
        if not len(fusable):
            continue
        keys = set(fusable.index)
        pick = np.array([k in keys for k in zip(cd["model_id"], cd["index_id"])])
        sm, big = cd[pick & is_small.to_numpy()], cd[pick & (cd["size"] >= SMALL_BYTES).to_numpy()]
        g = sm.groupby(["model_id", "index_id"])
        # ns per byte of the iteration's large all-reduces (bandwidth-bound): the cost of fusing
        bw = (big.groupby(["model_id", "index_id"])["dur_ns"].sum() / big.groupby(["model_id", "index_id"])["size"].sum())
        into_big = g["size"].sum() * bw.reindex(g["size"].sum().index)
        saving = (g["dur_ns"].sum() - into_big).fillna(g["dur_ns"].sum() - g["dur_ns"].max()).clip(lower=0)
        out.append(Finding(
            "small_allreduce", SCHEDULE, int(dev),
            f"{int(fusable.mean())} all-reduces under {SMALL_BYTES >> 20} MiB per iteration "
            f"(mean {us(sm['dur_ns'].mean()):.1f} us each)",
            "Fuse them: a larger gradient bucket / all-reduce fusion size (e.g. HCCL_BUFFSIZE, the framework's "
            "bucket size) sends the same bytes in fewer, bandwidth-bound all-reduces.",
            int(saving.sum()), sorted(set(sm["op_name"].astype(str))), sorted(int(i) for i in sm["index_id"].unique()),
            [], {"per_iteration": {f"{m}/{i}": int(c) for (m, i), c in fusable.items()},
                 "sizes_bytes": sorted(int(x) for x in set(sm["size"])),
                 "estimate": "per iteration: small all-reduce time - their bytes at the large all-reduce's rate "
                             "(or - the longest one without a large all-reduce)"},
            Plot("small all-reduce time per iteration", [f"{m}/{i}" for m, i in g.size().index],
                 [us(v) for v in g["dur_ns"].sum()])))
    return out


@rule("comm_not_overlapped")
def comm_not_overlapped(session: Any) -> list[Finding]:
    """Communication time with no computation running beside it (exposed), above 10% of the
    iteration time.  Communication time: each collective from its first task's start to its
    last task's end (``communication`` table; its notify waits and the gaps between its tasks
    are communication too), else the union of the HCCL tasks.  Time at stake: the exposed time."""
    return exposed_comm(session, has_spans(session))


def has_spans(session: Any) -> bool:
    """Whether the ``communication`` table holds a collective with a start and a duration: then
    :func:`comm_not_overlapped` measures every device by its collectives' spans, else by its
    HCCL tasks (a fact of the whole PROF dir: advice computed one device at a time,
    :mod:`msprof_py.analyse.advise.parts`, combines it over the devices)."""
    ops = session.communication
    return bool(len(ops)) and bool(((ops["start_ns"] >= 0) & (ops["dur_ns"] > 0)).any())


def exposed_comm(session: Any, spans_known: bool) -> list[Finding]:
    """:func:`comm_not_overlapped` measuring communication by the collectives' spans
    (``spans_known``) or by the HCCL tasks."""
    ct = session.comm_tasks
    ops = session.communication
    out: list[Finding] = []
    if not len(ct) and not len(ops):
        return out
    device_tasks(session)  # (shared; as before, a session without task columns fails here)
    spans = ops[(ops["start_ns"] >= 0) & (ops["dur_ns"] > 0)] if spans_known else ct[ct["start_ns"] >= 0]
    for dev, cd in by_device(spans):
        td = device_task_of(session, dev)
        comm_streams = ct.loc[ct["device_id"] == dev, "stream_id"].unique() if len(ct) else []
        comp = (~text_in(td["task_type"], {"HCCL", "COMMUNICATION"}) & ~td["stream_id"].isin(comm_streams).to_numpy()
                & is_busy(td))  # computing tasks (a mask: no copy of the device's tasks)
        c0 = cd["start_ns"].to_numpy(np.int64)
        c1 = c0 + cd["dur_ns"].to_numpy(np.int64)
        m0, m1 = merge_intervals(c0, c1)
        comm_ns = int((m1 - m0).sum())
        hidden = overlap_ns(c0, c1, td["start_ns"].to_numpy()[comp], td["end_ns"].to_numpy()[comp])
        exposed = comm_ns - hidden
        w = windows(session, int(dev))
        span = int((w["end_ns"] - w["start_ns"]).sum())
        if not span or exposed < EXPOSED_SHARE * span:
            continue
        out.append(Finding(
            "comm_not_overlapped", SCHEDULE, int(dev),
            f"Communication is exposed: {us(exposed):.1f} us of {us(comm_ns):.1f} us communication runs with no "
            f"computation beside it ({100 * exposed / span:.1f}% of the iteration time)",
            "Overlap it with the backward pass: smaller gradient buckets that start as gradients are ready, "
            "communication on its own stream, prefetch the next layer's parameters.",
            exposed, sorted(set(cd["op_name"].astype(str))), [int(i) for i in w["iter_id"]],
            sorted(int(x) for x in comm_streams),
            {"communication_us": us(comm_ns), "overlapped_us": us(hidden), "exposed_us": us(exposed),
             "span_us": us(span), "estimate": "union of the collectives' spans - its overlap with computing tasks"},
            Plot("communication", ["overlapped", "exposed"], [us(hidden), us(exposed)])))
    return out

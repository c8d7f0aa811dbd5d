"""HCCL: the data-parallel gradient all-reduce as a ring, split into device sub-tasks.

For ``N`` ranks a ring all-reduce runs ``2(N-1)`` steps (reduce-scatter then all-gather); every
step moves ``bytes / N`` to the next rank over HCCS.  Per step each rank runs a ``Memcpy``
(``Reduce_Inline`` during reduce-scatter: an SDMA copy with an in-line reduction), then a
``Notify_Record`` to its successor and a ``Notify_Wait`` for its predecessor.  The op starts with
a record/wait handshake.  Every ``Notify_Wait`` is a cross-device *barrier*: it ends only when
every rank has reached it, which is what couples the devices' timelines.  The total comes to
``2(N-1)/N * bytes / hccs_bw + 2(N-1) * step latency`` (:func:`msprof_py.runtime.cost.ring_allreduce_ns`).

Host side (reported once at model load; the device replays the tasks): Node@launch of
``hcom_allReduce_`` (node_basic_info task type HCCL, hccl_op_info), then per sub-task an
HCCL-level API (level 5500, type HCCL_MASTER, item = the op name) holding its hccl_info, its
runtime API and task_track (msprof pairs an HCCL API's hccl_info records with the tasks under it
by context id, so sub-tasks cannot share one API).
"""
from __future__ import annotations

from dataclasses import dataclass

from msprof_py.raw import api_event, hccl_info, hccl_op_info, node_basic_info
from msprof_py.raw.common import HCCL_MASTER, INVALID_U32, LEVEL_HCCL, LEVEL_NODE, NODE_HCCL_OP_INFO, NODE_LAUNCH
from msprof_py.raw.node_basic_info import GE_TASK_TYPE_IDS
from msprof_py.runtime import apis, records
from msprof_py.runtime.device import DeviceSpec
from msprof_py.runtime.graph import Graph
from msprof_py.runtime.program import TaskInfo

GROUP = "hccl_world_group"
ALG = "RING"
DATA_TYPE_FP16 = 3
LINK_HCCS = 1
LINK_ROCE = 3
TRANSPORT_SDMA = 0
TRANSPORT_RDMA = 1
NOTIFY_RECORD_NS = 600
NOTIFY_WAIT_BASE_NS = 1000
SDMA_SETUP_NS = 1500

# sub-task kind -> (runtime API, host task type, SQE type)
KINDS = {
    "Notify_Record": ("NotifyRecord", "NOTIFY_RECORD", "NOTIFY_RECORD_SQE"),
    "Notify_Wait": ("NotifyWait", "NOTIFY_WAIT", "NOTIFY_WAIT_SQE"),
    "Memcpy": ("MemcpyAsyncHccl", "MEMCPY_ASYNC", "SDMA_SQE"),
    "Reduce_Inline": ("MemcpyAsyncHccl", "MEMCPY_ASYNC", "SDMA_SQE"),
}


@dataclass
class SubTask:
    index: int
    kind: str  # Notify_Record / Notify_Wait / Memcpy / Reduce_Inline
    dur_ns: int
    barrier: bool
    stage: int
    remote_rank: int
    data_size: int
    info: TaskInfo
    link_type: int = LINK_HCCS
    transport_type: int = TRANSPORT_SDMA
    group: tuple[int, ...] | None = None  # barrier members (global ranks); None = every device of the run


@dataclass
class AllReduce:
    op_name: str
    nbytes: int
    ranks: int
    rank: int
    subtasks: list[SubTask]
    after: int = -1  # GE plan index of the backward op whose gradient completes this segment
    group_name: str = GROUP
    alg: str = ALG
    op_type: str = "HcomAllReduce"


    @classmethod
    def for_graph(cls, graph: Graph, ranks: int, rank: int, spec: DeviceSpec, nbytes: int | None = None,
                  segment: int = 0) -> "AllReduce":
        """The all-reduce of ``nbytes`` (default: all the weights' bytes), gradient segment ``segment``."""
        nbytes = sum(w.nbytes for w in graph.weights) if nbytes is None else nbytes
        name = f"hcom_allReduce__{len(graph.ops) % 1000:03d}_{segment}_1"
        chunk = -(-nbytes // ranks)
        lat = int(spec.hccs_latency_us * 1000)
        nxt, prv = (rank + 1) % ranks, (rank - 1) % ranks
        subs: list[SubTask] = []

        def add(kind: str, dur: int, stage: int, remote: int, size: int) -> None:
            host_type, sqe = KINDS[kind][1], KINDS[kind][2]
            subs.append(SubTask(len(subs), kind, dur, kind == "Notify_Wait", stage, remote, size,
                                # no TaskInfo for communication tasks: msprof names them by the runtime type
                                TaskInfo(host_type, "HcomAllReduce", "HCCL", host_type, sqe)))

        add("Notify_Record", NOTIFY_RECORD_NS, 0, nxt, 0)
        add("Notify_Wait", NOTIFY_WAIT_BASE_NS, 0, prv, 0)
        copy_ns = SDMA_SETUP_NS + int(chunk / spec.hccs_bandwidth_gbps)
        for step in range(2 * (ranks - 1)):
            add("Reduce_Inline" if step < ranks - 1 else "Memcpy", max(copy_ns - lat // 2, SDMA_SETUP_NS), step + 1,
                nxt, chunk)
            add("Notify_Record", NOTIFY_RECORD_NS, step + 1, nxt, 0)
            add("Notify_Wait", NOTIFY_WAIT_BASE_NS + lat // 2, step + 1, prv, 0)
        return cls(name, nbytes, ranks, rank, subs)

    @property
    def count(self) -> int:
        return self.nbytes // 2  # FLOAT16 elements

    def load_records(self, host, t: int, stream: int, task_ids: list[int]) -> int:
        """Node@launch + HCCL API + per-sub-task hccl_info / runtime API / task_track at host time ``t``.

        ``host`` is GE's record collector (:class:`msprof_py.runtime.ge.host.HostRecords`); returns the host time at the end.
        """
        n = host.n
        thread = host.thread
        name_h = n.h(self.op_name)
        group_h = n.h(self.group_name)
        per_sub = 5 * apis.US
        api_begin = t + 2 * apis.US
        api_end = api_begin + per_sub * len(self.subtasks) + apis.US
        end = api_end + apis.US
        host.add(api_event.FILE_TAG, True, records.api(LEVEL_NODE, n.node(NODE_LAUNCH), thread, t, end, name_h))
        ti = t + apis.NODE_INFO_AT_NS
        host.add(node_basic_info.FILE_TAG, False, records.node_basic(
            thread, ti, name_h, GE_TASK_TYPE_IDS["HCCL"], n.h(self.op_type), 0, 0, 0))
        n.node(NODE_HCCL_OP_INFO)
        host.add(hccl_op_info.FILE_TAG, False, records.hccl_op(thread, ti, DATA_TYPE_FP16, n.h(self.alg), self.count,
                                                               group_h))
        n.t(LEVEL_HCCL, HCCL_MASTER, "master")
        for sub, tid in zip(self.subtasks, task_ids):
            sub_begin = api_begin + sub.index * per_sub
            ts = sub_begin + apis.US // 2
            # one HCCL-level API per sub-task, holding its hccl_info and its launch: msprof (both
            # analyses) gives every task under an HCCL API that API's hccl_info records keyed by
            # context id, so sub-tasks sharing one API would all take one record's name
            host.add(api_event.FILE_TAG, True, records.api(LEVEL_HCCL, HCCL_MASTER, thread, sub_begin,
                                                           sub_begin + per_sub - apis.US // 2, name_h))
            host.add(hccl_info.FILE_TAG, False, records.hccl_infos(
                thread, ts, item_id=n.h(sub.kind), ccl_tag=name_h, group_name=group_h, local_rank=self.rank,
                remote_rank=sub.remote_rank, rank_size=self.ranks, work_flow_mode=0, plane_id=0,
                ctx_id=INVALID_U32, notify_id=(sub.stage << 8) | self.rank, stage=sub.stage,
                role=1 if sub.kind in ("Notify_Record", "Memcpy", "Reduce_Inline") else 0,
                duration_estimated=sub.dur_ns / 1000.0, src_addr=0x124000000000 + sub.index * 0x100000,
                dst_addr=0x125000000000 + sub.index * 0x100000, data_size=sub.data_size,
                op_type=0, data_type=DATA_TYPE_FP16, link_type=sub.link_type, transport_type=sub.transport_type,
                rdma_type=0))
            rt_api, host_type, _ = KINDS[sub.kind]
            rt0 = ts + 200
            host.rt_api(rt_api, rt0, rt0 + 3 * apis.US)
            host.task_track(rt0 + apis.TASK_TRACK_AT_NS, stream, tid, 0, host_type, host_type, 0)
        return end


def gradient_segments(bp_outputs: list[int], total_bytes: int, max_segments: int = 2) -> list[tuple[int, int]]:
    """Split the gradient all-reduce into segments, as GE's all-reduce fusion does.

    Args:
        bp_outputs: gradient bytes each backward op produces, in launch order.
        total_bytes: bytes to all-reduce in all.
    Returns ``(index of the backward op that completes the segment, bytes)`` per segment; a
    segment closes once it holds ``total / max_segments`` of the gradients, so the first
    all-reduce overlaps the rest of the backward pass.
    """
    produced = sum(bp_outputs)
    if produced <= 0 or max_segments <= 1 or not bp_outputs:
        return [(len(bp_outputs) - 1, total_bytes)]
    out: list[tuple[int, int]] = []
    acc, done = 0, 0
    for i, b in enumerate(bp_outputs):
        acc += b
        if len(out) < max_segments - 1 and acc >= produced / max_segments and i < len(bp_outputs) - 1:
            share = total_bytes * acc // produced
            out.append((i, share))
            done += share
            acc = 0
    out.append((len(bp_outputs) - 1, total_bytes - done))
    return [seg for seg in out if seg[1] > 0]

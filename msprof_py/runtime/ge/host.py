"""The host records GE and the runtime report while launching: API events, a node's launch
(node_basic_info, tensor_info, context ids, the runtime launch and its task_track), fusion
infos, event record / wait tasks and memory copies.  Timestamps are simulator ns on the
launching thread; task_tracks of fresh tasks carry a reference to their device task so the
program can patch in the task id at run time."""
from __future__ import annotations

import numpy as np

from msprof_py.raw import (api_event, context_id_info, fusion_op_info, memcpy_info, node_basic_info, task_track,
                           tensor_info)
from msprof_py.raw.common import (LEVEL_ACL, LEVEL_NODE, LEVEL_RUNTIME, NODE_BASIC_INFO, NODE_CONTEXT_ID_INFO,
                                  NODE_FUSION_OP_INFO, NODE_LAUNCH, NODE_TENSOR_INFO)
from msprof_py.raw.node_basic_info import GE_TASK_TYPE_IDS
from msprof_py.runtime import apis, records
from msprof_py.runtime.apis import Names
from msprof_py.runtime.cost import OpCost
from msprof_py.runtime.graph import Op
from msprof_py.runtime.program import PATCH_TASK, HostRows
from msprof_py.runtime.rts import KERNEL_TYPES, MIX_CONTEXT_ID


class HostRecords:
    """Collects one iteration's (or the load's) host records with sim-ns timestamps."""

    def __init__(self, names: Names, thread: int, device_id: int) -> None:
        self.n = names
        self.thread = thread
        self.device_id = device_id
        self.rows: list[HostRows] = []

    def add(self, tag: str, aging: bool, recs: np.ndarray, patch: int = 0, ref: int = -1) -> None:
        self.rows.append(HostRows(tag, aging, recs, patch, np.full(len(recs), ref) if patch == PATCH_TASK else None))

    def acl(self, name: str, begin: int, end: int) -> None:
        self.add(api_event.FILE_TAG, True, records.api(LEVEL_ACL, self.n.acl(name), self.thread, begin, end, 0))

    def rt_api(self, name: str, begin: int, end: int) -> None:
        self.add(api_event.FILE_TAG, True,
                 records.api(LEVEL_RUNTIME, self.n.rt_api(name), self.thread, begin, end, 0))

    def task_track(self, ts: int, stream: int, task_id: int, batch: int, host_type: str, kernel: str,
                   num_blocks: int, ref: int = -1, ratio: int = 0) -> None:
        recs = records.task_tracks(self.thread, ts, self.device_id, stream, max(task_id, 0), batch,
                                   self.n.rt_task(host_type), self.n.h(kernel), num_blocks, ratio)
        self.add(task_track.FILE_TAG, True, recs, PATCH_TASK if ref >= 0 else 0, ref)

    def node_launch(self, t: int, op: Op, cost: OpCost, aging: bool, dynamic: bool, rt_api: str, stream: int,
                    task_id: int, batch: int, ref: int = -1, dur: int = apis.NODE_LAUNCH_NS, prep_ns: int = 0) -> int:
        """Node@launch of one kernel op at host time ``t`` (its records inside); returns its end.
        ``prep_ns``: host work before the runtime launch (a dynamic op's shape inference / tiling /
        compile, op attr ``recompile_us``), inside the Node@launch call."""
        n = self.n
        dur += prep_ns
        name_h = n.h(op.name)
        self.add(api_event.FILE_TAG, True,
                 records.api(LEVEL_NODE, n.node(NODE_LAUNCH), self.thread, t, t + dur, name_h))
        ti = t + apis.NODE_INFO_AT_NS
        n.node(NODE_BASIC_INFO)
        self.add(node_basic_info.FILE_TAG, aging, records.node_basic(
            self.thread, ti, name_h, GE_TASK_TYPE_IDS[cost.task_type], n.h(op.type), cost.block_num_field,
            int(op.attrs.get("hf32", 0)) & 1, 1 if dynamic else 0))
        n.node(NODE_TENSOR_INFO)
        self.add(tensor_info.FILE_TAG, aging, records.tensor_infos(self.thread, ti, name_h, op.inputs, op.outputs))
        if cost.task_type in ("MIX_AIV", "MIX_AIC"):
            n.node(NODE_CONTEXT_ID_INFO)
            self.add(context_id_info.FILE_TAG, aging, records.context_ids(self.thread, ti, name_h, [MIX_CONTEXT_ID]))
        rt0 = t + apis.RT_LAUNCH_AT_NS + prep_ns
        self.rt_api(rt_api, rt0, rt0 + int(apis.US * 6))
        host_type = KERNEL_TYPES[cost.task_type][0]
        # the runtime reports the launched kernel under the node's name (what op_summary shows)
        self.task_track(rt0 + apis.TASK_TRACK_AT_NS, stream, task_id, batch, host_type, op.name, cost.block_dim, ref,
                        cost.block_num_field >> 16)
        return t + dur

    def fusion_infos(self, t: int, ops: list[Op]) -> int:
        """GE's fusion_op_info for every fused op of a loaded graph, reported once at load after the
        node launches (inside ModelLoad, outside any Node@launch: msprof attaches a fusion record
        only to a node-level point with no launch around it, and takes the model id from the
        enclosing ModelLoad); returns the host time after the last record."""
        n = self.n
        for op in ops:
            if not op.fused_from:
                continue
            n.node(NODE_FUSION_OP_INFO)
            in_mem = sum(x.nbytes for x in op.inputs)
            out_mem = sum(x.nbytes for x in op.outputs)
            self.add(fusion_op_info.FILE_TAG, False, records.fusion_op(
                self.thread, t, n.h(op.name), [n.h(f) for f in op.fused_from], in_mem, out_mem, 0, out_mem // 4))
            t += apis.FUSION_INFO_NS
        return t

    def event(self, t: int, kind: str, stream: int, task_id: int) -> int:
        """GE's EventRecord / StreamWaitEvent at load: a runtime API and its task_track; returns its end."""
        api = "EventRecord" if kind == "EVENT_RECORD" else "StreamWaitEvent"
        self.rt_api(api, t, t + 2 * apis.US)
        self.task_track(t + apis.TASK_TRACK_AT_NS, stream, task_id, 0, kind, kind, 0)
        return t + 2 * apis.US

    def memcpy(self, t: int, stream: int, nbytes: int, direction: int, ref: int) -> int:
        self.rt_api("MemcpyAsync", t, t + apis.MEMCPY_API_NS)
        ts = t + apis.TASK_TRACK_AT_NS
        self.task_track(ts, stream, 0, 0, "MEMCPY_ASYNC", "MEMCPY_ASYNC", 0, ref)
        self.add(memcpy_info.FILE_TAG, True, records.memcpy_infos(self.thread, ts, nbytes, direction))
        return t + apis.MEMCPY_API_NS


def rt_api_for(cost: OpCost) -> str:
    """The runtime API launching the op's kernel (AI CPU kernels have their own)."""
    return "CpuKernelLaunch" if cost.task_type == "AI_CPU" else "KernelLaunch"

"""GE: turns a workload into a :class:`~msprof_py.runtime.program.Program` for one device.

Static models (``aclmdlLoadFromFile`` + ``aclmdlExecute``): at load GE launches every node's
task once (ACL ``aclmdlLoadFromFile`` > Model ``ModelLoad`` > Node ``launch`` > Runtime
``KernelLaunch`` > task_track, with unaging node_basic_info / tensor_info / context_id_info, a
graph_id_map, and after the last launch one fusion_op_info per fused op); the device replays those same (stream, task id) every
execution.  Each execution launches fresh tasks on the user stream: the input copies (H2D), the
dynamic-shape ops at the head/tail of the graph (aging node_basic_info, op_state dynamic) and the
output copies (D2H), inside a Model-level ``ModelExecute`` event pair whose requestId is the
iteration's index_id.

With several devices a training graph gets ``hcom_allReduce_`` ops on a communication stream:
the gradients are all-reduced in segments (:func:`msprof_py.runtime.hccl.gradient_segments`), each
launched after the backward op that completes it, so communication overlaps the rest of the
backward pass; the update ops wait for the last segment.  Cross-stream waits are EVENT_RECORD /
EVENT_WAIT tasks.

Single-op mode: every op is an ``aclnnXxxGetWorkspaceSize`` + ``aclnnXxx`` pair launching a fresh
task (aging records) every iteration.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from msprof_py.raw import (api_event, context_id_info, fusion_op_info, graph_id_map, memcpy_info,
                           node_basic_info, task_track, tensor_info)
from msprof_py.raw.common import (INVALID_U32, LEVEL_ACL, LEVEL_MODEL, LEVEL_NODE, LEVEL_RUNTIME, MODEL_EXECUTE,
                                  MODEL_GRAPH_ID_MAP, MODEL_LOAD, NODE_BASIC_INFO, NODE_CONTEXT_ID_INFO,
                                  NODE_FUSION_OP_INFO, NODE_LAUNCH, NODE_TENSOR_INFO)
from msprof_py.errors import WorkloadError
from msprof_py.raw.node_basic_info import GE_TASK_TYPE_IDS
from msprof_py.runtime import apis, hccl, records
from msprof_py.runtime.apis import Names
from msprof_py.runtime.cost import OpCost, TuneChoice, memcpy_ns, op_cost
from msprof_py.runtime.device import DeviceSpec
from msprof_py.runtime.graph import Op
from msprof_py.runtime.program import PATCH_INDEX, PATCH_TASK, HostRows, Program, TaskInfo, Template
from msprof_py.runtime.rts import (COMM_STREAM_OFFSET, FIRST_MODEL_STREAM, KERNEL_TYPES, MAX_MODEL_STREAM_TASKS,
                                   MIX_CONTEXT_ID, USER_STREAM)
from msprof_py.runtime.workloads import Workload

H2D, D2H = 1, 2
EVENT_TASK_NS = 600  # device time of an event record / wait task (beyond the wait itself)
GRAPH_ID_BASE = 1


def op_task_info(op: Op, cost: OpCost) -> TaskInfo:
    host_type, sqe = KERNEL_TYPES[cost.task_type]
    dt = op.inputs[0].dtype if op.inputs else (op.outputs[0].dtype if op.outputs else "FLOAT16")
    return TaskInfo(op.name, op.type, cost.task_type, host_type, sqe, cost, dt)


class _Host:
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


def _rt_api_for(cost: OpCost) -> str:
    return "CpuKernelLaunch" if cost.task_type == "AI_CPU" else "KernelLaunch"


def _costs(ops: list[Op], spec: DeviceSpec, tuning: dict[str, TuneChoice] | None) -> list[OpCost]:
    tuning = tuning or {}
    cache: dict[int, OpCost] = {}
    out = []
    for op in ops:
        out.append(cache.setdefault(id(op), op_cost(op, spec, tuning.get(op.name) or graph_kernel_choice(op))))
    return out


def graph_kernel_choice(op: Op) -> TuneChoice | None:
    """The kernel the graph ships with: op attr ``kernel_choice`` = ``{"format": .., "schedule":
    .., "impl": ..}`` (:class:`TuneChoice` values, e.g. ``{"impl": "naive"}`` for a deliberately
    slow kernel).  An AOE tuning of the op replaces it; None = GE's default."""
    kc = op.attrs.get("kernel_choice")
    if not kc:
        return None
    try:
        choice = TuneChoice(**kc)
        choice.factors(False)
    except (TypeError, ValueError):
        raise WorkloadError(f"op {op.name}: bad kernel_choice {kc!r} (keys format/schedule/impl, values as in "
                            f"TuneChoice)") from None
    return choice


def _split_dynamic(ops: list[Op]) -> tuple[list[Op], list[Op], list[Op]]:
    """Leading and trailing dynamic-shape ops run on the user stream every execution."""
    lo, hi = 0, len(ops)
    while lo < hi and ops[lo].dynamic:
        lo += 1
    while hi > lo and ops[hi - 1].dynamic:
        hi -= 1
    return ops[:lo], ops[lo:hi], ops[hi:]


def build_static(wl: Workload, device_id: int, devices: int, thread: int, t0: int, spec: DeviceSpec,
                 tuning: dict[str, TuneChoice] | None, names: Names, *, model_id: int | None = None,
                 user_stream: int = USER_STREAM, first_model_stream: int = FIRST_MODEL_STREAM,
                 plan_comm: Callable[[list[Op]], "Plan"] | None = None) -> tuple[Program, list, int]:
    """The static-model program for one device, its load-time host records and the load end (ns).

    ``model_id`` defaults to ``1 + device_id``: GE gives every model load of a process the next id of
    one process-wide counter from 1 (``ModelManager::GenModelId``), and the devices load in order;
    model streams are numbered from ``first_model_stream``.
    ``plan_comm`` (cluster runs, :mod:`msprof_py.runtime.cluster`): builds the model's node plan with
    its collectives from the body ops, instead of the data-parallel gradient all-reduce.
    """
    graph = wl.graph
    model_id = 1 + device_id if model_id is None else model_id
    head, body, tail = _split_dynamic(graph.ops)
    costs = dict(zip(map(id, graph.ops), _costs(graph.ops, spec, tuning)))
    plan = plan_comm(body) if plan_comm is not None else model_plan(wl, body, devices, device_id, spec)

    load = _Host(names, thread, device_id)
    model_tasks, t = _load_model(load, plan, costs, t0 + 3 * apis.US, first_model_stream,
                                 1 + max((op.stream for op in body), default=0))
    t = load.fusion_infos(t, graph.ops)
    load_end = t + 2 * apis.US
    load.add(api_event.FILE_TAG, True,
             records.api(LEVEL_MODEL, names.model(MODEL_LOAD), thread, t0 + apis.US, load_end - apis.US, model_id))
    names.model(MODEL_GRAPH_ID_MAP)
    load.add(graph_id_map.FILE_TAG, False, records.graph_id(thread, t0 + 2 * apis.US, names.h(graph.name),
                                                             GRAPH_ID_BASE + device_id, model_id))
    load.acl("aclmdlLoadFromFile", t0, load_end)
    load_records = [(r.tag, r.aging, r.records) for r in load.rows]

    tmpl, host, launch_end = _execution(graph, head, tail, plan, model_tasks, costs, names, thread, device_id,
                                        model_id, user_stream, spec)
    first_model = next((i for i, m in enumerate(tmpl.model_task) if m), None)
    main_stream = tmpl.stream[first_model] if first_model is not None else first_model_stream
    prog = Program(mode="static", training=wl.training, model_id=model_id, main_stream=main_stream,
                   tasks=tmpl, host=host.rows, launch_end_ns=launch_end, sync_stream=user_stream)
    return prog, load_records, load_end


Plan = list[tuple[str, object, object]]  # (kind "op"/"hccl", Op or AllReduce, logical stream)


def model_plan(wl: Workload, body: list[Op], devices: int, device_id: int, spec: DeviceSpec,
                make_allreduce: Callable[[int, int], "hccl.AllReduce"] | None = None) -> Plan:
    """The model's nodes in launch order, with the all-reduce segments of a data-parallel training
    graph inserted after the backward ops that complete their gradients.

    ``make_allreduce(nbytes, segment)`` builds a segment's collective (cluster runs: over the
    data-parallel group, hierarchical across nodes); default: a ring over the run's devices."""
    plan: Plan = [("op", op, op.stream) for op in body]
    if not (wl.training and devices > 1 and body):
        return plan
    graph = wl.graph
    # gradients of a backward op: its outputs shaped like a weight (dW, dGamma...)
    weight_shapes = {(w.shape, w.dtype) for w in graph.weights}
    bp_at = [i for i, op in enumerate(body) if op.phase == "bp"] or [len(body) - 1]
    grads = [sum(t.nbytes for t in body[i].outputs if (t.shape, t.dtype) in weight_shapes) for i in bp_at]
    segments = _segments(body, bp_at, grads, sum(w.nbytes for w in graph.weights))
    for n_seg, (k, nbytes) in reversed(list(enumerate(segments))):
        ar = (make_allreduce(nbytes, n_seg) if make_allreduce is not None
              else hccl.AllReduce.for_graph(graph, devices, device_id, spec, nbytes, n_seg))
        plan.insert(bp_at[k] + 1, ("hccl", ar, "comm"))
    for j, (kind, item, _) in enumerate(plan):
        if kind == "hccl":
            item.after = j - 1  # inserted right after the op that completes its gradients
    return plan


def _segments(body: list[Op], bp_at: list[int], grads: list[int], total: int) -> list[tuple[int, int]]:
    """GE's all-reduce fusion (:func:`hccl.gradient_segments`), except for backward ops with attr
    ``"allreduce": "alone"``: their gradient is all-reduced on its own right after them (fusion
    off for it: a documented fault for the small-all-reduce advice)."""
    alone = [k for k, i in enumerate(bp_at) if body[i].attrs.get("allreduce") == "alone" and grads[k] > 0]
    if not alone:
        return hccl.gradient_segments(grads, total)
    rest = [k for k in range(len(bp_at)) if k not in alone]
    rest_total = total - sum(grads[k] for k in alone)
    fused = hccl.gradient_segments([grads[k] for k in rest], rest_total) if rest and rest_total > 0 else []
    return sorted([(k, grads[k]) for k in alone] + [(rest[j], b) for j, b in fused])


class _Streams:
    """Physical model streams and their static task ids; GE moves a logical stream to a new
    physical one before it would wrap (replayed tasks must keep their ids)."""

    def __init__(self, first: int, logical_count: int) -> None:
        self.first = first
        self.phys: dict[object, int] = {}
        self.used: dict[int, int] = {}
        self.next_stream = first + logical_count
        self.comm = first + COMM_STREAM_OFFSET

    def new_task(self, logical: object) -> tuple[int, int, int | None]:
        """``(physical stream, task id, stream it was split from or None)`` of the next task."""
        s = self.phys.setdefault(logical, self.comm if logical == "comm" else self.first + int(logical))
        split_from = None
        if self.used.get(s, 0) >= MAX_MODEL_STREAM_TASKS:
            split_from = s
            s = self.phys[logical] = self.next_stream
            self.next_stream += 1
        tid = self.used.get(s, 0)
        self.used[s] = tid + 1
        return s, tid, split_from


def _load_model(load: _Host, plan: Plan, costs: dict, t: int, first_stream: int, logical_count: int
                ) -> tuple[list[tuple], int]:
    """Launch every node once (with GE's event record/wait tasks between streams) at host time ``t``.

    Returns the model's tasks ``(kind, item, stream, task id, split from, plan index)`` in launch
    order and the host time at the end.
    """
    waits = _cross_stream_waits(plan)
    recorded = {p for ws in waits.values() for p in ws}
    streams = _Streams(first_stream, logical_count)
    tasks: list[tuple] = []
    for j, (kind, item, logical) in enumerate(plan):
        for p in waits.get(j, ()):
            s, tid, split_from = streams.new_task(logical)
            t = load.event(t, "EVENT_WAIT", s, tid) + apis.OP_GAP_NS
            tasks.append(("EVENT_WAIT", p, s, tid, split_from, j))
        if kind == "op":
            cost = costs[id(item)]
            s, tid, split_from = streams.new_task(logical)
            t = load.node_launch(t, item, cost, aging=False, dynamic=item.dynamic, rt_api=_rt_api_for(cost),
                                 stream=s, task_id=tid, batch=0) + apis.OP_GAP_NS
            tasks.append(("op", item, s, tid, split_from, j))
        else:
            subs = [streams.new_task(logical) for _ in item.subtasks]
            t = item.load_records(load, t, subs[0][0], [x[1] for x in subs]) + apis.OP_GAP_NS
            for sub, (s, tid, split_from) in zip(item.subtasks, subs):
                tasks.append(("hccl", sub, s, tid, split_from, j))
        if j in recorded:
            s, tid, split_from = streams.new_task(logical)
            t = load.event(t, "EVENT_RECORD", s, tid) + apis.OP_GAP_NS
            tasks.append(("EVENT_RECORD", j, s, tid, split_from, j))
    return tasks, t


def _execution(graph, head: list[Op], tail: list[Op], plan: Plan, model_tasks: list[tuple], costs: dict,
               names: Names, thread: int, device_id: int, model_id: int, user_stream: int, spec: DeviceSpec
               ) -> tuple[Template, "_Host", int]:
    """One ``aclmdlExecute``: the host template and the device-task template (input copies and
    head dynamic ops, the model's replayed tasks, tail dynamic ops and output copies)."""
    tmpl = Template()
    host = _Host(names, thread, device_id)
    c = apis.ACL_ENTER_NS
    host.add(api_event.FILE_TAG, True,
             records.event(LEVEL_MODEL, names.model(MODEL_EXECUTE), thread, c, 0, model_id), PATCH_INDEX)
    c += apis.US
    for x in graph.inputs:
        ref = tmpl.add(stream=user_stream, fresh=True, dur_ns=memcpy_ns(x.nbytes, spec, "h2d"),
                       submit_ns=c + apis.TASK_TRACK_AT_NS, info=_memcpy_info())
        c = host.memcpy(c, user_stream, x.nbytes, H2D, ref) + apis.OP_GAP_NS
    for op in head:
        c = _fresh_op(tmpl, host, op, costs[id(op)], c, user_stream)
    pre_model_last = len(tmpl) - 1
    host.rt_api("ModelExecute", c, c + apis.MODEL_EXECUTE_API_NS)
    submit = c + apis.MODEL_SUBMIT_AT_NS
    c += apis.MODEL_EXECUTE_API_NS + apis.OP_GAP_NS

    stream_last: dict[int, int] = {}
    record_task: dict[int, int] = {}  # plan index -> template index of its EVENT_RECORD
    hccl_rank = {j: n for n, j in enumerate(j for j, (kind, _, _) in enumerate(plan) if kind == "hccl")}
    for kind, item, s, tid, split_from, j in model_tasks:
        deps: list[int] = []
        if s not in stream_last:
            if pre_model_last >= 0:
                deps.append(pre_model_last)
            if split_from is not None:
                deps.append(stream_last[split_from])
        if kind == "op":
            cost = costs[id(item)]
            i = tmpl.add(stream=s, fresh=False, dur_ns=cost.duration_ns, submit_ns=submit,
                         info=op_task_info(item, cost), task_id=tid, model_task=True, phase=item.phase, deps=deps,
                         context_id=_context(cost))
        elif kind == "hccl":
            i = tmpl.add(stream=s, fresh=False, dur_ns=item.dur_ns, submit_ns=submit, info=item.info, task_id=tid,
                         model_task=True, phase=f"allreduce{hccl_rank[j]}", deps=deps, barrier=item.barrier,
                         group=item.group)
        else:  # EVENT_RECORD after the producer / EVENT_WAIT for a producer's record
            if kind == "EVENT_WAIT":
                deps.append(record_task[item])
            i = tmpl.add(stream=s, fresh=False, dur_ns=EVENT_TASK_NS, submit_ns=submit, info=_event_info(kind),
                         task_id=tid, model_task=True, deps=deps)
            if kind == "EVENT_RECORD":
                record_task[item] = i
        stream_last[s] = i
    model_end_tasks = sorted(stream_last.values())
    first_after = True  # the first task after the model waits for all its streams
    for op in tail:
        c = _fresh_op(tmpl, host, op, costs[id(op)], c, user_stream, deps=model_end_tasks if first_after else [])
        first_after = False
    for x in graph.outputs:
        ref = tmpl.add(stream=user_stream, fresh=True, dur_ns=memcpy_ns(x.nbytes, spec, "d2h"),
                       submit_ns=c + apis.TASK_TRACK_AT_NS, info=_memcpy_info(),
                       deps=model_end_tasks if first_after else None)
        first_after = False
        c = host.memcpy(c, user_stream, x.nbytes, D2H, ref) + apis.OP_GAP_NS
    host.add(api_event.FILE_TAG, True,
             records.event(LEVEL_MODEL, names.model(MODEL_EXECUTE), thread, c, 0, model_id), PATCH_INDEX)
    c += apis.ACL_ENTER_NS
    host.acl("aclmdlExecute", 0, c)
    return tmpl, host, c + apis.OP_GAP_NS


def build_single_op(wl: Workload, device_id: int, thread: int, spec: DeviceSpec,
                    tuning: dict[str, TuneChoice] | None, names: Names, *, user_stream: int = USER_STREAM
                    ) -> Program:
    """Every op launched through ``aclnnXxxGetWorkspaceSize`` + ``aclnnXxx`` each iteration."""
    costs = _costs(wl.graph.ops, spec, tuning)
    tmpl = Template()
    host = _Host(names, thread, device_id)
    c = 0
    for op, cost in zip(wl.graph.ops, costs):
        api = str(op.attrs.get("api", f"aclnn{op.type}"))
        host.acl(f"{api}GetWorkspaceSize", c, c + apis.GET_WORKSPACE_NS)
        c += apis.GET_WORKSPACE_NS + apis.OP_GAP_NS
        begin = c
        c = _fresh_op(tmpl, host, op, cost, c + apis.ACL_ENTER_NS, user_stream, dynamic=True)
        host.acl(api, begin, c)
        c += apis.OP_GAP_NS
    return Program(mode="single_op", training=False, model_id=INVALID_U32, main_stream=user_stream, tasks=tmpl,
                   host=host.rows, launch_end_ns=c, sync_stream=user_stream)


def build_memcpy(nbytes: int, direction: int, device_id: int, thread: int, spec: DeviceSpec, names: Names, *,
                 stream: int = USER_STREAM, acl_api: str = "aclrtMemcpyAsync") -> Program:
    """One ``aclrtMemcpy(Async)``: a fresh MEMCPY_ASYNC task (SDMA) on ``stream``."""
    tmpl = Template()
    host = _Host(names, thread, device_id)
    c = apis.ACL_ENTER_NS
    kind = {H2D: "h2d", D2H: "d2h"}.get(direction, "d2d")
    ref = tmpl.add(stream=stream, fresh=True, dur_ns=memcpy_ns(nbytes, spec, kind),
                   submit_ns=c + apis.TASK_TRACK_AT_NS, info=_memcpy_info())
    c = host.memcpy(c, stream, nbytes, direction, ref) + apis.ACL_ENTER_NS
    host.acl(acl_api, 0, c)
    return Program(mode="single_op", training=False, model_id=INVALID_U32, main_stream=stream, tasks=tmpl,
                   host=host.rows, launch_end_ns=c, sync_stream=stream)


def _fresh_op(tmpl: Template, host: _Host, op: Op, cost: OpCost, c: int, stream: int, deps: list[int] | None = None,
              dynamic: bool = True) -> int:
    prep = recompile_ns(op) if dynamic else 0
    submit = c + prep + apis.RT_LAUNCH_AT_NS + apis.TASK_TRACK_AT_NS
    ref = tmpl.add(stream=stream, fresh=True, dur_ns=cost.duration_ns, submit_ns=submit, info=op_task_info(op, cost),
                   phase=op.phase, deps=deps, context_id=_context(cost))
    return host.node_launch(c, op, cost, aging=True, dynamic=dynamic, rt_api=_rt_api_for(cost), stream=stream,
                            task_id=0, batch=0, ref=ref, prep_ns=prep) + apis.OP_GAP_NS


def recompile_ns(op: Op) -> int:
    """Host time GE spends on a dynamic-shape op before every launch (shape inference, tiling,
    compile on a cache miss): op attr ``recompile_us`` (default 0; a documented fault for the
    dynamic-shape advice, e.g. shapes that change every execution so the kernel cache misses)."""
    v = op.attrs.get("recompile_us", 0)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 3.6e9:
        raise WorkloadError(f"op {op.name}: recompile_us wants 0..3.6e9 microseconds, got {v!r}")
    return int(round(v * apis.US))


def _cross_stream_waits(plan: list[tuple[str, object, object]]) -> dict[int, list[int]]:
    """Plan index -> plan indices it must wait for on another stream (data edges across streams,
    each all-reduce segment after the backward op completing its gradients, the first update op
    after the last segment)."""
    producer: dict[str, int] = {}
    waits: dict[int, list[int]] = {}
    hccl_at = max((j for j, (kind, _, _) in enumerate(plan) if kind == "hccl"), default=None)
    first_update = True
    for j, (kind, item, logical) in enumerate(plan):
        need: list[int] = []
        if kind == "op":
            for x in item.inputs:
                p = producer.get(x.name)
                if p is not None and plan[p][2] != logical:
                    need.append(p)
            if item.phase == "update" and hccl_at is not None and first_update and j > hccl_at:
                need.append(hccl_at)
                first_update = False
            for x in item.outputs:
                producer[x.name] = j
        elif item.after >= 0:
            need.append(item.after)
        if need:
            waits[j] = sorted(set(need))
    return waits


def _event_info(kind: str) -> TaskInfo:
    return TaskInfo(kind, kind, kind, kind, f"{kind}_SQE")


def _context(cost: OpCost) -> int:
    return MIX_CONTEXT_ID if cost.task_type in ("MIX_AIV", "MIX_AIC") else INVALID_U32


def _memcpy_info() -> TaskInfo:
    return TaskInfo("MEMCPY_ASYNC", "MEMCPY_ASYNC", "MEMCPY_ASYNC", "MEMCPY_ASYNC", "SDMA_SQE")


"""Static models (``aclmdlLoadFromFile`` + ``aclmdlExecute``): the load, which launches every
node's task once on the model streams, and the execution template replayed every iteration
(input copies, head dynamic ops, the model's tasks, tail dynamic ops, output copies)."""
from __future__ import annotations

from typing import Callable

from msprof_py.raw import api_event, graph_id_map
from msprof_py.raw.common import LEVEL_MODEL, MODEL_EXECUTE, MODEL_GRAPH_ID_MAP, MODEL_LOAD
from msprof_py.runtime import apis, records
from msprof_py.runtime.apis import Names
from msprof_py.runtime.cost import TuneChoice, memcpy_ns
from msprof_py.runtime.device import DeviceSpec
from msprof_py.runtime.ge.host import HostRecords, rt_api_for
from msprof_py.runtime.ge.plan import Plan, cross_stream_waits, model_plan
from msprof_py.runtime.ge.tasks import (D2H, EVENT_TASK_NS, H2D, event_task_info, fresh_op, memcpy_task_info,
                                        op_costs, op_task_info, task_context_id)
from msprof_py.runtime.graph import Op
from msprof_py.runtime.program import PATCH_INDEX, Program, Template
from msprof_py.runtime.rts import COMM_STREAM_OFFSET, FIRST_MODEL_STREAM, MAX_MODEL_STREAM_TASKS, USER_STREAM
from msprof_py.runtime.workloads import Workload

GRAPH_ID_BASE = 1


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
    costs = dict(zip(map(id, graph.ops), op_costs(graph.ops, spec, tuning)))
    plan = plan_comm(body) if plan_comm is not None else model_plan(wl, body, devices, device_id, spec)

    load = HostRecords(names, thread, device_id)
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


def _load_model(load: HostRecords, plan: Plan, costs: dict, t: int, first_stream: int, logical_count: int
                ) -> tuple[list[tuple], int]:
    """Launch every node once (with GE's event record/wait tasks between streams) at host time ``t``.

    Returns the model's tasks ``(kind, item, stream, task id, split from, plan index)`` in launch
    order and the host time at the end.
    """
    waits = cross_stream_waits(plan)
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
            t = load.node_launch(t, item, cost, aging=False, dynamic=item.dynamic, rt_api=rt_api_for(cost),
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
               ) -> tuple[Template, "HostRecords", int]:
    """One ``aclmdlExecute``: the host template and the device-task template (input copies and
    head dynamic ops, the model's replayed tasks, tail dynamic ops and output copies)."""
    tmpl = Template()
    host = HostRecords(names, thread, device_id)
    c = apis.ACL_ENTER_NS
    host.add(api_event.FILE_TAG, True,
             records.event(LEVEL_MODEL, names.model(MODEL_EXECUTE), thread, c, 0, model_id), PATCH_INDEX)
    c += apis.US
    for x in graph.inputs:
        ref = tmpl.add(stream=user_stream, fresh=True, dur_ns=memcpy_ns(x.nbytes, spec, "h2d"),
                       submit_ns=c + apis.TASK_TRACK_AT_NS, info=memcpy_task_info())
        c = host.memcpy(c, user_stream, x.nbytes, H2D, ref) + apis.OP_GAP_NS
    for op in head:
        c = fresh_op(tmpl, host, op, costs[id(op)], c, user_stream)
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
                         context_id=task_context_id(cost))
        elif kind == "hccl":
            i = tmpl.add(stream=s, fresh=False, dur_ns=item.dur_ns, submit_ns=submit, info=item.info, task_id=tid,
                         model_task=True, phase=f"allreduce{hccl_rank[j]}", deps=deps, barrier=item.barrier,
                         group=item.group)
        else:  # EVENT_RECORD after the producer / EVENT_WAIT for a producer's record
            if kind == "EVENT_WAIT":
                deps.append(record_task[item])
            i = tmpl.add(stream=s, fresh=False, dur_ns=EVENT_TASK_NS, submit_ns=submit, info=event_task_info(kind),
                         task_id=tid, model_task=True, deps=deps)
            if kind == "EVENT_RECORD":
                record_task[item] = i
        stream_last[s] = i
    model_end_tasks = sorted(stream_last.values())
    first_after = True  # the first task after the model waits for all its streams
    for op in tail:
        c = fresh_op(tmpl, host, op, costs[id(op)], c, user_stream, deps=model_end_tasks if first_after else [])
        first_after = False
    for x in graph.outputs:
        ref = tmpl.add(stream=user_stream, fresh=True, dur_ns=memcpy_ns(x.nbytes, spec, "d2h"),
                       submit_ns=c + apis.TASK_TRACK_AT_NS, info=memcpy_task_info(),
                       deps=model_end_tasks if first_after else None)
        first_after = False
        c = host.memcpy(c, user_stream, x.nbytes, D2H, ref) + apis.OP_GAP_NS
    host.add(api_event.FILE_TAG, True,
             records.event(LEVEL_MODEL, names.model(MODEL_EXECUTE), thread, c, 0, model_id), PATCH_INDEX)
    c += apis.ACL_ENTER_NS
    host.acl("aclmdlExecute", 0, c)
    return tmpl, host, c + apis.OP_GAP_NS

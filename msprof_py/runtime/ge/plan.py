"""A static model's node plan: its ops in launch order on their logical streams, with the
data-parallel gradient all-reduce segments inserted after the backward ops that complete them,
and the cross-stream waits GE adds between them."""
from __future__ import annotations

from typing import Callable

from msprof_py.runtime import hccl
from msprof_py.runtime.device import DeviceSpec
from msprof_py.runtime.graph import Op
from msprof_py.runtime.workloads import Workload

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


def cross_stream_waits(plan: list[tuple[str, object, object]]) -> dict[int, list[int]]:
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

"""What GE needs per task: op costs (with AOE tunings or the graph's own kernel choice), the
task info of op / event / copy tasks, and launching one fresh (non-replayed) op task with its
host records.  Durations and times are simulator ns."""
from __future__ import annotations

from msprof_py.errors import WorkloadError
from msprof_py.raw.common import INVALID_U32
from msprof_py.runtime import apis
from msprof_py.runtime.cost import OpCost, TuneChoice, op_cost
from msprof_py.runtime.device import DeviceSpec
from msprof_py.runtime.ge.host import HostRecords, rt_api_for
from msprof_py.runtime.graph import Op
from msprof_py.runtime.program import TaskInfo, Template
from msprof_py.runtime.rts import KERNEL_TYPES, MIX_CONTEXT_ID

H2D, D2H = 1, 2  # memcpy_info direction codes: host to device, device to host (3: device to device)


EVENT_TASK_NS = 600  # device time of an event record / wait task (beyond the wait itself)


def op_task_info(op: Op, cost: OpCost) -> TaskInfo:
    host_type, sqe = KERNEL_TYPES[cost.task_type]
    dt = op.inputs[0].dtype if op.inputs else (op.outputs[0].dtype if op.outputs else "FLOAT16")
    return TaskInfo(op.name, op.type, cost.task_type, host_type, sqe, cost, dt)


def op_costs(ops: list[Op], spec: DeviceSpec, tuning: dict[str, TuneChoice] | None) -> list[OpCost]:
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


def fresh_op(tmpl: Template, host: HostRecords, op: Op, cost: OpCost, c: int, stream: int,
             deps: list[int] | None = None, dynamic: bool = True) -> int:
    """Launch ``op`` as a fresh task on ``stream`` at host time ``c`` (ns): its device task in ``tmpl``
    (after ``deps``), its host records in ``host``; returns the host time after the launch."""
    prep = recompile_ns(op) if dynamic else 0
    submit = c + prep + apis.RT_LAUNCH_AT_NS + apis.TASK_TRACK_AT_NS
    ref = tmpl.add(stream=stream, fresh=True, dur_ns=cost.duration_ns, submit_ns=submit, info=op_task_info(op, cost),
                   phase=op.phase, deps=deps, context_id=task_context_id(cost))
    return host.node_launch(c, op, cost, aging=True, dynamic=dynamic, rt_api=rt_api_for(cost), stream=stream,
                            task_id=0, batch=0, ref=ref, prep_ns=prep) + apis.OP_GAP_NS


def recompile_ns(op: Op) -> int:
    """Host time GE spends on a dynamic-shape op before every launch (shape inference, tiling,
    compile on a cache miss): op attr ``recompile_us`` (default 0; a documented fault for the
    dynamic-shape advice, e.g. shapes that change every execution so the kernel cache misses)."""
    v = op.attrs.get("recompile_us", 0)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 3.6e9:
        raise WorkloadError(f"op {op.name}: recompile_us wants 0..3.6e9 microseconds, got {v!r}")
    return int(round(v * apis.US))


def event_task_info(kind: str) -> TaskInfo:
    return TaskInfo(kind, kind, kind, kind, f"{kind}_SQE")


def task_context_id(cost: OpCost) -> int:
    return MIX_CONTEXT_ID if cost.task_type in ("MIX_AIV", "MIX_AIC") else INVALID_U32


def memcpy_task_info() -> TaskInfo:
    return TaskInfo("MEMCPY_ASYNC", "MEMCPY_ASYNC", "MEMCPY_ASYNC", "MEMCPY_ASYNC", "SDMA_SQE")

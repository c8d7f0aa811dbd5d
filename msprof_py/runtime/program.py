"""What one device does per iteration: the device-task template and the host-record template.

GE/ACL build a :class:`Program` once (:mod:`msprof_py.runtime.ge`); the simulator replays it
``iterations`` times per device (:mod:`msprof_py.runtime.sim`).  Host times are ns offsets from
the iteration's host start ``h0``; device tasks carry the offset at which the host submitted
them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from msprof_py.raw.common import INVALID_U32

# per-row patches applied to the host template when it is replayed
PATCH_NONE = 0
PATCH_TASK = 1  # a task_track of a fresh task: task_id/batch_id come from the iteration's allocation
PATCH_INDEX = 2  # a Model-level event: requestId = the iteration's index_id


@dataclass
class HostRows:
    """Host records of one kind for one iteration (timestamps = ns offsets from h0)."""

    tag: str
    aging: bool
    records: np.ndarray
    patch: int = PATCH_NONE
    task_ref: np.ndarray | None = None  # PATCH_TASK: template task index per row


@dataclass
class TaskInfo:
    op_name: str
    op_type: str
    task_type: str  # GE task type (AI_CORE, ..., HCCL, MEMCPY_ASYNC)
    host_task_type: str  # runtime task type (KERNEL_AICORE, MEMCPY_ASYNC, NOTIFY_WAIT ...)
    sqe_type: str  # STARS SQE type (AI_CORE, AIV_SQE, SDMA_SQE ...)
    cost: Any = None  # the op's OpCost (kernel tasks): the PMU model's input
    dtype: str = "FLOAT16"  # the op's data type (PMU instruction mix)


@dataclass
class Template:
    """``T`` device tasks per iteration, in launch order (columns)."""

    stream: list[int] = field(default_factory=list)
    fresh: list[bool] = field(default_factory=list)  # launched every iteration (new task ids)
    task_id: list[int] = field(default_factory=list)  # static tasks: id given at load (-1 fresh)
    batch_id: list[int] = field(default_factory=list)
    context_id: list[int] = field(default_factory=list)
    dur_ns: list[float] = field(default_factory=list)  # before jitter
    submit_ns: list[int] = field(default_factory=list)  # host submit offset from h0
    info: list[TaskInfo] = field(default_factory=list)
    model_task: list[bool] = field(default_factory=list)
    phase: list[str] = field(default_factory=list)
    deps: dict[int, list[int]] = field(default_factory=dict)
    barriers: set[int] = field(default_factory=set)
    barrier_group: dict[int, tuple[int, ...]] = field(default_factory=dict)  # barrier -> member ranks

    def add(self, *, stream: int, fresh: bool, dur_ns: float, submit_ns: int, info: TaskInfo, task_id: int = -1,
            batch_id: int = 0, context_id: int = INVALID_U32, model_task: bool = False, phase: str = "",
            deps: list[int] | None = None, barrier: bool = False, group: tuple[int, ...] | None = None) -> int:
        i = len(self.stream)
        self.stream.append(stream)
        self.fresh.append(fresh)
        self.task_id.append(task_id)
        self.batch_id.append(batch_id)
        self.context_id.append(context_id)
        self.dur_ns.append(dur_ns)
        self.submit_ns.append(submit_ns)
        self.info.append(info)
        self.model_task.append(model_task)
        self.phase.append(phase)
        if deps:
            self.deps[i] = sorted(set(deps))
        if barrier:
            self.barriers.add(i)
            if group is not None:
                self.barrier_group[i] = group
        return i

    def __len__(self) -> int:
        return len(self.stream)


@dataclass
class Program:
    """One device's per-iteration work: the device-task template and the host-record template
    (a static model's load-time records are built once by :func:`msprof_py.runtime.ge.build_static`)."""

    mode: str  # "static" | "single_op"
    training: bool
    model_id: int  # 4294967295 in single-op mode
    main_stream: int
    tasks: Template
    host: list[HostRows]
    launch_end_ns: int  # host offset where the iteration's launches end and the synchronize begins
    sync_stream: int


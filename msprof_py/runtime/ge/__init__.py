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

One module per part: :mod:`.plan` (a model's node plan and cross-stream waits), :mod:`.static`
(load and execution of a static model), :mod:`.single_op` (aclnn launches, copies),
:mod:`.tasks` (op costs, task infos, one fresh op launch) and :mod:`.host` (the host records).
"""
from __future__ import annotations

from msprof_py.runtime.ge.plan import Plan, model_plan
from msprof_py.runtime.ge.single_op import build_memcpy, build_single_op
from msprof_py.runtime.ge.static import build_static
from msprof_py.runtime.ge.tasks import D2H, H2D, graph_kernel_choice, op_task_info, recompile_ns

__all__ = ["D2H", "H2D", "Plan", "build_memcpy", "build_single_op", "build_static", "graph_kernel_choice",
           "model_plan", "op_task_info", "recompile_ns"]

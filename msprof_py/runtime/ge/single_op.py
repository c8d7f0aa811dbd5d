"""Single-operator launches: a workload's ops each through ``aclnnXxxGetWorkspaceSize`` +
``aclnnXxx`` (fresh tasks and aging records every iteration), and one ``aclrtMemcpy(Async)``."""
from __future__ import annotations

from msprof_py.raw.common import INVALID_U32
from msprof_py.runtime import apis
from msprof_py.runtime.apis import Names
from msprof_py.runtime.cost import TuneChoice, memcpy_ns
from msprof_py.runtime.device import DeviceSpec
from msprof_py.runtime.ge.host import HostRecords
from msprof_py.runtime.ge.tasks import D2H, H2D, fresh_op, memcpy_task_info, op_costs
from msprof_py.runtime.program import Program, Template
from msprof_py.runtime.rts import USER_STREAM
from msprof_py.runtime.workloads import Workload


def build_single_op(wl: Workload, device_id: int, thread: int, spec: DeviceSpec,
                    tuning: dict[str, TuneChoice] | None, names: Names, *, user_stream: int = USER_STREAM
                    ) -> Program:
    """Every op launched through ``aclnnXxxGetWorkspaceSize`` + ``aclnnXxx`` each iteration."""
    costs = op_costs(wl.graph.ops, spec, tuning)
    tmpl = Template()
    host = HostRecords(names, thread, device_id)
    c = 0
    for op, cost in zip(wl.graph.ops, costs):
        api = str(op.attrs.get("api", f"aclnn{op.type}"))
        host.acl(f"{api}GetWorkspaceSize", c, c + apis.GET_WORKSPACE_NS)
        c += apis.GET_WORKSPACE_NS + apis.OP_GAP_NS
        begin = c
        c = fresh_op(tmpl, host, op, cost, c + apis.ACL_ENTER_NS, user_stream, dynamic=True)
        host.acl(api, begin, c)
        c += apis.OP_GAP_NS
    return Program(mode="single_op", training=False, model_id=INVALID_U32, main_stream=user_stream, tasks=tmpl,
                   host=host.rows, launch_end_ns=c, sync_stream=user_stream)


def build_memcpy(nbytes: int, direction: int, device_id: int, thread: int, spec: DeviceSpec, names: Names, *,
                 stream: int = USER_STREAM, acl_api: str = "aclrtMemcpyAsync") -> Program:
    """One ``aclrtMemcpy(Async)``: a fresh MEMCPY_ASYNC task (SDMA) on ``stream``."""
    tmpl = Template()
    host = HostRecords(names, thread, device_id)
    c = apis.ACL_ENTER_NS
    kind = {H2D: "h2d", D2H: "d2h"}.get(direction, "d2d")
    ref = tmpl.add(stream=stream, fresh=True, dur_ns=memcpy_ns(nbytes, spec, kind),
                   submit_ns=c + apis.TASK_TRACK_AT_NS, info=memcpy_task_info())
    c = host.memcpy(c, stream, nbytes, direction, ref) + apis.ACL_ENTER_NS
    host.acl(acl_api, 0, c)
    return Program(mode="single_op", training=False, model_id=INVALID_U32, main_stream=stream, tasks=tmpl,
                   host=host.rows, launch_end_ns=c, sync_stream=stream)

"""API type tables (what type_info_dic names) and host CPU costs of each layer's calls.

ACL types are ``family << 16 | id`` (AclApiTag families from :mod:`msprof_py.raw.common`).
Host costs are in ns and model a fast x86 host driving CANN; they decide how far the host thread
runs ahead of the device.
"""
from __future__ import annotations

from msprof_py.raw.common import (ACL_MODEL, ACL_NN, ACL_OTHERS, ACL_RTS, HCCL_MASTER, LEVEL_ACL, LEVEL_HCCL,
                                  LEVEL_MODEL, LEVEL_NODE, LEVEL_RUNTIME, MODEL_EXECUTE, MODEL_GRAPH_ID_MAP,
                                  MODEL_INPUT_COPY, MODEL_LOAD, MODEL_OUTPUT_COPY, NODE_BASIC_INFO,
                                  NODE_CONTEXT_ID_INFO, NODE_FUSION_OP_INFO, NODE_HCCL_OP_INFO, NODE_LAUNCH,
                                  NODE_TENSOR_INFO)
from msprof_py.raw.task_track import RUNTIME_TASK_TYPES
from msprof_py.runtime.hooks import ProfilerHooks
from msprof_py.runtime.records import HCCL_INFO_TYPE
from msprof_py.runtime.rts import MEMCPY_INFO_TYPE, RUNTIME_API_TYPES, TASK_TRACK_TYPE

ACL_APIS: dict[str, int] = {
    "aclInit": ACL_OTHERS << 16 | 1, "aclFinalize": ACL_OTHERS << 16 | 2,
    "aclrtSetDevice": ACL_RTS << 16 | 1, "aclrtResetDevice": ACL_RTS << 16 | 2,
    "aclrtCreateStream": ACL_RTS << 16 | 3, "aclrtDestroyStream": ACL_RTS << 16 | 4,
    "aclrtSynchronizeStream": ACL_RTS << 16 | 5, "aclrtMemcpy": ACL_RTS << 16 | 6,
    "aclrtMemcpyAsync": ACL_RTS << 16 | 7, "aclrtMalloc": ACL_RTS << 16 | 8, "aclrtFree": ACL_RTS << 16 | 9,
    "aclrtCreateContext": ACL_RTS << 16 | 10,
    "aclmdlLoadFromFile": ACL_MODEL << 16 | 1, "aclmdlExecute": ACL_MODEL << 16 | 2,
    "aclmdlUnload": ACL_MODEL << 16 | 3, "aclmdlExecuteAsync": ACL_MODEL << 16 | 4,
}
ACLNN_FIRST_ID = 1

MODEL_TYPES = {MODEL_GRAPH_ID_MAP: "graph_id_map", MODEL_EXECUTE: "ModelExecute", MODEL_LOAD: "ModelLoad",
               MODEL_INPUT_COPY: "InputCopy", MODEL_OUTPUT_COPY: "OutputCopy"}
NODE_TYPES = {NODE_BASIC_INFO: "node_basic_info", NODE_TENSOR_INFO: "tensor_info",
              NODE_FUSION_OP_INFO: "fusion_op_info", NODE_CONTEXT_ID_INFO: "context_id_info",
              NODE_LAUNCH: "launch", NODE_HCCL_OP_INFO: "hccl_op_info"}

US = 1000
# host CPU time per call (ns)
ACL_ENTER_NS = 1 * US  # ACL entry/exit bookkeeping around the layer below
NODE_LAUNCH_NS = 11 * US  # GE Node@launch of one op (tiling, args, then the runtime launch)
NODE_INFO_AT_NS = 800  # node_basic_info / tensor_info are reported this far into Node@launch
RT_LAUNCH_AT_NS = 2 * US  # the runtime launch starts this far into Node@launch
TASK_TRACK_AT_NS = 1 * US  # task_track is reported this far into the runtime API
MEMCPY_API_NS = 5 * US
MODEL_EXECUTE_API_NS = 8 * US
MODEL_SUBMIT_AT_NS = 6 * US
SYNC_RETURN_NS = 3 * US  # from the device finishing to aclrtSynchronizeStream returning
GET_WORKSPACE_NS = 3 * US
OP_GAP_NS = 1 * US  # host time between two calls
FUSION_INFO_NS = 200  # host time between two fusion_op_info reports at model load


class Names:
    """Hash ids (hash_dic) and type names (type_info_dic) through the hooks, memoised."""

    def __init__(self, hooks: ProfilerHooks) -> None:
        self.hooks = hooks
        self.on = bool(hooks.enabled)
        self._hash: dict[str, int] = {}
        self._types: set[tuple[int, int]] = set()
        self._aclnn: dict[str, int] = {}

    def h(self, name: str) -> int:
        if not self.on:
            return 0
        v = self._hash.get(name)
        if v is None:
            v = self._hash[name] = int(self.hooks.hash_id(name))
        return v

    def t(self, level: int, type_id: int, name: str) -> int:
        if self.on and (level, type_id) not in self._types:
            self._types.add((level, type_id))
            self.hooks.register_type(level, type_id, name)
        return type_id

    def acl(self, name: str) -> int:
        if name not in ACL_APIS:
            if name not in self._aclnn:
                self._aclnn[name] = ACL_NN << 16 | (ACLNN_FIRST_ID + len(self._aclnn))
            return self.t(LEVEL_ACL, self._aclnn[name], name)
        return self.t(LEVEL_ACL, ACL_APIS[name], name)

    def model(self, type_id: int) -> int:
        return self.t(LEVEL_MODEL, type_id, MODEL_TYPES[type_id])

    def node(self, type_id: int) -> int:
        return self.t(LEVEL_NODE, type_id, NODE_TYPES[type_id])

    def rt_api(self, name: str) -> int:
        return self.t(LEVEL_RUNTIME, RUNTIME_API_TYPES[name], name)

    def rt_task(self, name: str) -> int:
        """A runtime task type: the id task_track carries (resolved through type_info_dic)."""
        tid = {v: k for k, v in RUNTIME_TASK_TYPES.items()}[name]
        return self.t(LEVEL_RUNTIME, tid, name)

    def register_record_types(self) -> None:
        """The header types of the compact/additional records the simulator writes."""
        self.t(LEVEL_RUNTIME, TASK_TRACK_TYPE, "task_track")
        self.t(LEVEL_RUNTIME, MEMCPY_INFO_TYPE, "memcpy_info")
        self.t(LEVEL_HCCL, HCCL_INFO_TYPE, "hccl_info")
        self.t(LEVEL_HCCL, HCCL_MASTER, "master")
        for name in RUNTIME_TASK_TYPES.values():  # the runtime registers its whole task type table
            self.rt_task(name)
        for k in MODEL_TYPES:
            self.model(k)
        for k in NODE_TYPES:
            self.node(k)

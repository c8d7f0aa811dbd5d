"""fusion_op_info placement: reported once per fused op at model load, inside ModelLoad but outside
every Node@launch (msprof's call tree would otherwise attach it to the launch and reject it:
"Unsupported additional type: FusionOpInfoDto in node level")."""
from __future__ import annotations

import numpy as np
import pytest

from msprof_py.raw import api_event, fusion_op_info
from msprof_py.raw.common import EVENT_FLAG, LEVEL_MODEL, LEVEL_NODE, MODEL_LOAD, NODE_LAUNCH
from msprof_py.runtime.clock import SimClock
from msprof_py.runtime.sim import run
from msprof_py.runtime.workloads import Workload, get_workload
from msprof_py.runtime.workloads._builder import GraphBuilder
from tests.runtime.conftest import RecordingHooks


def _intervals(api: np.ndarray, level: int, type_: int) -> np.ndarray:
    sel = api[(api["level"] == level) & (api["type"] == type_) & (api["end"] != EVENT_FLAG)]
    return sel[["thread_id", "timestamp", "end"]]


def _covered(points: np.ndarray, iv: np.ndarray) -> np.ndarray:
    """Per point: is it inside ``[begin, end]`` of any interval of its own thread (naive all-pairs)."""
    same = points["thread_id"][:, None] == iv["thread_id"][None, :]
    t = points["timestamp"][:, None]
    return (same & (iv["timestamp"][None, :] <= t) & (t <= iv["end"][None, :])).any(axis=1)


def _dynamic_fused_graph() -> Workload:
    """A static model whose head op is dynamic-shape (launched every execution) and fused."""
    b = GraphBuilder("dyn_fused")
    x = b.input("x", (64, 256))
    w = b.weight("w", (256, 256))
    y = b.like("m/MatMulV2", "MatMulV2", [x, w], x, dynamic=True, fused_from=("m/MatMul", "m/BiasAdd"))
    z = b.like("m/Relu", "Relu", [y], y)
    z = b.like("m/Add", "Add", [z, y], z, fused_from=("m/Add", "m/Cast"))
    b.output(z)
    return Workload("dyn_fused", b.graph, "static", False)


@pytest.mark.parametrize("target,devices,iterations", [("resnet50", 2, 3), ("dyn_fused", 1, 3)])
def test_fusion_op_info_outside_node_launches_inside_model_load(target, devices, iterations) -> None:
    h = RecordingHooks()
    wl = _dynamic_fused_graph() if target == "dyn_fused" else get_workload(target)
    run(wl, devices=devices, iterations=iterations, seed=5, hooks=h, clock=SimClock.create(100.0, 50.0, True))
    api = h.host(api_event.FILE_TAG)
    fus = h.host(fusion_op_info.FILE_TAG)
    launches = _intervals(api, LEVEL_NODE, NODE_LAUNCH)
    loads = _intervals(api, LEVEL_MODEL, MODEL_LOAD)
    assert len(fus) and len(launches) and len(loads) == devices
    assert not _covered(fus, launches).any(), "a fusion_op_info record sits inside a Node@launch"
    assert _covered(fus, loads).all(), "a fusion_op_info record is outside ModelLoad (no model id)"
    # reported once per fused op per loaded model, never again per execution
    fused = [op.name for op in wl.graph.ops if op.fused_from]
    assert fused
    assert sorted(h.hashes[int(x)] for x in fus["op_name"]) == sorted(fused * devices)
    assert not h.host(fusion_op_info.FILE_TAG, aging=True).size

"""The graphs a numeric run needs from a built-in workload: the original (unfused) graph for the
CPU reference and the graph the device runs (fused) for the NPU side."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from msprof_py.errors import WorkloadError
from msprof_py.precision.numerics import fuse
from msprof_py.runtime.device import ATLAS_A2, DeviceSpec
from msprof_py.runtime.graph import Graph


@dataclass
class LoadedWorkload:
    cpu_graph: Graph  # original ops, fp32 reference
    npu_graph: Graph  # as the device runs it (fused)
    spec: DeviceSpec


def load_workload(name: str, params: dict[str, Any]) -> LoadedWorkload:
    """Build workload ``name`` with ``params`` (e.g. a small batch and image size)."""
    try:
        from msprof_py.runtime.workloads import get_workload
    except ImportError:
        raise WorkloadError("built-in workloads are not available in this build "
                            "(msprof_py.runtime.workloads is missing)") from None
    try:
        g = get_workload(name, **params)
    except TypeError as err:
        raise WorkloadError(f"workload {name!r}: bad parameter ({err})") from None
    graph = getattr(g, "graph", g)
    if any(op.fused_from for op in graph.ops):
        raise WorkloadError(f"workload {name!r} returns an already fused graph without its original ops")
    return LoadedWorkload(graph, fuse(graph), ATLAS_A2)

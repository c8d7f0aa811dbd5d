"""The graphs a numeric run needs from a built-in workload: the device graph (fused, as GE runs
it) for the NPU side and its original ops for the CPU reference, both in the logical layout."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from msprof_py.errors import WorkloadError
from msprof_py.precision.layout import to_logical
from msprof_py.precision.numerics import unfuse
from msprof_py.runtime.graph import Graph


@dataclass
class LoadedWorkload:
    workload: Any  # the runtime's Workload (device graph in device formats: what the cost model times)
    npu_graph: Graph  # the device graph in the logical layout
    cpu_graph: Graph  # its original (unfused) ops, fp32 reference


def load_workload(name: str, params: dict[str, Any]) -> LoadedWorkload:
    """Build workload ``name`` with ``params`` (e.g. ``batch=1, image=32`` for a small ResNet)."""
    try:
        from msprof_py.runtime.workloads import get_workload
    except ImportError:
        raise WorkloadError("built-in workloads are not available in this build "
                            "(msprof_py.runtime.workloads is missing)") from None
    wl = get_workload(name, **params)
    npu = to_logical(wl.graph)
    return LoadedWorkload(wl, npu, unfuse(npu))


def load_graph(path: str, params: dict[str, Any]) -> LoadedWorkload:
    """A user graph file (the runtime's JSON schema, as ``collect --graph`` reads it); the only
    parameter is ``batch``, which rescales dimension 0."""
    try:
        from msprof_py.runtime.workloads import load_graph_file
    except ImportError:
        raise WorkloadError("user graph files are not available in this build "
                            "(msprof_py.runtime.workloads is missing)") from None
    unknown = set(params) - {"batch"}
    if unknown:
        raise WorkloadError(f"{path}: a graph file takes only --param batch=N, not {', '.join(sorted(unknown))}")
    g = load_graph_file(path, batch=params.get("batch"))
    npu = to_logical(g)
    return LoadedWorkload(g, npu, unfuse(npu))

"""Using the custom repositories in a build: what a later run (``collect --tune-bank``) applies.

:func:`tuned_build` does what GE does with the banks: the subgraph bank first (fuse the chains
whose entry says so, and give their ops the entry's schedule), then the operator bank (each op
whose key has an entry runs with that entry's Format / Schedule / Impl).  It returns the workload
to run and the ``tuning`` argument for :func:`msprof_py.runtime.sim.run`.
"""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from msprof_py.aoe import paths
from msprof_py.aoe.bank import Bank
from msprof_py.aoe.ops import apply_fusions, find_subgraphs, fuse, op_key, subgraph_key
from msprof_py.errors import WarningLog

if TYPE_CHECKING:
    from msprof_py.runtime.cost import TuneChoice
    from msprof_py.runtime.device import DeviceSpec
    from msprof_py.runtime.graph import Graph
    from msprof_py.runtime.workloads import Workload


def cost_model_id() -> str:
    """The simulator's cost-model version (``runtime.cost.COST_MODEL_VERSION``); a bank made with
    another version is stale.  A version, not a hash of the source, so a doc edit keeps banks."""
    from msprof_py.runtime import cost

    return cost.COST_MODEL_VERSION


def validators(spec: "DeviceSpec") -> dict[str, str]:
    from msprof_py import __version__

    return {"soc_version": spec.name, "cost_model": cost_model_id(), "simulator": f"msprof_py {__version__}"}


def resolve(target: Any) -> "Workload":
    """A workload name, Workload or Graph -> Workload (as the simulator resolves it)."""
    from msprof_py.runtime.sim import resolve as sim_resolve

    return sim_resolve(target)


def op_bank(spec: "DeviceSpec", env: Mapping[str, str] | None = None, cwd: Path | None = None,
            warnings: WarningLog | None = None, directory: Path | None = None) -> Bank:
    d = directory if directory is not None else paths.bank_dir("op", spec.name, env, cwd)
    return Bank(d, "op", validators(spec), warnings)


def graph_bank(spec: "DeviceSpec", env: Mapping[str, str] | None = None, cwd: Path | None = None,
               warnings: WarningLog | None = None, directory: Path | None = None) -> Bank:
    d = directory if directory is not None else paths.bank_dir("graph", spec.name, env, cwd)
    return Bank(d, "graph", validators(spec), warnings)


def apply_graph_bank(graph: "Graph", bank: Bank, soc: str) -> tuple["Graph", dict[str, "TuneChoice"]]:
    """Fuse the chains the subgraph bank says to fuse; schedules for the chains' ops."""
    from msprof_py.runtime.cost import TuneChoice

    entries = bank.all_entries()
    if not entries:
        return graph, {}
    to_fuse, tuning = [], {}
    for chain in find_subgraphs(graph):
        e = entries.get(subgraph_key(chain, soc))
        if e is None:
            continue
        sched = str(e.choice.get("schedule", "default"))
        members = [fuse(chain)] if e.choice.get("fuse") else chain
        if e.choice.get("fuse"):
            to_fuse.append(chain)
        if sched != "default":
            for op in members:
                tuning[op.name] = TuneChoice(schedule=sched)
    return (apply_fusions(graph, to_fuse) if to_fuse else graph), tuning


def apply_op_bank(graph: "Graph", bank: Bank, soc: str) -> dict[str, "TuneChoice"]:
    """op name -> TuneChoice for every op of ``graph`` whose key is in the operator bank."""
    from msprof_py.runtime.cost import TuneChoice

    entries = bank.all_entries()
    if not entries:
        return {}
    out = {}
    for op in graph.ops:
        e = entries.get(op_key(op, soc))
        if e is not None and e.op_type == op.type:
            out[op.name] = TuneChoice(**e.choice)
    return out


def tuned_build(target: Any, *, spec: "DeviceSpec | None" = None, env: Mapping[str, str] | None = None,
                cwd: Path | None = None, warnings: WarningLog | None = None, op_bank_dir: Path | None = None,
                graph_bank_dir: Path | None = None) -> tuple["Workload", dict[str, "TuneChoice"]]:
    """The workload as built with the custom repositories, and its ``tuning`` argument.

    Bank directories default to AOE's paths (:func:`msprof_py.aoe.paths.bank_dir`) from ``env``;
    a missing bank is simply empty.
    """
    from msprof_py.runtime.device import ATLAS_A2

    spec = spec or ATLAS_A2
    wl = resolve(target)
    gbank = graph_bank(spec, env, cwd, warnings, graph_bank_dir)
    graph, tuning = apply_graph_bank(wl.graph, gbank, spec.name)
    tuning.update(apply_op_bank(graph, op_bank(spec, env, cwd, warnings, op_bank_dir), spec.name))
    return (replace(wl, graph=graph) if graph is not wl.graph else wl), tuning


def load_tuning(target: Any, **kwargs: Any) -> dict[str, "TuneChoice"]:
    """``tuning`` for :func:`msprof_py.runtime.sim.run` from the banks (see :func:`tuned_build`).

    When the subgraph bank fuses ops, run the workload :func:`tuned_build` returns: these names
    refer to the fused graph.
    """
    return tuned_build(target, **kwargs)[1]


def env_snapshot(env: Mapping[str, str] | None = None) -> dict[str, str]:
    e = os.environ if env is None else env
    return {k: e[k] for k in ("AOE_MODE", "REPEAT_TUNE", "TUNE_BANK_PATH", "ASCEND_CACHE_PATH", "ASCEND_WORK_PATH",
                              "TE_PARALLEL_COMPILER") if k in e}

"""Option handling shared by ``msprof-py tune`` and ``msprof-py collect --tune-bank``."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from msprof_py.errors import InvalidParamError


def resolve_target(workload: str | None, graph_file: str | None) -> Any:
    """Exactly one of a built-in workload name or a graph file -> a runtime Workload."""
    if bool(workload) == bool(graph_file):
        raise InvalidParamError("give exactly one of --workload NAME or --graph FILE")
    from msprof_py.runtime import workloads

    if graph_file:
        return workloads.load_graph_file(graph_file)  # WorkloadError naming the file
    return workloads.get_workload(workload)  # WorkloadError listing the valid names


def run_tune(*, workload: str | None, graph_file: str | None, echo: Callable[[str], None] | None = None,
             **kwargs: Any) -> Any:
    from msprof_py.aoe.tuner import tune

    target = resolve_target(workload, graph_file)
    return tune(target, echo=echo, **kwargs)


def bank_env(tune_bank: str) -> dict[str, str]:
    """``--tune-bank auto`` -> AOE's own resolution from the environment; a path -> TUNE_BANK_PATH."""
    env = dict(os.environ)
    if tune_bank != "auto":
        env["TUNE_BANK_PATH"] = str(Path(tune_bank))
    return env

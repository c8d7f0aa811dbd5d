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


def run_collect_tuned(req: Any, warnings: Any, tune_bank: str) -> Any:
    """``msprof-py collect --tune-bank DIR|auto``: the collect request, built with the custom repositories.

    The workload (or graph file) is built as GE would build it with the banks (subgraph-bank
    fusions, operator-bank choices; :func:`msprof_py.aoe.apply.tuned_build`) and run with the
    runtime's ``tuning`` argument, so the PROF directory shows the tuned operators' times.
    """
    from msprof_py.aoe.apply import tuned_build
    from msprof_py.collect.options import load_options
    from msprof_py.collect.cli_support import output_folder
    from msprof_py.collect.session import collect
    from msprof_py.runtime import workloads

    if req.command:
        raise InvalidParamError("--tune-bank works with --workload or --graph, not with a Python script")
    if bool(req.workload) == bool(req.graph_file):
        raise InvalidParamError("give exactly one of --workload NAME or --graph FILE")
    opts = load_options(req.options, warnings)
    output = req.output if req.output is not None else opts.output
    if output is None:
        raise InvalidParamError("no output directory: pass --output or set \"output\" in --options")
    with output_folder(Path(output)):  # a failure leaves nothing behind
        params = {} if req.batch_size is None else {"batch": req.batch_size}
        target = (workloads.load_graph_file(req.graph_file, **params) if req.graph_file
                  else workloads.get_workload(req.workload, **params))
        wl, tuning = tuned_build(target, env=bank_env(tune_bank), warnings=warnings)
        if not tuning and wl is target:
            warnings.warn(f"the custom repository ({tune_bank}) has no entry for {target.name}: nothing tuned")
        kwargs: dict[str, Any] = {} if req.slice_bytes is None else {"slice_bytes": req.slice_bytes}
        return collect(wl, output=output, options=opts, devices=req.devices, iterations=req.iterations,
                       seed=req.seed, fixed_clock=req.fixed_clock, warnings=warnings, tuning=tuning, **kwargs)

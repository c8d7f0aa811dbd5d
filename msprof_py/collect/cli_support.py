"""What ``msprof-py collect`` does, kept out of the click module so the CLI stays thin.

Three ways to name what runs: a built-in workload, a user graph file, or a Python script (run in a
subprocess through :mod:`msprof_py.collect.bootstrap`, which installs the hooks into the
runtime's AscendCL layer and writes the PROF directory when the script exits).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msprof_py.atomic import folders_removed_on_failure
from msprof_py.collect.options import ProfilingOptions, load_options
from msprof_py.collect.session import CollectResult, collect, ensure_output
from msprof_py.errors import InvalidParamError, WarningLog, WorkloadError
from msprof_py.raw import files


@dataclass
class CollectRequest:
    workload: str | None = None
    graph_file: str | None = None
    command: list[str] = field(default_factory=list)  # after "--": python script.py args...
    iterations: int = 1
    devices: int = 1
    batch_size: int | None = None
    output: str | None = None
    seed: int = 0
    fixed_clock: bool = False
    options: str | None = None
    slice_bytes: int | None = None


def run_collect(req: CollectRequest, warnings: WarningLog) -> CollectResult:
    """Validate the request, run it with profiling on, return what was written."""
    given = [x for x in (req.workload, req.graph_file, req.command or None) if x]
    if len(given) != 1:
        raise InvalidParamError("give exactly one of --workload NAME, --graph FILE or -- python SCRIPT.py ...")
    opts = load_options(req.options, warnings)
    output = req.output if req.output is not None else opts.output
    if output is None:
        raise InvalidParamError("no output directory: pass --output or set \"output\" in --options")
    slice_bytes = req.slice_bytes or files.DEFAULT_SLICE_BYTES
    with output_folder(Path(output)):  # fail before any work is done; a failure leaves nothing
        if req.command:
            return _run_script(req, output, slice_bytes, warnings)
        from msprof_py.runtime import workloads

        params = {} if req.batch_size is None else {"batch": req.batch_size}
        if req.graph_file:
            target = workloads.load_graph_file(req.graph_file, **params)  # WorkloadError naming the file
        else:
            target = workloads.get_workload(req.workload, **params)  # WorkloadError lists the valid names
        return collect(target, output=output, options=opts, devices=req.devices, iterations=req.iterations,
                       seed=req.seed, fixed_clock=req.fixed_clock, slice_bytes=slice_bytes, warnings=warnings)


@contextmanager
def output_folder(output: Path) -> Iterator[None]:
    """``ensure_output(output)`` for the block; if the block fails, remove the folders this made
    (only while empty: never anything a user or another run put there)."""
    with folders_removed_on_failure(output):
        ensure_output(output)
        yield


def model_target(req: CollectRequest, warnings: WarningLog, option: str) -> tuple[Any, ProfilingOptions, str]:
    """For options that need a model (``--ranks``): the profiling options, the output folder (not
    created: wrap the work in :func:`output_folder`) and the workload or graph file; one-line errors."""
    from msprof_py.runtime import workloads

    if req.command:
        raise InvalidParamError(f"{option} works with --workload or --graph, not with a Python script")
    if bool(req.workload) == bool(req.graph_file):
        raise InvalidParamError(f"give exactly one of --workload NAME or --graph FILE with {option}")
    opts = load_options(req.options, warnings)
    output = req.output if req.output is not None else opts.output
    if output is None:
        raise InvalidParamError("no output directory: pass --output or set \"output\" in --options")
    params = {} if req.batch_size is None else {"batch": req.batch_size}
    target = (workloads.load_graph_file(req.graph_file, **params) if req.graph_file
              else workloads.get_workload(req.workload, **params))
    return target, opts, output


def _run_script(req: CollectRequest, output: str, slice_bytes: int, warnings: WarningLog) -> CollectResult:
    argv = list(req.command)
    if Path(argv[0]).name.startswith("python"):
        argv = argv[1:]
    if not argv or not argv[0].endswith(".py"):
        raise InvalidParamError(f"can only profile a Python script: expected '-- python SCRIPT.py ...', "
                                f"got {' '.join(req.command)!r}")
    script = Path(argv[0])
    if not script.is_file():
        raise WorkloadError(f"user script {script} does not exist")
    with tempfile.TemporaryDirectory(prefix="msprof_py_boot_") as tmp:
        result_file = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", "msprof_py.collect.bootstrap", "--output", str(output),
               "--result-file", str(result_file), "--seed", str(req.seed), "--slice-bytes", str(slice_bytes)]
        if req.options is not None:
            cmd += ["--options", req.options]
        if req.fixed_clock:
            cmd.append("--fixed-clock")
        cmd += ["--", *argv]
        proc = subprocess.run(cmd, env=_child_env())
        if proc.returncode != 0 or not result_file.exists():
            raise WorkloadError(f"user script {script} failed with exit code {proc.returncode}; "
                                "no PROF directory written")
        data = json.loads(result_file.read_text())
    for msg in data.get("warnings", []):
        warnings.warn(msg)
    return CollectResult(Path(data["prof_dir"]), data["device_ids"], data["device_tasks"], data["total_bytes"],
                         data["record_counts"], warnings)


def _child_env() -> dict[str, str]:
    """The child must import this very msprof_py, installed or run from a source tree."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env

"""AOE tuning on the simulated NPU: operator tuning (OPAT, job_type 2) and subgraph tuning
(SGAT, job_type 1).

Operator tuning, per repository key (ops with equal type, shapes, dtypes, formats and attributes
share a key and are tuned once, through the first of them):

1. Look the key up in the operator bank.  A hit with REPEAT_TUNE off is kept as it is
   (``reserved``) and not tuned.
2. Otherwise search one tune dimension after another -- Format, then Schedule, then Impl --
   starting from the current choice (GE's default on a miss, the bank entry on a hit).  Every
   candidate is *measured* on the simulator (:mod:`msprof_py.aoe.measure`); a dimension whose
   best value is faster than the current point moves the point and becomes one
   ``tune_performance`` entry (its before/after are the two measured points).
3. :func:`msprof_py.aoe.bank.classify` decides add / update / reserved / unsatisfied; only add and
   update write the bank (and only if still faster than what another tuner stored meanwhile).

Subgraph tuning, per fusion chain (:func:`msprof_py.aoe.ops.find_subgraphs`): the candidates are
fused or not x every schedule, each measured as the chain's execution span on the simulator.

The model time before and after (``model_baseline_performance(ms)`` /
``model_result_performance(ms)``) is the workload's median iteration time on the simulator built
with the repositories as they were before and as they are after tuning.  The result file is
rewritten after every key; its side file ``*.provenance.json`` lists every measurement.

The searches live in :mod:`msprof_py.aoe.opat` and :mod:`msprof_py.aoe.sgat`, the task's
bookkeeping (outcome, result-file entry, rounding) in :mod:`msprof_py.aoe.task`.

Same seed -> same choices, same numbers, same bank bytes.  The file name's timestamp and pid and
``tuning_time(s)`` are wall-clock facts of the run, as in AOE's own files.
"""
from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from msprof_py.aoe import paths
from msprof_py.aoe.apply import env_snapshot, graph_bank, op_bank, resolve, validators
from msprof_py.aoe.measure import DEFAULT_ITERATIONS, SimMeasurer
from msprof_py.aoe.opat import opat
from msprof_py.aoe.ops import load_tune_ops_file
from msprof_py.aoe.sgat import sgat
from msprof_py.aoe.task import TuneOutcome, TuneTask
from msprof_py.aoe.writer import ResultWriter
from msprof_py.atomic import folders_removed_on_failure
from msprof_py.errors import InvalidParamError, InvalidPathError, WarningLog

if TYPE_CHECKING:
    from msprof_py.runtime.device import DeviceSpec

__all__ = ["TuneOutcome", "tune"]


def tune(target: Any, *, job_type: int | None = None, tune_ops_file: str | os.PathLike[str] | None = None,
         seed: int = 0, output: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None,
         spec: "DeviceSpec | None" = None, repeat_tune: bool | None = None, tuning_name: str | None = None,
         layout: str = "list", iterations: int = DEFAULT_ITERATIONS, echo: Callable[[str], None] | None = None,
         cwd: Path | None = None, writer: ResultWriter | None = None,
         measurer: SimMeasurer | None = None) -> TuneOutcome:
    """Tune ``target`` (workload name, Workload or Graph) on the simulated NPU, AOE-style.

    Args:
        job_type: 1 = subgraph tuning (SGAT), 2 = operator tuning (OPAT); default ``AOE_MODE``.
        tune_ops_file: AOE's JSON ``{"tune_ops_name": [...], "tune_ops_type": [...]}`` (OPAT).
        seed: simulator seed of every measurement (same seed -> same choices and numbers).
        output: directory for the result file; default ``ASCEND_WORK_PATH`` or the working dir.
        env: environment (default ``os.environ``): AOE_MODE, REPEAT_TUNE, TUNE_BANK_PATH,
            ASCEND_CACHE_PATH, ASCEND_WORK_PATH, TE_PARALLEL_COMPILER.
        repeat_tune: overrides REPEAT_TUNE.
        layout: "list" (one task per file) or "report" (``report_{ts}_{tid}`` dict; pass the same
            ``writer`` to several calls to keep several tasks in one file).
        iterations: executions per measurement (the median is taken).
        echo: where AOE's console lines go (default: nowhere).

    Raises:
        MsprofError subclasses: bad options, unknown workload, unwritable bank or output.
    """
    from msprof_py.runtime.device import ATLAS_A2

    e = os.environ if env is None else env
    job = job_type if job_type is not None else paths.aoe_mode(e)
    if job not in (paths.JOB_SGAT, paths.JOB_OPAT):
        raise InvalidParamError("no tuning mode: pass --job_type 1 (subgraph tuning) or 2 (operator tuning), "
                                "or set AOE_MODE")
    if iterations < 1:
        raise InvalidParamError("iterations must be >= 1")
    if tune_ops_file is not None and job != paths.JOB_OPAT:
        raise InvalidParamError("--tune_ops_file applies to operator tuning (--job_type 2) only")
    op_filter = load_tune_ops_file(tune_ops_file) if tune_ops_file is not None else None
    spec = spec or ATLAS_A2
    repeat = paths.repeat_tune(e) if repeat_tune is None else repeat_tune
    workers = paths.parallel_compilers(e)
    warnings = WarningLog()
    wl = resolve(target)
    name = tuning_name or f"sim_{wl.name}"
    out_dir = Path(output) if output is not None else paths.work_dir(e, cwd)
    with folders_removed_on_failure(out_dir):  # a failed tuning leaves no empty result folder
        try:  # fail before any work is done
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise InvalidPathError(f"{out_dir}: cannot create the result directory ({err.strerror})") from None
        now = datetime.now()
        mode = "opat" if job == paths.JOB_OPAT else "sgat"
        if writer is None:
            writer = ResultWriter(out_dir, mode, now=now, layout=layout)
        elif writer.mode != mode:
            raise InvalidParamError(f"writer is for {writer.mode}, this task is {mode}")
        measurer = measurer or SimMeasurer(spec, seed, iterations)
        gbank = graph_bank(spec, e, cwd, warnings)
        obank = op_bank(spec, e, cwd, warnings)
        task = TuneTask(writer=writer, key=writer.task_key(now), name=name, started=time.monotonic(),
                        echo=echo or _quiet)
        if job == paths.JOB_OPAT:
            out = opat(wl, task, obank, gbank, measurer, spec, repeat, op_filter, workers, warnings)
        else:
            out = sgat(wl, task, obank, gbank, measurer, spec, repeat, workers, warnings)
        writer.write_provenance({
            "simulated": True,
            "note": "every number in the result file was measured on msprof_py's simulated NPU, not on hardware",
            "result_file": writer.path.name, "task": task.key if writer.layout == "report" else None,
            "job_type": job, "tuning_name": name, "workload": wl.name, "soc_version": spec.name,
            "validators": validators(spec), "seed": seed, "iterations_per_measurement": iterations,
            "statistic": "median over the iterations; op: task duration; subgraph and model: execution span; "
                         "one simulation per candidate, same seed for all (common random numbers)",
            "repeat_tune": repeat, "te_parallel_compiler": workers, "environment": env_snapshot(e),
            "bank_dir": str(out.bank_dir), "sim_runs": measurer.runs,
            "measurements": sorted(measurer.log, key=lambda m: (m["what"], m.get("op_name", m.get("label", "")),
                                                                str(m.get("choice", m.get("tuning", ""))))),
        })
        out.provenance_path = writer.provenance_path
        out.sim_runs = measurer.runs
        out.warnings.extend(warnings)
        return out


def _quiet(_: str) -> None:
    return None

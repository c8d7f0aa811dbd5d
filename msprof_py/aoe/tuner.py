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

Same seed -> same choices, same numbers, same bank bytes.  The file name's timestamp and pid and
``tuning_time(s)`` are wall-clock facts of the run, as in AOE's own files.
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from msprof_py.aoe import paths, schema as S
from msprof_py.aoe.apply import (apply_graph_bank, apply_op_bank, env_snapshot, graph_bank, op_bank, resolve,
                                 validators)
from msprof_py.aoe.bank import Bank, BankEntry, RepoSummary, classify
from msprof_py.aoe.measure import DEFAULT_ITERATIONS, SimMeasurer
from msprof_py.aoe.ops import (OpFilter, find_subgraphs, fuse, load_tune_ops_file, op_key, op_signature,
                               select_ops, subgraph_key, subgraph_signature)
from msprof_py.aoe.writer import ResultWriter
from msprof_py.atomic import folders_removed_on_failure
from msprof_py.errors import InvalidParamError, InvalidPathError, MsprofError, WarningLog

if TYPE_CHECKING:
    from msprof_py.runtime.cost import TuneChoice
    from msprof_py.runtime.device import DeviceSpec
    from msprof_py.runtime.graph import Graph, Op
    from msprof_py.runtime.workloads import Workload

DIMS = (("Format", "format", "FORMATS"), ("Schedule", "schedule", "SCHEDULES"), ("Impl", "impl", "IMPLS"))
INCOMPLETE = "tune tuning incomplete"


@dataclass
class TuneOutcome:
    """What one tuning task did."""

    job_type: int
    tuning_name: str
    result_path: Path
    provenance_path: Path
    bank_dir: Path
    document: Any
    summary: RepoSummary
    baseline_ms: float | None
    result_ms: float | None
    failed: list[str] = field(default_factory=list)
    modified: list[dict[str, Any]] = field(default_factory=list)  # the repo_modified_* items
    sim_runs: int = 0
    warnings: WarningLog = field(default_factory=WarningLog)


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
        task = _Task(writer=writer, key=writer.task_key(now), name=name, started=time.monotonic(), echo=echo or _quiet)
        if job == paths.JOB_OPAT:
            out = _opat(wl, task, obank, gbank, measurer, spec, repeat, op_filter, workers, warnings)
        else:
            out = _sgat(wl, task, obank, gbank, measurer, spec, repeat, workers, warnings)
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


@dataclass
class _Task:
    writer: ResultWriter
    key: str
    name: str
    started: float
    echo: Callable[[str], None]

    def write(self, section_name: str, section: dict[str, Any] | None, *, done: bool) -> None:
        basic: dict[str, Any] = {"tuning_name": self.name}
        if done:
            basic["tuning_time(s)"] = int(round(time.monotonic() - self.started))
        self.writer.update(self.key, basic, section_name, section)


def _ms(x: float) -> float:
    return round(x, 6)


def _us(x: float) -> float:
    return round(x, 3)


def _model_fields(baseline: float, result: float | None) -> dict[str, Any]:
    out: dict[str, Any] = {"model_baseline_performance(ms)": _ms(baseline)}
    if result is not None:
        out["model_result_performance(ms)"] = _ms(result)
        out["model_performance_improvement"] = S.format_pct(S.improvement(_ms(baseline), _ms(result)), S.OPAT)
    return out


# ---------------------------------------------------------------------------------------------
# operator tuning
# ---------------------------------------------------------------------------------------------
@dataclass
class _OpSearch:
    key: str
    op: "Op"
    ops: list["Op"]
    existing: BankEntry | None
    tuned: bool = False
    reference_us: float | None = None  # default (miss) or the existing entry (hit)
    default_us: float | None = None
    best_us: float | None = None
    best: "TuneChoice | None" = None
    steps: list[tuple[str, float, float]] = field(default_factory=list)  # (dim, before_us, after_us)
    error: str = ""


def _search_op(s: _OpSearch, measurer: SimMeasurer) -> _OpSearch:
    """Coordinate search over Format, Schedule, Impl, from the current choice (see module doc)."""
    from msprof_py.runtime.cost import TuneChoice

    try:
        s.default_us = measurer.op_us(s.op, None, key=s.key)
        current = TuneChoice(**s.existing.choice) if s.existing is not None else TuneChoice()
        cur_us = measurer.op_us(s.op, current, key=s.key) if s.existing is not None else s.default_us
        s.reference_us = cur_us
        for dim, attr, values_attr in DIMS:
            best_c, best_us = current, cur_us
            for v in getattr(TuneChoice, values_attr):
                if v == getattr(current, attr):
                    continue
                c = replace(current, **{attr: v})
                us = measurer.op_us(s.op, c, key=s.key)
                if us < best_us:
                    best_c, best_us = c, us
            if best_us < cur_us:
                s.steps.append((dim, cur_us, best_us))
                current, cur_us = best_c, best_us
        s.best, s.best_us, s.tuned = current, cur_us, True
    except MsprofError as err:
        s.error = str(err)
    except (RuntimeError, ValueError, KeyError) as err:  # the simulator could not run a candidate
        s.error = f"{type(err).__name__}: {err}"
    return s


def _ordered_map(fn: Callable[[Any], Any], items: list[Any], workers: int) -> Iterator[Any]:
    """``map`` in order; with TE_PARALLEL_COMPILER > 1 candidates are measured on that many threads."""
    if workers <= 1 or len(items) <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(fn, items)


def _opat(wl: "Workload", task: _Task, obank: Bank, gbank: Bank, measurer: SimMeasurer, spec: "DeviceSpec",
          repeat: bool, op_filter: OpFilter | None, workers: int, warnings: WarningLog) -> TuneOutcome:
    soc = spec.name
    # the graph as GE builds it: subgraph-bank fusions first (AOE: subgraph tuning, then operator tuning)
    graph, graph_tuning = apply_graph_bank(wl.graph, gbank, soc)
    model = replace(wl, graph=graph)
    ops = select_ops(graph, op_filter)
    if op_filter is not None and not ops:
        warnings.warn("no operator of the graph matches the tune_ops_file")
    groups: dict[str, list[Op]] = {}
    for op in ops:
        groups.setdefault(op_key(op, soc), []).append(op)
    summary = RepoSummary()
    modified: list[dict[str, Any]] = []
    failed: list[str] = []

    def tuning_now() -> dict[str, "TuneChoice"]:
        return {**graph_tuning, **apply_op_bank(graph, obank, soc)}

    baseline = measurer.model_ms(model, tuning_now(), label="baseline")

    def section(result: str, res_ms: float | None = None) -> dict[str, Any]:
        """The OPAT section as it stands (model result only once tuning is done)."""
        out = {**_model_fields(baseline, res_ms), "opat_tuning_result": result,
               "repo_modified_operators": list(modified), "repo_summary": summary.as_dict()}
        if failed:
            out["tuning_failed_operators"] = list(failed)
        return out

    if not groups:
        task.write(S.OPAT, None, done=True)  # documented: no OPAT section when no operator can be tuned
        task.echo(f"{task.name} process finished. No operator to tune.")
        return TuneOutcome(paths.JOB_OPAT, task.name, task.writer.path, task.writer.provenance_path, obank.directory,
                           _doc(task), summary, baseline, None, warnings=warnings)
    task.write(S.OPAT, section(INCOMPLETE), done=False)
    searches = [_OpSearch(k, members[0], members, obank.get(members[0].type, k)) for k, members in groups.items()]
    todo = [s for s in searches if s.existing is None or repeat]
    results = _ordered_map(lambda s: _search_op(s, measurer), todo, workers)
    for s in searches:
        if s.existing is not None and not repeat:
            summary.record("reserved")  # a hit with REPEAT_TUNE off: the bank's entry is used as it is
            task.write(S.OPAT, section(INCOMPLETE), done=False)
            continue
        s = next(results)
        if not s.tuned:
            failed.append(s.op.name)
            warnings.warn(f"operator {s.op.name}: tuning failed ({s.error})")
            task.write(S.OPAT, section(INCOMPLETE), done=False)
            continue
        outcome = classify(s.existing is not None, repeat, s.best_us, s.reference_us)
        if outcome in ("add", "update"):
            entry = BankEntry(s.key, s.op.name, s.op.type, _choice_dict(s.best), tuple(d for d, _, _ in s.steps),
                              _us(s.default_us), _us(s.best_us), op_signature(s.op, soc))
            if obank.offer(entry) == "kept":  # another tuner stored a faster entry meanwhile
                outcome = "reserved" if s.existing is not None else "unsatisfied"
        summary.record(outcome)
        if outcome in ("add", "update"):
            modified.append({"op_name": s.op.name, "op_type": s.op.type, "tune_performance": {
                dim: {"performance_after_tune(us)": _us(after), "performance_before_tune(us)": _us(before),
                      "performance_improvement": S.format_pct(S.improvement(_us(before), _us(after)), S.OPAT),
                      "update_mode": outcome} for dim, before, after in s.steps}})
        task.echo(f"[Aoe]{s.op.name} Tuning process finished.")
        task.write(S.OPAT, section(INCOMPLETE), done=False)
    result_ms = measurer.model_ms(model, tuning_now(), label="result")
    state = "tuning failed" if failed else "tuning successful"
    task.write(S.OPAT, section(state, result_ms), done=True)
    pct = S.format_pct(S.improvement(_ms(baseline), _ms(result_ms)), S.OPAT)
    task.echo(f"{task.name} process finished. Performance improved by {pct}")
    return TuneOutcome(paths.JOB_OPAT, task.name, task.writer.path, task.writer.provenance_path, obank.directory,
                       _doc(task), summary, baseline, result_ms, failed, modified, warnings=warnings)


def _choice_dict(c: "TuneChoice") -> dict[str, str]:
    return {"format": c.format, "schedule": c.schedule, "impl": c.impl}


def _doc(task: _Task) -> Any:
    items = task.writer.tasks[task.key]
    return items if task.writer.layout == "list" else {task.key: items}


# ---------------------------------------------------------------------------------------------
# subgraph tuning
# ---------------------------------------------------------------------------------------------
@dataclass
class _SgSearch:
    key: str
    chain: list["Op"]
    existing: BankEntry | None
    tuned: bool = False
    reference_us: float | None = None
    default_us: float | None = None
    best_us: float | None = None
    best: dict[str, Any] | None = None
    error: str = ""


def _sg_candidates() -> list[dict[str, Any]]:
    from msprof_py.runtime.cost import TuneChoice

    return [{"fuse": f, "schedule": s} for f in (False, True) for s in TuneChoice.SCHEDULES]


def _sg_measure(chain: list["Op"], choice: dict[str, Any], measurer: SimMeasurer, key: str) -> float:
    from msprof_py.runtime.cost import TuneChoice

    ops = [fuse(chain)] if choice["fuse"] else chain
    tuning = {op.name: TuneChoice(schedule=choice["schedule"]) for op in ops} if choice["schedule"] != "default" else None
    return measurer.graph_us(ops, tuning, label=f"{key}:{'fused' if choice['fuse'] else 'unfused'}:{choice['schedule']}")


def _search_subgraph(s: _SgSearch, measurer: SimMeasurer) -> _SgSearch:
    try:
        default = {"fuse": False, "schedule": "default"}
        s.default_us = _sg_measure(s.chain, default, measurer, s.key)
        current = dict(s.existing.choice) if s.existing is not None else default
        s.reference_us = _sg_measure(s.chain, current, measurer, s.key) if s.existing is not None else s.default_us
        best, best_us = current, s.reference_us
        for c in _sg_candidates():
            if c == current or c == default:
                continue
            us = _sg_measure(s.chain, c, measurer, s.key)
            if us < best_us:
                best, best_us = c, us
        s.best, s.best_us, s.tuned = best, best_us, True
    except MsprofError as err:
        s.error = str(err)
    except (RuntimeError, ValueError, KeyError) as err:
        s.error = f"{type(err).__name__}: {err}"
    return s


def _sgat(wl: "Workload", task: _Task, obank: Bank, gbank: Bank, measurer: SimMeasurer, spec: "DeviceSpec",
          repeat: bool, workers: int, warnings: WarningLog) -> TuneOutcome:
    soc = spec.name

    def model_now() -> tuple["Workload", dict[str, "TuneChoice"]]:
        graph, tuning = apply_graph_bank(wl.graph, gbank, soc)
        tuning.update(apply_op_bank(graph, obank, soc))
        return replace(wl, graph=graph), tuning

    baseline = measurer.model_ms(*model_now(), label="baseline")
    chains = find_subgraphs(wl.graph)
    summary = RepoSummary()
    added: list[dict[str, Any]] = []
    updated: list[dict[str, Any]] = []
    failed: list[str] = []
    task.write(S.SGAT, None, done=False)
    seen: dict[str, _SgSearch] = {}
    searches = []
    for chain in chains:
        k = subgraph_key(chain, soc)
        if k not in seen:
            seen[k] = _SgSearch(k, chain, gbank.get("subgraph", k))
            searches.append(seen[k])
    todo = [s for s in searches if s.existing is None or repeat]
    results = _ordered_map(lambda s: _search_subgraph(s, measurer), todo, workers)
    for s in searches:
        if s.existing is not None and not repeat:
            summary.record("reserved")
            continue
        s = next(results)
        if not s.tuned:
            failed.append(fuse(s.chain).name)
            warnings.warn(f"subgraph {s.key}: tuning failed ({s.error})")
            continue
        outcome = classify(s.existing is not None, repeat, s.best_us, s.reference_us)
        if outcome in ("add", "update"):

            entry = BankEntry(s.key, "".join(op.name for op in s.chain), "subgraph", dict(s.best),
                              tuple(k for k in ("fuse", "schedule") if s.best[k] not in (False, "default")),
                              _us(s.default_us), _us(s.best_us), subgraph_signature(s.chain, soc))
            if gbank.offer(entry) == "kept":
                outcome = "reserved" if s.existing is not None else "unsatisfied"
        summary.record(outcome)
        if outcome in ("add", "update"):
            before, after = _ms(s.reference_us / 1000.0), _ms(s.best_us / 1000.0)
            item = {"performance_after_tune(ms)": after, "performance_before_tune(ms)": before,
                    "performance_improvement": S.format_pct(S.improvement(before, after), S.SGAT), "repo_key": s.key}
            (added if outcome == "add" else updated).append(item)
    if failed and not (added or updated or summary.total_num):
        # documented: the SGAT section is absent when subgraph tuning fails
        task.write(S.SGAT, None, done=True)
        task.echo(f"{task.name} process finished. Subgraph tuning failed.")
        return TuneOutcome(paths.JOB_SGAT, task.name, task.writer.path, task.writer.provenance_path, gbank.directory,
                           _doc(task), summary, baseline, None, failed, warnings=warnings)
    result_ms = measurer.model_ms(*model_now(), label="result")
    section = {"model_baseline_performance(ms)": _ms(baseline), "model_result_performance(ms)": _ms(result_ms),
               "model_performance_improvement": S.format_pct(S.improvement(_ms(baseline), _ms(result_ms)), S.SGAT),
               "repo_modified_subgraphs": {"add_repo_subgraphs": added, "update_repo_subgraphs": updated},
               "repo_summary": summary.as_dict()}
    task.write(S.SGAT, section, done=True)
    task.echo(f"{task.name} process finished. Performance improved by {section['model_performance_improvement']}")
    return TuneOutcome(paths.JOB_SGAT, task.name, task.writer.path, task.writer.provenance_path, gbank.directory,
                       _doc(task), summary, baseline, result_ms, failed, added + updated, warnings=warnings)

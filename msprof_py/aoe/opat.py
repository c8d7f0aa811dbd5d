"""Operator tuning (OPAT, job_type 2): per repository key, a coordinate search over Format,
Schedule and Impl from the current choice (GE's default on a bank miss, the bank entry on a
hit), every candidate measured on the simulator; add / update entries go to the operator bank.
Times are task durations in us (model times in ms)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from msprof_py.aoe import paths, schema as S
from msprof_py.aoe.apply import apply_graph_bank, apply_op_bank
from msprof_py.aoe.bank import Bank, BankEntry, RepoSummary, classify
from msprof_py.aoe.measure import SimMeasurer
from msprof_py.aoe.ops import OpFilter, op_key, op_signature, select_ops
from msprof_py.aoe.task import (INCOMPLETE, TuneOutcome, TuneTask, model_fields, ordered_map, round_ms, round_us,
                                task_document)
from msprof_py.errors import MsprofError, WarningLog

if TYPE_CHECKING:
    from msprof_py.runtime.cost import TuneChoice
    from msprof_py.runtime.device import DeviceSpec
    from msprof_py.runtime.graph import Op
    from msprof_py.runtime.workloads import Workload

# the tune dimensions in search order: (name in the result file, TuneChoice field, its values)
DIMS = (("Format", "format", "FORMATS"), ("Schedule", "schedule", "SCHEDULES"), ("Impl", "impl", "IMPLS"))


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


def opat(wl: "Workload", task: TuneTask, obank: Bank, gbank: Bank, measurer: SimMeasurer, spec: "DeviceSpec",
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
        out = {**model_fields(baseline, res_ms, S.OPAT), "opat_tuning_result": result,
               "repo_modified_operators": list(modified), "repo_summary": summary.as_dict()}
        if failed:
            out["tuning_failed_operators"] = list(failed)
        return out

    if not groups:
        task.write(S.OPAT, None, done=True)  # documented: no OPAT section when no operator can be tuned
        task.echo(f"{task.name} process finished. No operator to tune.")
        return TuneOutcome(paths.JOB_OPAT, task.name, task.writer.path, task.writer.provenance_path, obank.directory,
                           task_document(task), summary, baseline, None, warnings=warnings)
    task.write(S.OPAT, section(INCOMPLETE), done=False)
    searches = [_OpSearch(k, members[0], members, obank.get(members[0].type, k)) for k, members in groups.items()]
    todo = [s for s in searches if s.existing is None or repeat]
    results = ordered_map(lambda s: _search_op(s, measurer), todo, workers)
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
                              round_us(s.default_us), round_us(s.best_us), op_signature(s.op, soc))
            if obank.offer(entry) == "kept":  # another tuner stored a faster entry meanwhile
                outcome = "reserved" if s.existing is not None else "unsatisfied"
        summary.record(outcome)
        if outcome in ("add", "update"):
            modified.append({"op_name": s.op.name, "op_type": s.op.type, "tune_performance": {
                dim: {"performance_after_tune(us)": round_us(after), "performance_before_tune(us)": round_us(before),
                      "performance_improvement": S.format_pct(S.improvement(round_us(before), round_us(after)), S.OPAT),
                      "update_mode": outcome} for dim, before, after in s.steps}})
        task.echo(f"[Aoe]{s.op.name} Tuning process finished.")
        task.write(S.OPAT, section(INCOMPLETE), done=False)
    result_ms = measurer.model_ms(model, tuning_now(), label="result")
    state = "tuning failed" if failed else "tuning successful"
    task.write(S.OPAT, section(state, result_ms), done=True)
    pct = S.format_pct(S.improvement(round_ms(baseline), round_ms(result_ms)), S.OPAT)
    task.echo(f"{task.name} process finished. Performance improved by {pct}")
    return TuneOutcome(paths.JOB_OPAT, task.name, task.writer.path, task.writer.provenance_path, obank.directory,
                       task_document(task), summary, baseline, result_ms, failed, modified, warnings=warnings)


def _choice_dict(c: "TuneChoice") -> dict[str, str]:
    return {"format": c.format, "schedule": c.schedule, "impl": c.impl}

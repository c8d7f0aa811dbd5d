"""Subgraph tuning (SGAT, job_type 1): per fusion chain (:func:`msprof_py.aoe.ops.find_subgraphs`),
the candidates fused or not x every schedule, each measured as the chain's execution span (us)
on the simulator; add / update entries go to the subgraph bank."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from msprof_py.aoe import paths, schema as S
from msprof_py.aoe.apply import apply_graph_bank, apply_op_bank
from msprof_py.aoe.bank import Bank, BankEntry, RepoSummary, classify
from msprof_py.aoe.measure import SimMeasurer
from msprof_py.aoe.ops import find_subgraphs, fuse, subgraph_key, subgraph_signature
from msprof_py.aoe.task import TuneOutcome, TuneTask, model_fields, ordered_map, round_ms, round_us, task_document
from msprof_py.errors import MsprofError, WarningLog

if TYPE_CHECKING:
    from msprof_py.runtime.cost import TuneChoice
    from msprof_py.runtime.device import DeviceSpec
    from msprof_py.runtime.graph import Op
    from msprof_py.runtime.workloads import Workload


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


def sgat(wl: "Workload", task: TuneTask, obank: Bank, gbank: Bank, measurer: SimMeasurer, spec: "DeviceSpec",
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
    results = ordered_map(lambda s: _search_subgraph(s, measurer), todo, workers)
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
                              round_us(s.default_us), round_us(s.best_us), subgraph_signature(s.chain, soc))
            if gbank.offer(entry) == "kept":
                outcome = "reserved" if s.existing is not None else "unsatisfied"
        summary.record(outcome)
        if outcome in ("add", "update"):
            before, after = round_ms(s.reference_us / 1000.0), round_ms(s.best_us / 1000.0)
            item = {"performance_after_tune(ms)": after, "performance_before_tune(ms)": before,
                    "performance_improvement": S.format_pct(S.improvement(before, after), S.SGAT), "repo_key": s.key}
            (added if outcome == "add" else updated).append(item)
    if failed and not (added or updated or summary.total_num):
        # documented: the SGAT section is absent when subgraph tuning fails
        task.write(S.SGAT, None, done=True)
        task.echo(f"{task.name} process finished. Subgraph tuning failed.")
        return TuneOutcome(paths.JOB_SGAT, task.name, task.writer.path, task.writer.provenance_path, gbank.directory,
                           task_document(task), summary, baseline, None, failed, warnings=warnings)
    result_ms = measurer.model_ms(*model_now(), label="result")
    section = {**model_fields(baseline, result_ms, S.SGAT),
               "repo_modified_subgraphs": {"add_repo_subgraphs": added, "update_repo_subgraphs": updated},
               "repo_summary": summary.as_dict()}
    task.write(S.SGAT, section, done=True)
    task.echo(f"{task.name} process finished. Performance improved by {section['model_performance_improvement']}")
    return TuneOutcome(paths.JOB_SGAT, task.name, task.writer.path, task.writer.provenance_path, gbank.directory,
                       task_document(task), summary, baseline, result_ms, failed, added + updated, warnings=warnings)

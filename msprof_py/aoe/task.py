"""One tuning task's bookkeeping, shared by operator and subgraph tuning: its outcome, its entry
in the result file (rewritten after every key, ``tuning_time(s)`` once done), AOE's rounding
of times (ms to 6 decimals, us to 3) and running the searches in order on TE_PARALLEL_COMPILER
threads."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from msprof_py.aoe import schema as S
from msprof_py.aoe.bank import RepoSummary
from msprof_py.aoe.writer import ResultWriter
from msprof_py.errors import WarningLog

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


@dataclass
class TuneTask:
    """One task's entry in the result file (``key``), its name, start (monotonic s) and console."""

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


def round_ms(x: float) -> float:
    """A time in ms as AOE writes it (6 decimals)."""
    return round(x, 6)


def round_us(x: float) -> float:
    """A time in us as AOE writes it (3 decimals)."""
    return round(x, 3)


def model_fields(baseline: float, result: float | None, section: str) -> dict[str, Any]:
    """The model times (ms) of a section (``S.OPAT`` / ``S.SGAT``): the baseline, and once tuning is
    done the result and AOE's improvement (formatted as that section writes it)."""
    out: dict[str, Any] = {"model_baseline_performance(ms)": round_ms(baseline)}
    if result is not None:
        out["model_result_performance(ms)"] = round_ms(result)
        out["model_performance_improvement"] = S.format_pct(S.improvement(round_ms(baseline), round_ms(result)),
                                                            section)
    return out


def task_document(task: TuneTask) -> Any:
    """The task's part of the result file: its list of items, or ``{key: items}`` in the report layout."""
    items = task.writer.tasks[task.key]
    return items if task.writer.layout == "list" else {task.key: items}


def ordered_map(fn: Callable[[Any], Any], items: list[Any], workers: int) -> Iterator[Any]:
    """``map`` in order; with TE_PARALLEL_COMPILER > 1 candidates are measured on that many threads."""
    if workers <= 1 or len(items) <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(fn, items)

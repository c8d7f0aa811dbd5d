"""``msprof-py cluster``: find every rank's PROF dir, reduce the ranks in parallel, write
msprof-analyze's cluster outputs and a summary with the slow ranks, links and hosts."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from msprof_py.cluster.combine import ClusterData, combine
from msprof_py.cluster.findings import Finding, find_all
from msprof_py.cluster.parallel import find_rank_dirs, map_ranks, scheduler_address
from msprof_py.cluster.report import summary
from msprof_py.errors import InvalidParamError, InvalidPathError


@dataclass
class ClusterReport:
    data: ClusterData
    findings: list[Finding]
    written: list[Path] = field(default_factory=list)
    text: str = ""

    @property
    def warnings(self) -> list[str]:
        return self.data.warnings


def analyze_cluster(input_dir: str | os.PathLike[str], output: str | os.PathLike[str] | None = None, *,
                    workers: int | None = None, scheduler: str | None = None, steps: tuple[int | None, int | None]
                    = (None, None), timeline: bool = False, write: bool = True) -> ClusterReport:
    """Analyse every rank under ``input_dir``; outputs in ``output`` (default ``input_dir``)/cluster_analysis_output.

    Args:
        workers: local processes (default: all cores); ignored with a Dask ``scheduler``.
        scheduler: Dask scheduler address (default ``$MSPROF_PY_SCHEDULER``; none = local pool).
        steps: first and last iteration to analyse (inclusive; None = open).
        timeline: also write the merged, clock-aligned timeline of the ``steps`` window.
    """
    if workers is not None and workers < 1:
        raise InvalidParamError(f"workers must be >= 1, got {workers}")
    paths = find_rank_dirs(input_dir)
    results = map_ranks(paths, workers, scheduler_address(scheduler))
    full = combine(results)
    data = full.select_steps(*steps)
    if data.steps.empty:
        data.warnings.append("no iteration in the selected window: step times and findings are empty")
    findings = find_all(data)
    out = Path(output) if output is not None else Path(input_dir)
    written: list[Path] = []
    if write:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise InvalidPathError(f"cannot create output directory {out}: {err.strerror or err}") from None
        from msprof_py.cluster.outputs import write_all

        try:
            written = write_all(data, out)
            if timeline:
                from msprof_py.cluster.timeline import write_timeline

                written.append(write_timeline(data, out, full, workers, scheduler_address(scheduler)))
        except OSError as err:
            raise InvalidPathError(f"cannot write the cluster outputs in {out}: {err.strerror or err}") from None
    n_steps = int(data.steps["step"].nunique()) if not data.steps.empty else 0
    report = ClusterReport(data, findings, written)
    report.text = summary(data, findings, written, n_steps)
    return report


def parse_steps(text: str | None) -> tuple[int | None, int | None]:
    """``"3-5"`` -> (3, 5); ``"4"`` -> (4, 4); None -> every iteration."""
    if text is None:
        return None, None
    import re

    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text)
    if not m:
        raise InvalidParamError(f"--steps {text!r}: expected A-B or N (iteration ids, 1-based)")
    a = int(m.group(1))
    b = int(m.group(2)) if m.group(2) else a
    if a < 1 or b < a:
        raise InvalidParamError(f"--steps {text!r}: need 1 <= A <= B")
    return a, b

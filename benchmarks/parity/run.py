"""Export one real PROF dir with msprof_py on a temporary copy and compare with msprof's files.

The copy holds the raw data only (``host/``, ``device_*/`` without msprof's ``sqlite/``), so
nothing msprof wrote can leak into our output, and the original dir is never written.
"""
from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.parity.cells import Check
from benchmarks.parity.csvs import compare_csvs, files_by_kind
from benchmarks.parity.dbs import compare_dbs, expected_db_checks, find_db
from benchmarks.parity.timeline import compare_timeline

OUTPUT_DIR = "mindstudio_profiler_output"
# msprof's outputs and intermediates, and our own cache: not raw data
SKIP = {OUTPUT_DIR, "mindstudio_profiler_log", "sqlite", "msprof_py_cache"}
ORDER = ["op_summary", "op_statistic", "api_statistic", "task_time", "step_trace", "timeline", "timeline.hw",
         "timeline.flows", "db", "db.task", "db.api", "db.pmu", "op_summary.pmu"]
PMU = "op_summary.pmu"


@dataclass
class ProfResult:
    """The checks of one PROF dir.  ``agrees``: every check but the PMU columns is ok."""

    name: str
    checks: dict[str, Check] = field(default_factory=dict)
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    extra_files: list[str] = field(default_factory=list)  # kinds we write and msprof did not
    seconds: float = 0.0

    @property
    def agrees(self) -> bool:
        return self.error is None and all(c.ok for n, c in self.checks.items() if n != PMU)

    def line(self) -> str:
        head = self.name
        if self.error:
            return f"{head} ERROR {self.error}"
        base = [c for n, c in self.checks.items() if n != PMU and not c.skipped]
        good = sum(c.ok for c in base)
        bad = [c.summary() for c in base if not c.ok]
        pmu = self.checks.get(PMU)
        tail = f" [pmu {'ok' if pmu.ok else pmu.summary().split(': ', 1)[1]}]" if pmu and not pmu.skipped else ""
        status = "ok  " if not bad else "DIFF"
        return f"{head} {status} {good}/{len(base)}" + (" | " + " | ".join(bad) if bad else "") + tail

    def details(self) -> str:
        out = [self.line()]
        for n in ORDER:
            c = self.checks.get(n)
            if c is None or c.skipped:
                continue
            out.append(f"  {c.summary(max_items=20)}  (msprof {c.rows_expected}, msprof_py {c.rows_ours})")
            out += [f"      {e}" for e in c.examples]
        if self.extra_files:
            out.append(f"  files msprof did not write: {', '.join(self.extra_files)}")
        if self.warnings:
            out.append(f"  msprof_py warnings: {len(self.warnings)}")
            out += [f"      {w}" for w in self.warnings[:10]]
        return "\n".join(out)


def has_msprof_exports(prof: Path) -> bool:
    out = prof / OUTPUT_DIR
    return find_db(prof) is not None or (out.is_dir() and any(files_by_kind(out, "csv") or files_by_kind(out, "json")))


def expected_checks(prof: Path) -> list[str]:
    """The checks that have something of msprof's to compare with in ``prof`` (cheap: file names only)."""
    out_dir = prof / OUTPUT_DIR
    csvs = files_by_kind(out_dir, "csv")
    names = [k for k in csvs]
    if "op_summary" in csvs:
        with open(csvs["op_summary"][0], encoding="utf-8", errors="replace") as fp:
            header = [c.strip() for c in fp.readline().split(",")]
        if "Context ID" in header and header[-1] != "Context ID":
            names.append(PMU)
    if "msprof" in files_by_kind(out_dir, "json"):
        names += ["timeline", "timeline.hw", "timeline.flows"]
    names += expected_db_checks(prof)
    return sorted(names, key=lambda n: ORDER.index(n) if n in ORDER else 99)


def find_profs(root: Path) -> list[Path]:
    """Every ``PROF_*`` dir under ``root`` (any depth) that holds msprof's exports, sorted."""
    if root.name.startswith("PROF_") and root.is_dir():
        return [root] if has_msprof_exports(root) else []
    return sorted(p for p in root.rglob("PROF_*") if p.is_dir() and has_msprof_exports(p))


def _copy_raw(prof: Path, dest: Path) -> Path:
    def ignore(_d: str, names: list[str]) -> list[str]:
        return [n for n in names if n in SKIP or (n.startswith("msprof_") and n.endswith(".db"))]

    target = dest / prof.name
    shutil.copytree(prof, target, ignore=ignore, symlinks=True)
    return target


def compare_prof(prof: Path, name: str | None = None, workdir: Path | None = None) -> ProfResult:
    """Export a copy of ``prof`` with msprof_py and compare every file msprof wrote there."""
    from msprof_py.errors import MsprofError
    from msprof_py.export.runner import ExportOptions, export

    t0 = time.perf_counter()
    res = ProfResult(name or prof.name)
    tmp = Path(tempfile.mkdtemp(prefix="parity_", dir=workdir))
    try:
        copy = _copy_raw(prof, tmp)
        try:
            result = export(copy, ExportOptions())
            res.warnings = [str(w) for w in result.warnings]
        except MsprofError as err:
            res.error = f"export failed: {err}"
            return res
        except Exception as err:  # a crash is a finding, not the end of the run
            res.error = f"export crashed: {type(err).__name__}: {err}"
            return res
        exp_out, our_out = prof / OUTPUT_DIR, copy / OUTPUT_DIR
        checks = compare_csvs(exp_out, our_out) + compare_timeline(exp_out, our_out) + compare_dbs(prof, copy)
        res.checks = {c.name: c for c in sorted(checks, key=lambda c: ORDER.index(c.name) if c.name in ORDER else 99)}
        exp_kinds = set(files_by_kind(exp_out, "csv")) | set(files_by_kind(exp_out, "json"))
        res.extra_files = sorted((set(files_by_kind(our_out, "csv")) | set(files_by_kind(our_out, "json")))
                                 - exp_kinds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        res.seconds = time.perf_counter() - t0
    return res

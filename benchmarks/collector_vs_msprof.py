"""msprof's own analysis on PROF dirs that ``msprof-py collect`` wrote, against ``msprof-py export``.

For each workload: collect it (``--fixed-clock``, seed 1, N devices), run msprof's analysis
(``export summary`` and ``export timeline``) on one copy, and check that it accepts the dir
(exit 0, no ``[ERROR]`` line on its console or in ``mindstudio_profiler_log/``); then compare
every file msprof wrote there with ``msprof-py export`` of the same raw data, with the checks of
the real-data parity tool (``benchmarks/parity/``: op_summary, op_statistic, api_statistic,
task_time, step_trace, the timeline's tracks / hardware events / flows, the unified db); last,
run msprof again on a copy that ``msprof-py export`` has already exported (our outputs and parse
cache inside) and check that it still accepts it and writes the same op_summary rows.

msprof's analysis is Ascend/msprof's ``analysis/msprof/msprof.py``: ``--msprof PATH`` (repeatable)
or ``$MSPROF_ANALYSIS`` (paths separated by ``:``).  With ``analysis/lib64/msprof_analysis.so``
next to it, msprof runs its C++ analysis (the path CANN ships; its shared libraries must be on
``LD_LIBRARY_PATH``), otherwise its pure-Python path.  This script only runs it; it neither builds
nor ships it.  The PROF dirs it writes are copies in a temporary folder.

    python benchmarks/collector_vs_msprof.py --msprof /path/to/analysis/msprof/msprof.py
    python benchmarks/collector_vs_msprof.py --workload resnet50:3:2 --msprof ... -v

Prints one block per (workload, analysis) and a table of differing checks; exit 0 when msprof
accepted every dir, 1 otherwise (differences alone do not fail: they are the report).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.parity.csvs import files_by_kind, read_csvs  # noqa: E402
from benchmarks.parity.run import ORDER, OUTPUT_DIR, ProfResult, compare_prof  # noqa: E402

DEFAULT_WORKLOADS = ["resnet50:3:2", "bert:3:2", "llm_decoder:3:2", "single_op:3:2"]
LOG_DIR = "mindstudio_profiler_log"
ERROR_RE = re.compile(r"\[ERROR\]")


@dataclass
class Outcome:
    """One workload under one msprof analysis."""

    workload: str
    analysis: str  # "C++" or "Python"
    errors: list[str] = field(default_factory=list)  # why msprof did not accept a dir
    parity: ProfResult | None = None
    after_export: str = ""


def analysis_kind(msprof: Path) -> str:
    return "C++" if (msprof.parents[1] / "lib64" / "msprof_analysis.so").is_file() else "Python"


def run_msprof(python: str, msprof: Path, prof: Path, log: Path) -> list[str]:
    """``export summary`` then ``export timeline`` on ``prof``; the reasons it was not accepted."""
    problems = []
    for what in ("summary", "timeline"):
        out = log.with_name(f"{log.stem}_{what}.log")
        with open(out, "wb") as fp:
            rc = subprocess.run([python, str(msprof), "export", what, "-dir", str(prof)], cwd=msprof.parents[1],
                                stdout=fp, stderr=subprocess.STDOUT).returncode
        text = out.read_text(errors="replace")
        if rc != 0:
            problems.append(f"export {what}: exit {rc}")
        problems += [f"export {what}: {ln.strip()[:200]}" for ln in text.splitlines() if ERROR_RE.search(ln)][:3]
    for p in sorted((prof / LOG_DIR).glob("*")) if (prof / LOG_DIR).is_dir() else []:
        if p.is_file():
            bad = [ln for ln in p.read_text(errors="replace").splitlines() if ERROR_RE.search(ln)]
            problems += [f"{LOG_DIR}/{p.name}: {ln.strip()[:200]}" for ln in bad[:3]]
    return problems


def op_summary_rows(prof: Path) -> list[tuple[str, ...]]:
    paths = files_by_kind(prof / OUTPUT_DIR, "csv").get("op_summary", [])
    return sorted(tuple(c.strip() for c in r) for r in read_csvs(paths)[1]) if paths else []


def collect(workload: str, dest: Path) -> Path:
    name, iterations, devices = (workload.split(":") + ["3", "2"])[:3]
    subprocess.run([sys.executable, "-m", "msprof_py", "collect", "--workload", name, "--iterations", iterations,
                    "--devices", devices, "--seed", "1", "--fixed-clock", "--output", str(dest)],
                   check=True, stdout=subprocess.DEVNULL)
    return next(dest.glob("PROF_*"))


def check(workload: str, src: Path, msprof: Path, python: str, work: Path) -> Outcome:
    kind = analysis_kind(msprof)
    res = Outcome(workload, kind)
    tag = f"{workload.split(':')[0]}_{'cpp' if kind == 'C++' else 'python'}"
    fresh = work / tag / "fresh" / src.name
    shutil.copytree(src, fresh)
    res.errors = run_msprof(python, msprof, fresh, work / tag / "msprof")
    res.parity = compare_prof(fresh, f"{workload} vs msprof {kind}", workdir=work)
    # msprof on a dir that msprof-py has exported (our files and parse cache inside it)
    after = work / tag / "after" / src.name
    shutil.copytree(src, after)
    subprocess.run([sys.executable, "-m", "msprof_py", "export", "--output", str(after)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ours_before = set(files_by_kind(after / OUTPUT_DIR, "csv").get("op_summary", []))
    problems = run_msprof(python, msprof, after, work / tag / "after")
    res.errors += [f"after msprof-py export: {p}" for p in problems]
    theirs = [p for p in files_by_kind(after / OUTPUT_DIR, "csv").get("op_summary", []) if p not in ours_before]
    rows_after = sorted(tuple(c.strip() for c in r) for r in read_csvs(theirs)[1]) if theirs else []
    rows_fresh = op_summary_rows(fresh)
    res.after_export = ("accepted, same op_summary" if rows_after == rows_fresh and rows_fresh else
                        f"op_summary after export: {len(rows_after)} rows, fresh {len(rows_fresh)}, "
                        f"{len(set(rows_after) ^ set(rows_fresh))} differ")
    return res


def table(outcomes: list[Outcome]) -> str:
    """Markdown: one row per (workload, analysis), one column per check (``ok`` or its differences)."""
    names = [n for n in ORDER if any(o.parity and n in o.parity.checks and not o.parity.checks[n].skipped
                                     for o in outcomes)]
    lines = ["| workload | msprof | accepted | " + " | ".join(names) + " |", "|---" * (len(names) + 3) + "|"]
    for o in outcomes:
        cells = []
        for n in names:
            c = o.parity.checks.get(n) if o.parity else None
            cells.append("-" if c is None or c.skipped else
                         ("ok" if c.ok else c.summary(max_items=2).split(": ", 1)[1]).replace("|", "/"))
        acc = "yes" if not o.errors else f"NO ({len(o.errors)})"
        lines.append(f"| {o.workload} | {o.analysis} | {acc} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    env = [p for p in os.environ.get("MSPROF_ANALYSIS", "").split(os.pathsep) if p]
    ap.add_argument("--msprof", action="append", default=None,
                    help="Ascend/msprof's analysis/msprof/msprof.py (repeatable; $MSPROF_ANALYSIS)")
    ap.add_argument("--python", default=sys.executable, help="the Python that runs msprof's analysis")
    ap.add_argument("--workload", action="append", default=None, metavar="NAME[:ITERATIONS[:DEVICES]]",
                    help=f"default: {' '.join(DEFAULT_WORKLOADS)}")
    ap.add_argument("-v", "--verbose", action="store_true", help="examples of every difference")
    ap.add_argument("--keep", type=Path, default=None, help="keep the PROF dirs and logs in this folder")
    a = ap.parse_args(argv)
    analyses = [Path(p).resolve() for p in (a.msprof or env)]
    if not analyses or not all(p.is_file() for p in analyses):
        print("collector_vs_msprof: give msprof's analysis/msprof/msprof.py with --msprof or $MSPROF_ANALYSIS",
              file=sys.stderr)
        return 2
    work = a.keep or Path(tempfile.mkdtemp(prefix="collector_vs_msprof_"))
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    outcomes: list[Outcome] = []
    try:
        for wl in a.workload or DEFAULT_WORKLOADS:
            src = collect(wl, work / wl.split(":")[0] / "src")
            for msprof in analyses:
                o = check(wl, src, msprof, a.python, work)
                outcomes.append(o)
                p = o.parity
                print(p.details() if a.verbose else p.line())
                print(f"  msprof {o.analysis}: " + ("accepted (exit 0, no [ERROR])" if not o.errors else
                                                    "NOT accepted: " + "; ".join(o.errors[:5])))
                print(f"  after msprof-py export: {o.after_export}", flush=True)
    finally:
        if a.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print(table(outcomes))
    print(f"\n{len(outcomes)} runs, {time.perf_counter() - t0:.0f} s")
    return 0 if all(not o.errors and o.after_export.startswith("accepted") for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: msprof's own analysis against ``msprof-py export`` on copies of the same PROF dir.

Each tool runs on its own fresh copy of the PROF dir (so neither sees the other's output or a
parse cache), one after the other, as a child process, after a ``sync`` (the page cache's dirty
pages of the run before, msprof's few GB of output, are written back before the next run starts,
not during it).  ``--rounds N`` repeats the pair N times and prints every run, each round's ratios
and the wall ratio's min / median / max: on a shared or virtual machine one round's ratio moves
by +-10 %.  For each run it prints the wall time and
two peak-memory figures:

- ``tree RSS``: the largest sum of the resident set sizes of the whole process tree, sampled
  every 20 ms from /proc (msprof's analysis forks workers; their memory counts together);
- ``tree PSS``: the largest sum of the proportional set sizes (``/proc/PID/smaps_rollup``) of
  the tree, sampled every 100 ms: a page shared by several processes (a forked process's
  copy-on-write view of its parent's tables) counts once in all, where the RSS sum counts it
  in every process that maps it;
- ``max RSS``: the largest single process (``wait4``'s ``ru_maxrss`` of the child and its
  waited-for descendants).

and the CPU time (user + system, ``wait4``'s rusage: the child and the workers it waited for),
the steadier figure on a shared machine.

msprof's analysis is Ascend/msprof's ``analysis/msprof/msprof.py``; give its path with
``--msprof PATH`` or ``$MSPROF_ANALYSIS``.  Without ``analysis/lib64/msprof_analysis.so`` it runs
its pure-Python path; with the .so built from ``analysis/csrc`` (the path CANN ships) its C++
path.  The script only runs it; it neither builds nor ships it.

    python benchmarks/bench_vs_msprof.py PROF_DIR --msprof /path/to/analysis/msprof/msprof.py
    python benchmarks/bench_vs_msprof.py --collect resnet50:716:2 --msprof ...   # collect first

Prints a Markdown table for benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Run:
    """One timed child run: wall seconds, peak tree RSS and peak single-process RSS in MB."""

    label: str
    wall_s: float
    tree_rss_mb: float
    max_rss_mb: float
    returncode: int
    cpu_s: float = 0.0
    tree_pss_mb: float = 0.0


def _tree_rss_kb(root_pid: int, field: str = "rss") -> int:
    """Sum of VmRSS (``field`` "pss": of Pss, from smaps_rollup) over ``root_pid`` and all its
    descendants (0 once they are gone)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as f:
                ppid, kb = 0, 0
                for line in f:
                    if line.startswith(b"PPid:"):
                        ppid = int(line.split()[1])
                    elif line.startswith(b"VmRSS:"):
                        kb = int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
        pid = int(entry.name)
        rss[pid] = kb
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root_pid]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0) if field == "rss" else _pss_kb(pid)
        todo.extend(children.get(pid, ()))
    return total


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def timed(label: str, cmd: list[str], cwd: Path | None = None, log: Path | None = None) -> Run:
    """Run ``cmd`` to completion, sampling its process tree's memory every 20 ms."""
    out = open(log, "wb") if log else subprocess.DEVNULL
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    peak = pss = 0
    done = threading.Event()

    def sample() -> None:  # RSS every 20 ms, PSS (slower to read) every 100 ms
        nonlocal peak, pss
        k = 0
        while not done.is_set():
            peak = max(peak, _tree_rss_kb(proc.pid))
            if k % 5 == 0:
                pss = max(pss, _tree_rss_kb(proc.pid, "pss"))
            k += 1
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, ru = os.wait4(proc.pid, 0)  # this child's own rusage (not every child's so far)
    wall = time.perf_counter() - t0
    rc = proc.returncode = os.waitstatus_to_exitcode(status)
    done.set()
    sampler.join()
    if log:
        out.close()
    return Run(label, wall, peak / 1024, ru.ru_maxrss / 1024, rc, ru.ru_utime + ru.ru_stime, pss / 1024)


def fresh_copy(prof: Path, work: Path, tag: str) -> Path:
    """A fresh copy of ``prof`` under ``work/tag`` (a copy a run before left there, with ``--work``
    or ``--keep``, is replaced: each tool must start from the raw data alone)."""
    dst = work / tag / prof.name
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(prof, dst, symlinks=True)
    return dst


def raw_mb(prof: Path) -> float:
    return sum(p.stat().st_size for p in prof.glob("*/data/*") if p.is_file()) / 2**20


def one_round(prof: Path, work: Path, analysis: Path, python: str, msprof_py: list[str], k: int,
              rounds: int) -> list[Run]:
    """msprof's ``export summary`` and ``export timeline`` on one fresh copy, then ``msprof-py
    export`` on another: three runs.  Dirty pages are written back (``sync``) before each run, so a
    run does not pay for the writeback of the one before it; the copies are removed after the round
    (unless kept: ``--keep`` / ``--work``), so rounds do not fill the disk."""
    tag = "" if rounds == 1 else f"_{k + 1}"
    runs = []
    m_copy = fresh_copy(prof, work, f"msprof{tag}")
    for what in ("summary", "timeline"):
        os.sync()
        runs.append(timed(f"msprof {what}", [python, str(analysis), "export", what, "-dir", str(m_copy)],
                          cwd=analysis.parents[1], log=work / f"msprof_{what}{tag}.log"))
    p_copy = fresh_copy(prof, work, f"msprof_py{tag}")
    os.sync()
    runs.append(timed("msprof-py export", [*msprof_py, "export", "--output", str(p_copy)],
                      log=work / f"msprof_py{tag}.log"))
    if rounds > 1 and k < rounds - 1:
        shutil.rmtree(m_copy.parent, ignore_errors=True)
        shutil.rmtree(p_copy.parent, ignore_errors=True)
    return runs


def ratios(runs: list[Run], raw: float) -> str:
    """One line: msprof's two runs (summary + timeline) against msprof-py's export."""
    m_wall = sum(r.wall_s for r in runs[:2])
    m_cpu = sum(r.cpu_s for r in runs[:2])
    m_rss = max(r.tree_rss_mb for r in runs[:2])
    p = runs[2]
    if p.wall_s <= 0 or p.tree_rss_mb <= 0:
        return "msprof-py gave no figures"
    return (f"msprof (summary + timeline) {m_wall:.1f} s wall, {m_cpu:.1f} s CPU, {m_rss:,.0f} MB; msprof-py "
            f"{p.wall_s:.1f} s wall, {p.cpu_s:.1f} s CPU, {p.tree_rss_mb:,.0f} MB: {m_wall / p.wall_s:.1f}x faster "
            f"(CPU {m_cpu / max(p.cpu_s, 1e-9):.1f}x), {m_rss / p.tree_rss_mb:.1f}x less memory "
            f"({max(r.tree_pss_mb for r in runs[:2]) / max(p.tree_pss_mb, 1e-9):.1f}x by PSS, the pages "
            f"shared by msprof-py's forked DB processes counted once); "
            f"peak = {p.tree_rss_mb / max(raw, 1e-9):.1f}x the raw size ({p.tree_pss_mb / max(raw, 1e-9):.1f}x by PSS)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prof", nargs="?", type=Path, help="a PROF_* dir (left untouched: runs use copies)")
    ap.add_argument("--collect", metavar="WORKLOAD:ITERATIONS:DEVICES",
                    help="collect this with msprof-py first (seed 1) instead of giving PROF")
    ap.add_argument("--msprof", default=os.environ.get("MSPROF_ANALYSIS"),
                    help="path to Ascend/msprof's analysis/msprof/msprof.py ($MSPROF_ANALYSIS)")
    ap.add_argument("--python", default=sys.executable, help="the Python that runs msprof's analysis")
    ap.add_argument("--work", type=Path, default=None, help="scratch dir for the copies (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the copies and logs")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run both tools this many times, one after the other in each round (default 1); "
                         "every round is printed, then the ratio's min / median / max")
    a = ap.parse_args()
    if a.rounds < 1:
        print("bench_vs_msprof: --rounds must be at least 1", file=sys.stderr)
        return 2
    if not a.msprof or not Path(a.msprof).is_file():
        print("bench_vs_msprof: give msprof's analysis/msprof/msprof.py with --msprof or $MSPROF_ANALYSIS",
              file=sys.stderr)
        return 2
    work = a.work or Path(tempfile.mkdtemp(prefix="bench_vs_msprof_"))
    work.mkdir(parents=True, exist_ok=True)
    msprof_py = [sys.executable, "-m", "msprof_py"]
    try:
        if a.collect:
            wl, it, dev = a.collect.split(":")
            subprocess.run([*msprof_py, "collect", "--workload", wl, "--iterations", it, "--devices", dev,
                            "--seed", "1", "--output", str(work / "src")], check=True, stdout=subprocess.DEVNULL)
            a.prof = next((work / "src").glob("PROF_*"))
        if a.prof is None or not a.prof.is_dir():
            print("bench_vs_msprof: give a PROF_* dir or --collect", file=sys.stderr)
            return 2
        analysis = Path(a.msprof).resolve()
        cpp = (analysis.parents[1] / "lib64" / "msprof_analysis.so").is_file()
        load0 = os.getloadavg()[0]
        rounds = [one_round(a.prof, work, analysis, a.python, msprof_py, k, a.rounds) for k in range(a.rounds)]
        now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        print(f"{now}, {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
              f"load average {load0:.1f} before, {os.getloadavg()[0]:.1f} after; msprof's {'C++' if cpp else 'Python'} path; "
              f"{a.prof.name}: {raw_mb(a.prof):.0f} MB raw\n")
        print("| round | run | wall | CPU (user+sys) | peak tree RSS | peak tree PSS | peak single-process RSS | exit |")
        print("|---|---|---|---|---|---|---|---|")
        for k, runs in enumerate(rounds, 1):
            for r in runs:
                print(f"| {k} | {r.label} | {r.wall_s:.1f} s | {r.cpu_s:.1f} s | {r.tree_rss_mb:,.0f} MB "
                      f"| {r.tree_pss_mb:,.0f} MB | {r.max_rss_mb:,.0f} MB | {r.returncode} |")
        print()
        for k, runs in enumerate(rounds, 1):
            print(f"round {k}: " + ratios(runs, raw_mb(a.prof)))
        if len(rounds) > 1:
            walls = sorted(sum(r.wall_s for r in rs[:2]) / max(rs[2].wall_s, 1e-9) for rs in rounds)
            print(f"\nwall ratio over {len(rounds)} rounds: min {walls[0]:.1f}x, median "
                  f"{statistics.median(walls):.1f}x, max {walls[-1]:.1f}x")
        runs = [r for rs in rounds for r in rs]
        return 0 if all(r.returncode == 0 for r in runs) else 1
    finally:
        if not a.keep and a.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

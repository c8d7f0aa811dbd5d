"""Issue 12, acceptance 2: a 10,000,000-task collection exports in bounded memory and linear time.

Collects (or takes) a reference run of ~1 M device tasks and a run ~10x its size, with the same
workload and device count, then exports each (``msprof-py export``, text: timelines, summaries,
db, advice; a fresh PROF dir, so no parse cache) in its own process and prints, per run:
tasks, raw size, wall, CPU (user+sys of the process tree), peak RSS of the process tree (sum
of the live processes' RSS, sampled every 50 ms: worker processes count) and of the largest
process, output size; then the 10M run's time per task against the 1M run's (the acceptance:
within 1.2x) and its peak RSS against 2 GB.  ``msprof_py.parse.memory_needed`` (what
``msprof_py.load`` announces before loading) is printed for both.

The machine may be shared: a run whose tree passes ``--max-rss-mb`` is killed (reported as
such) rather than allowed to push everybody's jobs out of memory.  Collected dirs and export
outputs are deleted at the end unless ``--keep``.

    python benchmarks/bench_10m.py --dir /tmp/b10m                       # collect both, export both
    python benchmarks/bench_10m.py --prof PROF_10M --ref-prof PROF_1M     # given dirs (exported in place)
    python benchmarks/bench_10m.py --dir /tmp/b10m --skip-ref --ref-per-mtask 12.5  # 1M figure given
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GB = 1024 ** 3
RAW_BYTES_PER_TASK = 270  # resnet50 with PMU records (measured: 270 MB per 1.1 M tasks, 8 devices)
OUT_BYTES_PER_TASK = 1600
CLI = [sys.executable, "-c", "import sys; from msprof_py.cli import main; sys.argv[0] = 'msprof-py'; main()"]  # text export incl. the db (measured ~1.1-1.5 kB per task)


@dataclass
class Run:
    """One measured process tree."""

    cmd: list[str]
    wall_s: float = 0.0
    cpu_s: float = 0.0
    tree_peak_mb: float = 0.0
    proc_peak_mb: float = 0.0
    rc: int = 0
    killed: bool = False
    out: str = ""
    samples: list[float] = field(default_factory=list)


def _children_of() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    return kids


def _tree_rss_mb(pid: int) -> float:
    kids, todo, total = _children_of(), [pid], 0
    while todo:
        p = todo.pop()
        todo.extend(kids.get(p, []))
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            pass
    return total / 2 ** 20


def measure(cmd: list[str], max_rss_mb: float, nice: int) -> Run:
    """Run ``cmd`` (niced), sampling the tree's RSS; kill it past ``max_rss_mb``."""
    run = Run(cmd)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: os.nice(nice), start_new_session=True)
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True)
    reader.start()
    while True:
        try:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:
            break
        if pid:
            run.rc = os.waitstatus_to_exitcode(status)
            run.cpu_s = usage.ru_utime + usage.ru_stime
            run.proc_peak_mb = usage.ru_maxrss / 1024
            proc.returncode = run.rc
            break
        rss = _tree_rss_mb(proc.pid)
        run.samples.append(rss)
        run.tree_peak_mb = max(run.tree_peak_mb, rss)
        if rss > max_rss_mb and not run.killed:
            run.killed = True
            os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.05)
    run.wall_s = time.perf_counter() - t0
    reader.join(timeout=5)
    run.out = "".join(out)
    return run


def collect(folder: Path, workload: str, iterations: int, devices: int, seed: int, args) -> tuple[Path, int, Run]:
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [*CLI, "collect", "--workload", workload, "--iterations", str(iterations),
           "--devices", str(devices), "--seed", str(seed), "--output", str(folder)]
    run = measure(cmd, args.max_rss_mb, args.nice)
    m = re.search(r"PROF directory: (\S+)", run.out)
    if run.rc != 0 or not m:
        sys.exit(f"bench_10m: collect failed (exit {run.rc}):\n{run.out[-2000:]}")
    return Path(m.group(1)), task_count(Path(m.group(1)), run.out), run


def task_count(prof: Path, collect_out: str = "") -> int:
    """Device tasks of a PROF dir: what the collector printed, else the STARS start/end log pairs
    (64 B each) of every device."""
    m = re.search(r"device tasks: (\d+)", collect_out)
    if m:
        return int(m.group(1))
    stars = sum(p.stat().st_size for p in prof.glob("device_*/data/stars_soc.data.*") if not p.name.endswith(".done"))
    return stars // 128


def raw_bytes(prof: Path) -> int:
    return sum(p.stat().st_size for d in prof.iterdir() if d.name == "host" or d.name.startswith("device_")
               for p in (d / "data").glob("*") if p.is_file())


def out_bytes(prof: Path) -> int:
    out = prof / "mindstudio_profiler_output"
    return sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) if out.is_dir() else 0


def export(prof: Path, args) -> Run:
    cmd = [*CLI, "export", "--output", str(prof)]
    return measure(cmd, args.max_rss_mb, args.nice)


def memory_needed_mb(prof: Path) -> float:
    sys.path.insert(0, str(ROOT))
    from msprof_py.parse import memory_needed
    return memory_needed(prof) / 2 ** 20


def row(label: str, tasks: int, prof: Path, run: Run) -> str:
    state = "killed (over --max-rss-mb)" if run.killed else f"exit {run.rc}"
    return (f"| {label} | {tasks:,} | {raw_bytes(prof) / 2 ** 20:,.0f} MB | {run.wall_s:.1f} s | {run.cpu_s:.1f} s | "
            f"{run.tree_peak_mb:,.0f} MB | {run.proc_peak_mb:,.0f} MB | {out_bytes(prof) / 2 ** 20:,.0f} MB | "
            f"{run.wall_s / tasks * 1e6:.2f} s | {run.cpu_s / tasks * 1e6:.2f} s | {state} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/bench_10m"), help="where to collect")
    ap.add_argument("--prof", type=Path, help="an existing ~10M-task PROF dir (exported in place)")
    ap.add_argument("--ref-prof", type=Path, help="an existing ~1M-task PROF dir (exported in place)")
    ap.add_argument("--workload", default="resnet50")
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=1622, help="10M run (resnet50, 8 devices: 6,168 tasks each)")
    ap.add_argument("--ref-iterations", type=int, default=162, help="1M reference run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-ref", action="store_true", help="no 1M run; compare with --ref-per-mtask")
    ap.add_argument("--ref-per-mtask", type=float, help="the 1M run's export wall seconds per million tasks")
    ap.add_argument("--max-rss-mb", type=float, default=8000, help="kill a run whose process tree passes this")
    ap.add_argument("--nice", type=int, default=10)
    ap.add_argument("--keep", action="store_true", help="keep the collected dirs and export outputs")
    args = ap.parse_args()
    os.chdir(ROOT)

    todo_tasks = (0 if args.prof else args.iterations * 6168) + (0 if args.skip_ref or args.ref_prof else
                                                                 args.ref_iterations * 6168)
    need = todo_tasks * RAW_BYTES_PER_TASK + (args.iterations + args.ref_iterations) * 6168 * OUT_BYTES_PER_TASK
    free = shutil.disk_usage(args.dir if args.dir.exists() else args.dir.parent).free
    if need > free * 0.8:
        sys.exit(f"bench_10m: needs ~{need / GB:.1f} GB of disk, {free / GB:.1f} GB free: not started")

    print(f"# bench_10m {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}, Python {platform.python_version()}", flush=True)
    made: list[Path] = []
    results = []
    try:
        plan = []
        if not args.skip_ref:
            plan.append(("1M", args.ref_prof, args.ref_iterations))
        plan.append(("10M", args.prof, args.iterations))
        for label, given, iters in plan:
            if given is not None:
                prof, tasks = given, task_count(given)
            else:
                prof, tasks, c = collect(args.dir / label, args.workload, iters, args.devices, args.seed, args)
                made.append(args.dir / label)
                print(f"collect {label}: {tasks:,} tasks, {raw_bytes(prof) / 2 ** 20:,.0f} MB raw, {c.wall_s:.1f} s wall, "
                      f"{c.cpu_s:.1f} s CPU, peak RSS {c.proc_peak_mb:,.0f} MB", flush=True)
            print(f"memory_needed({label}) = {memory_needed_mb(prof):,.0f} MB (msprof_py.load's estimate)", flush=True)
            run = export(prof, args)
            results.append((label, tasks, prof, run))
            print(row(label, tasks, prof, run), flush=True)
            if run.rc != 0 and not run.killed:
                print(run.out[-3000:])
            if not args.keep and given is None:
                shutil.rmtree(prof / "mindstudio_profiler_output", ignore_errors=True)
    finally:
        if not args.keep:
            for d in made:
                shutil.rmtree(d, ignore_errors=True)

    print("\n| run | tasks | raw | wall | CPU | peak RSS (tree) | peak RSS (largest process) | output | wall / M tasks "
          "| CPU / M tasks | result |\n|---|---|---|---|---|---|---|---|---|---|---|")
    for label, tasks, prof, run in results:
        print(f"| {label} | {tasks:,} | | {run.wall_s:.1f} s | {run.cpu_s:.1f} s | {run.tree_peak_mb:,.0f} MB | "
              f"{run.proc_peak_mb:,.0f} MB | | {run.wall_s / tasks * 1e6:.2f} s | {run.cpu_s / tasks * 1e6:.2f} s | "
              f"{'killed' if run.killed else run.rc} |")
    big = [r for r in results if r[0] == "10M"][0]
    ref = [r for r in results if r[0] == "1M"]
    per = big[3].wall_s / big[1] * 1e6
    ref_per = ref[0][3].wall_s / ref[0][1] * 1e6 if ref else args.ref_per_mtask
    if big[3].killed or big[3].rc != 0:
        print(f"\n10M export did not finish ({'killed past --max-rss-mb' if big[3].killed else f'exit {big[3].rc}'}): "
              "no time per task")
    elif ref_per:
        cpu_note = (f"; CPU per task {big[3].cpu_s / big[1] / (ref[0][3].cpu_s / ref[0][1]):.2f}x" if ref else "")
        print(f"\n10M wall per task = {per / ref_per:.2f}x the 1M run's (acceptance: <= 1.2x){cpu_note}")
    print(f"10M peak RSS (tree) {big[3].tree_peak_mb:,.0f} MB (acceptance: < 2,048 MB)"
          + (" - the run was KILLED at --max-rss-mb" if big[3].killed else ""))


if __name__ == "__main__":
    main()

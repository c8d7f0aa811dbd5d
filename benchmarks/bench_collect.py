"""Benchmark: simulate and write ~1,000,000 device tasks with profiling on (issue 2, acceptance 5).

    PYTHONPATH=. python benchmarks/bench_collect.py [--tasks 1000000] [--workload single_op] [--append]

A 1-iteration calibration run measures tasks per iteration; the timed run uses enough
iterations to reach ``--tasks``.  Reports wall time of the timed run (simulate + write, PROF dir
complete) and the process's peak RSS (``ru_maxrss``, includes the calibration run and imports).
``--append`` adds a row to benchmarks/RESULTS.md with the machine and date.
"""
from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import resource
import shutil
import tempfile
import time
from pathlib import Path

from msprof_py.collect import collect
from msprof_py.runtime import workloads

RESULTS = Path(__file__).with_name("RESULTS.md")


def machine() -> str:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
        ram = f"{mem_kb / 1024 / 1024:.1f} GiB RAM"
    except OSError:
        ram = "? RAM"
    return f"{os.cpu_count()} CPUs ({cpu}), {ram}, Python {platform.python_version()}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=1_000_000)
    ap.add_argument("--workload", default="single_op")
    ap.add_argument("--devices", type=int, default=1)
    ap.add_argument("--append", action="store_true", help="append the result to benchmarks/RESULTS.md")
    args = ap.parse_args()

    out = Path(tempfile.mkdtemp(prefix="bench_collect_"))
    try:
        wl = workloads.get_workload(args.workload)
        calib = collect(wl, output=out / "calib", devices=args.devices, iterations=1, fixed_clock=True)
        per_iter = max(1, len(calib.sim.truth))
        iterations = math.ceil(args.tasks / per_iter)
        t0 = time.perf_counter()
        res = collect(wl, output=out / "run", devices=args.devices, iterations=iterations, fixed_clock=True)
        wall = time.perf_counter() - t0
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        tasks = len(res.sim.truth)
        line = (f"| {datetime.date.today()} | collect {args.workload} x{iterations} it, {args.devices} dev | "
                f"{tasks:,} device tasks | {wall:.1f} s | {peak_mb:.0f} MB | {res.total_bytes / 1e6:.0f} MB raw | "
                f"{machine()} |")
        print(line)
        if args.append:
            if not RESULTS.exists():
                RESULTS.write_text("# Benchmark results\n\n| date | run | size | wall | peak RSS | output | machine |\n"
                                   "|---|---|---|---|---|---|---|\n")
            with RESULTS.open("a") as f:
                f.write(line + "\n")
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()

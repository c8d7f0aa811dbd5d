"""Benchmark: AOE operator + subgraph tuning of resnet50 on the simulator, and reading results back.

    PYTHONPATH=. python benchmarks/bench_aoe.py [--workload resnet50] [--append]

Times ``tune(job_type=1)`` then ``tune(job_type=2)`` in a fresh TUNE_BANK_PATH (wall time,
simulations run, keys tuned) and ``read_results`` over the two files written; ``--append``
adds a row to benchmarks/RESULTS.md with the machine and date.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import tempfile
import time
from pathlib import Path

from msprof_py.aoe.reader import read_results
from msprof_py.aoe.tuner import tune

RESULTS = Path(__file__).with_name("RESULTS.md")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="resnet50")
    ap.add_argument("--append", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bank = Path(tmp) / "bank"
        bank.mkdir()
        env = {"HOME": tmp, "TUNE_BANK_PATH": str(bank), "TE_PARALLEL_COMPILER": "1"}
        rows = []
        for job in (1, 2):
            t0 = time.perf_counter()
            out = tune(args.workload, job_type=job, output=tmp, env=env)
            dt = time.perf_counter() - t0
            rows.append((job, dt, out.sim_runs, out.summary.total_num, out.baseline_ms, out.result_ms))
        t0 = time.perf_counter()
        res = read_results([tmp])
        read_s = time.perf_counter() - t0
    lines = [f"job_type {j}: {dt:.2f} s, {runs} simulations, {n} keys, model {b:.3f} -> {r:.3f} ms"
             for j, dt, runs, n, b, r in rows]
    lines.append(f"aoe-report read: {read_s * 1000:.1f} ms for {len(res.operators)} operator rows")
    print("\n".join(lines))
    if args.append:
        cpu = platform.processor() or platform.machine()
        with RESULTS.open("a", encoding="utf-8") as f:
            f.write(f"\n### bench_aoe.py ({args.workload}) - {datetime.date.today()} - {cpu}, {os.cpu_count()} CPUs, "
                    f"Python {platform.python_version()}\n\n" + "\n".join(f"- {x}" for x in lines) + "\n")


if __name__ == "__main__":
    main()

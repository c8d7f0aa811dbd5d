"""Benchmark: export timeline + all summaries for a 1,000,000-task collection.

The session tables are built synthetically (tests/export/synth.py: the parser's table schema,
single-op style so every task has its own Node launch, Runtime call and HostToDevice flow), so
the numbers measure the exporters only, not parsing.  Target (issue 4, acceptance 5): <= 10 s
wall and <= 2 GB peak RSS on the 2-core machine.

    PYTHONPATH=. python benchmarks/bench_export.py [--tasks 1000000] [--db]

Prints one Markdown row for benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import platform
import resource
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.export.synth import make_session  # noqa: E402

import msprof_py.export  # noqa: E402,F401
from msprof_py.export.base import REGISTRY, ExportContext, Naming  # noqa: E402


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=1_000_000)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--db", action="store_true", help="also time the unified DB")
    ap.add_argument("--workload", default=None,
                    help="export a real collection instead: collect this workload (resnet50, single_op, ...) "
                         "with --iterations on the simulated NPU, parse it (not timed), then time the export")
    ap.add_argument("--static", action="store_true",
                    help="graph mode: ops launched once and replayed every iteration (few API rows), "
                         "instead of single-op mode (every task launched)")
    ap.add_argument("--out-dir", default=None,
                    help="where to write (default: a temporary dir on the working disk); e.g. /dev/shm "
                         "to separate formatting cost from disk throughput")
    ap.add_argument("--only-msprof", action="store_true",
                    help="timeline = msprof_*.json only (not the per-component timeline files)")
    a = ap.parse_args()
    t0 = time.perf_counter()
    if a.workload:
        from msprof_py.collect import collect
        from msprof_py.parse.session import load

        res = collect(a.workload, output=tempfile.mkdtemp(dir=a.out_dir), iterations=a.iterations, seed=1)
        session = load(res.prof_dir)
        mode = f"collected {a.workload} x{a.iterations} it"
    else:
        session = make_session(ops=a.tasks // a.iterations, iterations=a.iterations, devices=1, comm=True,
                               static=a.static)
        mode = f"synthetic, {'graph' if a.static else 'single-op'} mode"
    t_build, rss_build = time.perf_counter() - t0, rss_mb()
    kinds = {"timeline", "summary"} | ({"db"} if a.db else set())
    with tempfile.TemporaryDirectory(dir=a.out_dir) as tmp:
        out = Path(tmp)
        ctx = ExportContext(scratch=out / ".scratch")  # as the runner does: shared layers render once
        ctx.scratch.mkdir()
        times: dict[str, float] = {}
        t1, c1 = time.perf_counter(), time.process_time()
        for key, ex in REGISTRY.items():
            if ex.kind not in kinds or (a.only_msprof and ex.kind == "timeline" and ex.name != "msprof"):
                continue
            ts = time.perf_counter()
            ex.write(session, out, Naming(0 if ex.per_device else None, timestamp="20251121124000"), ctx)
            # (one device: the synthetic session and a 1-device collection have only device 0)
            times[key] = time.perf_counter() - ts
        wall, cpu = time.perf_counter() - t1, time.process_time() - c1
        outs = [p for p in out.iterdir() if p.is_file()]
        size = sum(p.stat().st_size for p in outs)
        files = len(outs)
    peak = rss_mb()
    n_api, n_tasks = len(session.api), len(session.tasks)
    for k, v in sorted(times.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  {k:32s} {v:6.2f} s", file=sys.stderr)
    if ctx.warnings:
        print("warnings:", *ctx.warnings, sep="\n  ", file=sys.stderr)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = __import__("os").getloadavg()[0]
    print(f"| {when} | {platform.node()} ({__import__('os').cpu_count()} cores, load {load:.1f}, Python {platform.python_version()}) "
          f"| {n_tasks:,} tasks ({mode}), {n_api:,} API rows | {'+'.join(sorted(kinds))}{' (msprof_*.json only)' if a.only_msprof else ''} | {files} files, {size / 2**20:,.0f} MB "
          f"| {wall:.2f} s (CPU {cpu:.2f} s) to {'tmpfs' if a.out_dir == '/dev/shm' else 'disk'} | {peak:,.0f} MB (session alone {rss_build:,.0f} MB, built in {t_build:.1f} s) |")


if __name__ == "__main__":
    main()
